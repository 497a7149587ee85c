// cpu_features against the kernel's own report (/proc/cpuinfo's flags line, x86 Linux), and the
// same answer from a static initializer as from main (the reason detection lives in one place).
#include "core/cpu_features.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace onnxllm {
namespace {

// Runs before main, as the sampler's choice of its AVX-512 loops does.
const CpuFeatures kAtStaticInit = cpu_features();

bool same(const CpuFeatures& a, const CpuFeatures& b) {
  return a.avx2 == b.avx2 && a.avx512 == b.avx512 && a.avx512_vnni == b.avx512_vnni && a.avx_vnni == b.avx_vnni &&
         a.avx512_bf16 == b.avx512_bf16 && a.avx512_fp16 == b.avx512_fp16 && a.neon == b.neon &&
         a.neon_dotprod == b.neon_dotprod;
}

TEST(CpuFeatures, StaticInitializerSeesTheSameAsMain) { EXPECT_TRUE(same(kAtStaticInit, cpu_features())); }

TEST(CpuFeatures, MatchesProcCpuinfo) {
#if (defined(__x86_64__) || defined(__i386__)) && defined(__linux__)
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  std::set<std::string> flags;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      std::istringstream words(line.substr(line.find(':') + 1));
      for (std::string w; words >> w;) flags.insert(w);
      break;
    }
  if (flags.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo";
  auto has = [&](const char* f) { return flags.count(f) > 0; };
  const CpuFeatures& f = cpu_features();
  const bool avx2 = has("avx2") && has("fma");
  // The AVX2 kernels use F16C too, which cpu_features does not ask for (see cpu_features.cc).
  EXPECT_TRUE(!avx2 || has("f16c"));
  const bool avx512 = avx2 && has("avx512f") && has("avx512bw") && has("avx512vl") && has("avx512dq");
  EXPECT_EQ(f.avx2, avx2);
  EXPECT_EQ(f.avx512, avx512);
  EXPECT_EQ(f.avx512_vnni, avx512 && has("avx512_vnni"));
  EXPECT_EQ(f.avx512_bf16, avx512 && has("avx512_bf16"));
  EXPECT_EQ(f.avx_vnni, avx2 && has("avx_vnni"));
  EXPECT_EQ(f.avx512_fp16, avx512 && has("avx512_fp16"));
  EXPECT_FALSE(f.neon);
  EXPECT_FALSE(f.neon_dotprod);
#else
  GTEST_SKIP() << "compares with x86 Linux's /proc/cpuinfo only";
#endif
}

}  // namespace
}  // namespace onnxllm

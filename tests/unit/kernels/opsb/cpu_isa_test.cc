// cpu_isa: every level's name parses back to it, an unknown name is an error naming the accepted
// ones, and the levels this build's architecture compiles are the ones reported available.
#include "ep/cpu/isa/cpu_isa.h"

#include <gtest/gtest.h>

#include "tests/util/test_util.h"

namespace onnxllm {
namespace {

constexpr Isa kAll[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvx512, Isa::kNeon};

TEST(CpuIsa, NamesRoundTrip) {
  for (Isa isa : kAll) EXPECT_EQ(parse_isa(isa_name(isa)), isa) << isa_name(isa);
  EXPECT_EQ(parse_isa("neon"), Isa::kNeon);
}

TEST(CpuIsa, UnknownNameIsAnError) {
  test::expect_error([] { parse_isa("sve"); }, ErrorCode::kInvalidArgument, "scalar, avx2, avx512 or neon");
  test::expect_error([] { parse_isa("NEON"); }, ErrorCode::kInvalidArgument, "unknown ISA 'NEON'");
}

TEST(CpuIsa, AvailableLevelsMatchTheArchitecture) {
  EXPECT_TRUE(isa_available(Isa::kScalar));
  EXPECT_TRUE(isa_available(best_isa()));
#if defined(__aarch64__)
  // ASIMD is baseline on aarch64: NEON is always there and always the best level.
  EXPECT_TRUE(cpu_features().neon);
  EXPECT_TRUE(isa_available(Isa::kNeon));
  EXPECT_EQ(best_isa(), Isa::kNeon);
  EXPECT_FALSE(isa_available(Isa::kAvx2));
  EXPECT_FALSE(isa_available(Isa::kAvx512));
#else
  EXPECT_FALSE(cpu_features().neon);
  EXPECT_FALSE(cpu_features().neon_dotprod);
  EXPECT_FALSE(isa_available(Isa::kNeon));
#endif
}

}  // namespace
}  // namespace onnxllm

// The C++ API (ort_genai.h, header-only RAII over libonnxllm.so): stories260K built with the CLI
// (`onnxllm build -p fp32`) generates exactly expected_greedy_200.txt greedily from BOS, decoded
// both at once and through a tokenizer stream; errors become std::runtime_error.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "api/include/ort_genai.h"
#include "tests/util/test_util.h"

namespace {

std::string read_text(const std::filesystem::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// The stories model folder, built once per test binary.
std::filesystem::path stories(const std::filesystem::path& shared) {
  static const std::filesystem::path dir = [&] {
    const auto out = onnxllm::test::temp_dir(std::string("cpp_api_stories_") + ::testing::UnitTest::GetInstance()->current_test_info()->name()) / "model";
    const std::string cmd = std::string(ONNXLLM_CLI) + " build -i " + (shared / "models/stories260K-hf").string() +
                            " -o " + out.string() + " -p fp32 > /dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return out;
  }();
  return dir;
}

TEST(CppApi, StoriesGreedyText) {
  ONNXLLM_REQUIRE_SHARED(shared);
  OgaHandle handle;
  auto model = OgaModel::Create(stories(shared).c_str());
  EXPECT_STREQ(model->GetType(), "llama");
  EXPECT_STREQ(model->GetDeviceType(), "CPU");
  auto tokenizer = OgaTokenizer::Create(*model);
  EXPECT_EQ(tokenizer->GetBosTokenId(), 1);
  auto stream = OgaTokenizerStream::Create(*tokenizer);
  auto params = OgaGeneratorParams::Create(*model);
  params->SetSearchOption("max_length", 201);
  params->SetSearchOptionBool("do_sample", false);
  EXPECT_EQ(params->GetSearchNumber("max_length"), 201);
  auto generator = OgaGenerator::Create(*model, *params);
  const int32_t bos = 1;
  generator->AppendTokens(&bos, 1);
  std::string streamed;
  while (!generator->IsDone()) {
    generator->GenerateNextToken();
    streamed += stream->Decode(generator->GetNextTokens()[0]);
  }
  ASSERT_EQ(generator->GetSequenceCount(0), 201u);
  EXPECT_EQ(generator->TokenCount(), 201u);
  const auto sequence = generator->GetSequence(0);
  const std::string expected = read_text(shared / "models/stories260K-hf/expected_greedy_200.txt");
  EXPECT_EQ(std::string(tokenizer->Decode(sequence.subspan(1))), expected);
  EXPECT_EQ(streamed, expected);
}

TEST(CppApi, EncodeWithSequencesAndRewind) {
  ONNXLLM_REQUIRE_SHARED(shared);
  auto model = OgaModel::Create(stories(shared).c_str());
  auto tokenizer = OgaTokenizer::Create(*model);
  auto sequences = OgaSequences::Create();
  tokenizer->Encode("Once upon a time", *sequences);
  ASSERT_EQ(sequences->Count(), 1u);
  EXPECT_EQ(sequences->Get(0)[0], 1);  // BOS (add_bos_token)
  auto params = OgaGeneratorParams::Create(*model);
  params->SetSearchOption("max_length", 32);
  auto generator = OgaGenerator::Create(*model, *params);
  generator->AppendTokenSequences(*sequences);
  while (!generator->IsDone()) generator->GenerateNextToken();
  const std::vector<int32_t> first(generator->GetSequence(0).begin(), generator->GetSequence(0).end());
  generator->RewindTo(sequences->SequenceCount(0));
  while (!generator->IsDone()) generator->GenerateNextToken();
  EXPECT_EQ(std::vector<int32_t>(generator->GetSequence(0).begin(), generator->GetSequence(0).end()), first);
  auto logits = generator->GetLogits();
  EXPECT_EQ(logits->Shape(), (std::vector<int64_t>{1, 1, 512}));
  EXPECT_EQ(logits->Type(), OgaElementType_float32);
}

TEST(CppApi, ErrorsThrowRuntimeError) {
  ONNXLLM_REQUIRE_SHARED(shared);
  try {
    OgaModel::Create("/no/such/model");
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("genai_config.json"), std::string::npos) << e.what();
  }
  auto config = OgaConfig::Create(stories(shared).c_str());
  EXPECT_THROW(config->AppendProvider("cuda"), std::runtime_error);
  auto model = OgaModel::Create(*config);
  auto params = OgaGeneratorParams::Create(*model);
  EXPECT_THROW(params->SetSearchOption("no_such_option", 1), std::runtime_error);
  EXPECT_THROW(OgaImages::Load(std::vector<const char*>{"a.png"}), std::runtime_error);
  EXPECT_THROW(Oga::SetLogBool("no_such_option", true), std::runtime_error);
}

}  // namespace

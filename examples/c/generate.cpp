// Streams a model's continuation of a prompt, using onnxllm's C++ API (ort_genai.h).
//   generate_cpp MODEL_DIR [PROMPT] [MAX_LENGTH]
// Build: c++ -std=c++20 generate.cpp $(pkg-config --cflags --libs onnxllm) -o generate_cpp
#include <cstdlib>
#include <exception>
#include <iostream>

#include "ort_genai.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: " << argv[0] << " MODEL_DIR [PROMPT] [MAX_LENGTH]\n";
    return 2;
  }
  OgaHandle handle;  // shuts the library down at exit
  try {
    const char* prompt = argc > 2 ? argv[2] : "Once upon a time";
    auto model = OgaModel::Create(argv[1]);
    auto tokenizer = OgaTokenizer::Create(*model);
    auto stream = OgaTokenizerStream::Create(*tokenizer);
    auto sequences = OgaSequences::Create();
    tokenizer->Encode(prompt, *sequences);

    auto params = OgaGeneratorParams::Create(*model);
    params->SetSearchOption("max_length", argc > 3 ? std::atof(argv[3]) : 64);
    auto generator = OgaGenerator::Create(*model, *params);
    generator->AppendTokenSequences(*sequences);

    std::cout << prompt;
    while (!generator->IsDone()) {
      generator->GenerateNextToken();
      std::cout << stream->Decode(generator->GetNextTokens()[0]) << std::flush;
    }
    std::cout << "\n";
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

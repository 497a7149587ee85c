// Encoding time of one text file with one tokenizer, one thread: prints "milliseconds ids".
// usage: tokenizer_bench TOKENIZER_PATH TEXT_FILE   (used by bench_encode.sh; not a test)
#include <chrono>
#include <iostream>

#include "core/error.h"
#include "core/mapped_file.h"
#include "genai/tokenizer/tokenizer.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: tokenizer_bench TOKENIZER_PATH TEXT_FILE\n";
    return 2;
  }
  try {
    const auto tok = onnxllm::Tokenizer::load(argv[1]);
    const std::string text = onnxllm::read_file(argv[2]);
    tok->encode(text.substr(0, 10000), false);  // warm-up, as for the reference
    const auto start = std::chrono::steady_clock::now();
    const auto ids = tok->encode(text, false);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::cout << ms << " " << ids.size() << "\n";
  } catch (const onnxllm::Error& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

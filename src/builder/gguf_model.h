// What a GGUF file's metadata means to the builder: the Hugging Face config.json it describes (llama.cpp's "llama",
// "qwen2" and "qwen3" architectures), and the tokenizer files its vocabulary makes (tokenizer.ggml.model "llama": a
// SentencePiece BPE tokenizer.model; "gpt2": a byte-level BPE tokenizer.json), with tokenizer_config.json carrying the
// special tokens, add_bos/add_eos and tokenizer.chat_template.
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "builder/gguf_file.h"

namespace onnxllm {

// config.json for parse_hf_config. Throws kInvalidModel naming a missing or bad metadata key and kUnsupported for
// architectures and settings the builder does not map.
nlohmann::json gguf_config_json(const GgufFile& file);

// Whether llama.cpp's converter permuted the q/k rows of this architecture for its interleaved rotary ("llama",
// "granite", "smollm3"; the NeoX-rotary architectures keep Hugging Face's order).
bool gguf_permutes_qk(const GgufFile& file);

// Whether the file's RMSNorm weights already hold the 1 that Hugging Face's Gemma adds at run time
// (llama.cpp's converter writes the Gemmas' and Nemotron's norm weights as 1 + w).
bool gguf_norms_hold_offset(const GgufFile& file);

// Whether the architecture has Gemma 2's norms after attention and around the MLP (OLMo 2: only the
// post-attention and post-feedforward ones).
bool gguf_post_norms(const GgufFile& file);

// Writes the tokenizer files into `dir` and returns their names. Throws kUnsupported for a tokenizer.ggml.model it
// cannot express and kInvalidModel for inconsistent vocabulary arrays.
std::vector<std::string> write_gguf_tokenizer(const GgufFile& file, const std::filesystem::path& dir);

}  // namespace onnxllm

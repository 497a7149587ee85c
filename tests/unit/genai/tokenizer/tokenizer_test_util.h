// Helpers for tokenizer tests: expectation files, the oracles (Hugging Face tokenizers via node,
// sentencepiece via python3), and generated / fetched tokenizer folders.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/mapped_file.h"
#include "genai/tokenizer/tokenizer.h"
#include "genai/tokenizer/tokenizer_stream.h"

namespace onnxllm::test {

inline nlohmann::json read_json(const std::filesystem::path& path) { return nlohmann::json::parse(read_file(path)); }

inline std::filesystem::path oracle_dir() { return std::filesystem::path(ONNXLLM_BUILD_DIR) / "oracle"; }

// Why the Hugging Face oracle cannot run, or empty when it can.
inline std::string hf_oracle_missing() {
  if (!std::filesystem::exists(oracle_dir() / "node_modules/tokenizers/package.json") ||
      !std::filesystem::exists(oracle_dir() / "hf_tokenize.js"))
    return "npm tokenizers is not installed in " + oracle_dir().string() + " (run `make oracle`)";
  if (std::system("command -v node >/dev/null 2>&1") != 0) return "node is not installed";
  return {};
}

inline std::string spm_oracle_missing() {
  if (!std::filesystem::exists(oracle_dir() / "spm_tokenize.py")) return "spm_tokenize.py is not in " + oracle_dir().string();
  if (std::system("/usr/bin/python3 -c 'import sentencepiece' >/dev/null 2>&1") != 0)
    return "python3-sentencepiece is not installed";
  return {};
}

// Runs the oracle for `tokenizer_file` on `strings`; returns its expectation file (cached).
inline std::filesystem::path run_oracle(const std::filesystem::path& tokenizer_file, const std::filesystem::path& strings) {
  const auto out = tokenizer_file.parent_path() / ("expected." + strings.stem().string() + ".json");
  if (std::filesystem::exists(out) && std::filesystem::last_write_time(out) >= std::filesystem::last_write_time(tokenizer_file) &&
      std::filesystem::last_write_time(out) >= std::filesystem::last_write_time(strings))
    return out;
  const bool spm = tokenizer_file.extension() == ".model";
  const std::string cmd = spm ? "/usr/bin/python3 '" + (oracle_dir() / "spm_tokenize.py").string() + "'"
                              : "node '" + (oracle_dir() / "hf_tokenize.js").string() + "'";
  const std::string full = cmd + " '" + tokenizer_file.string() + "' '" + strings.string() + "' '" + out.string() + "' >/dev/null 2>&1";
  if (std::system(full.c_str()) != 0) std::filesystem::remove(out);
  return out;
}

// Checks encode / decode / streaming for every case of an expectation file. When
// `with_special` is set, also checks encode(text, true) against "ids_with_special".
inline void check_cases(const Tokenizer& tok, const nlohmann::json& expected, const std::string& name, bool with_special) {
  int failures = 0;
  for (const auto& c : expected.at("cases")) {
    const std::string text = c.at("text").get<std::string>();
    const auto want = c.at("ids").get<std::vector<int32_t>>();
    const auto ids = tok.encode(text, false);
    if (ids != want) {
      size_t i = 0;
      while (i < ids.size() && i < want.size() && ids[i] == want[i]) ++i;
      const auto token = [&](const std::vector<int32_t>& v) {
        return i < v.size() ? std::to_string(v[i]) + " '" + tok.id_to_token(v[i]).value_or("?") + "'" : std::string("(end)");
      };
      ADD_FAILURE() << name << ": ids of " << nlohmann::json(text).dump() << " differ first at index " << i << ": got "
                    << token(ids) << ", expected " << token(want);
    }
    EXPECT_EQ(tok.decode(want, false), c.at("decoded").get<std::string>()) << name << ": decode of " << nlohmann::json(text).dump();
    if (with_special && c.contains("ids_with_special")) {
      EXPECT_EQ(tok.encode(text, true), c.at("ids_with_special").get<std::vector<int32_t>>())
          << name << ": ids with special tokens of " << nlohmann::json(text).dump();
    }
    // Streaming, one id at a time, must reproduce the full decode exactly.
    for (bool skip : {false, true}) {
      const auto all = with_special && c.contains("ids_with_special") ? c.at("ids_with_special").get<std::vector<int32_t>>() : want;
      auto stream = tok.create_stream(skip);
      std::string streamed;
      for (int32_t id : all) streamed += stream->step(id);
      streamed += stream->flush();
      EXPECT_EQ(streamed, tok.decode(all, skip)) << name << ": streamed decode (skip_special=" << skip << ") of "
                                                 << nlohmann::json(text).dump();
    }
    if (::testing::Test::HasFailure() && ++failures > 5) return;  // enough detail
  }
}

}  // namespace onnxllm::test

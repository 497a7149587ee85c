// Differential testing against ONNX Runtime (npm onnxruntime-node, installed by
// scripts/setup_oracle.sh into build/oracle). Tests call OrtOracle::find() and GTEST_SKIP with
// its message when node or the package is missing.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/tensor.h"

namespace onnxllm::test {

class OrtOracle {
 public:
  // The oracle, or nullopt with `why` set.
  static std::optional<OrtOracle> find(std::string* why) {
    const std::filesystem::path dir = std::filesystem::path(ONNXLLM_BUILD_DIR) / "oracle";
    if (!std::filesystem::exists(dir / "node_modules/onnxruntime-node/package.json")) {
      *why = "onnxruntime-node is not installed in " + dir.string() + " (run `make oracle`)";
      return std::nullopt;
    }
    if (std::system("command -v node >/dev/null 2>&1") != 0) {
      *why = "node is not installed";
      return std::nullopt;
    }
    return OrtOracle(dir);
  }

  // Runs `model` on ORT with the given inputs; returns outputs in the model's output order.
  // Throws onnxllm::Error with ORT's message when ORT rejects the model or inputs.
  std::vector<std::pair<std::string, Tensor>> run(const std::filesystem::path& model,
                                                  const std::vector<std::pair<std::string, TensorView>>& inputs,
                                                  int threads = 1) const {
    const auto work = model.parent_path();
    const auto in_path = work / (model.stem().string() + ".ort_in.json");
    const auto out_path = work / (model.stem().string() + ".ort_out.json");
    nlohmann::json in;
    in["tensors"] = nlohmann::json::array();
    for (const auto& [name, t] : inputs) {
      in["tensors"].push_back({{"name", name},
                               {"dtype", ort_dtype(t.dtype())},
                               {"dims", std::vector<int64_t>(t.shape().begin(), t.shape().end())},
                               {"data", base64(static_cast<const uint8_t*>(t.raw()), t.bytes())}});
    }
    std::ofstream(in_path) << in.dump();
    const std::string script = std::string(ONNXLLM_SOURCE_DIR) + "/tests/oracle/ort_run.js";
    const std::string cmd = "node '" + script + "' '" + dir_.string() + "' '" + model.string() + "' '" +
                            in_path.string() + "' '" + out_path.string() + "' --threads " + std::to_string(threads) +
                            " >/dev/null 2>&1";
    std::system(cmd.c_str());
    std::ifstream f(out_path);
    ONNXLLM_CHECK(f.good(), kRuntime, "the ORT oracle produced no output for ", model.string());
    const nlohmann::json out = nlohmann::json::parse(f);
    if (out.contains("error")) throw_error(ErrorCode::kRuntime, "ORT: ", out["error"].get<std::string>());
    std::vector<std::pair<std::string, Tensor>> result;
    for (const auto& t : out["tensors"]) {
      Shape shape;
      for (int64_t d : t["dims"]) shape.push_back(d);
      Tensor tensor(dtype_from_ort(t["dtype"].get<std::string>()), shape);
      const std::string bytes = unbase64(t["data"].get<std::string>());
      ONNXLLM_CHECK(bytes.size() == tensor.bytes(), kRuntime, "ORT output size mismatch");
      std::copy(bytes.begin(), bytes.end(), static_cast<char*>(tensor.view().raw()));
      result.emplace_back(t["name"].get<std::string>(), std::move(tensor));
    }
    return result;
  }

 private:
  explicit OrtOracle(std::filesystem::path dir) : dir_(std::move(dir)) {}

  static std::string ort_dtype(DType t) {
    return t == DType::kFloat32 ? "float32" : std::string(dtype_name(t));
  }
  static DType dtype_from_ort(const std::string& s) { return dtype_from_name(s); }

  static std::string base64(const uint8_t* p, size_t n) {
    static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    for (size_t i = 0; i < n; i += 3) {
      const uint32_t v = (uint32_t(p[i]) << 16) | (i + 1 < n ? uint32_t(p[i + 1]) << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
      out += k[(v >> 18) & 63];
      out += k[(v >> 12) & 63];
      out += i + 1 < n ? k[(v >> 6) & 63] : '=';
      out += i + 2 < n ? k[v & 63] : '=';
    }
    return out;
  }
  static std::string unbase64(const std::string& s) {
    auto val = [](char c) -> int {
      if (c >= 'A' && c <= 'Z') return c - 'A';
      if (c >= 'a' && c <= 'z') return c - 'a' + 26;
      if (c >= '0' && c <= '9') return c - '0' + 52;
      return c == '+' ? 62 : c == '/' ? 63 : -1;
    };
    std::string out;
    uint32_t acc = 0;
    int bits = 0;
    for (char c : s) {
      const int v = val(c);
      if (v < 0) continue;
      acc = (acc << 6) | static_cast<uint32_t>(v);
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        out += static_cast<char>((acc >> bits) & 0xFF);
      }
    }
    return out;
  }

  std::filesystem::path dir_;
};

}  // namespace onnxllm::test

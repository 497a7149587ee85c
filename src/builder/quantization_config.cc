#include "builder/quantization_config.h"

#include "core/error.h"
#include "core/json_file.h"

namespace onnxllm {
namespace {

using json = nlohmann::json;

std::string lower(std::string s) {
  for (char &ch : s) ch = static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch);
  return s;
}

std::string string_field(const json &q, const char *key, const std::string &fallback, const std::string &source) {
  if (!q.contains(key) || q[key].is_null()) return fallback;
  ONNXLLM_CHECK(q[key].is_string(), kInvalidModel, source, ": quantization_config.", key, " should be a string, got ",
                json_excerpt(q[key]));
  return q[key].get<std::string>();
}

bool bool_field(const json &q, const char *key, bool fallback, const std::string &source) {
  if (!q.contains(key) || q[key].is_null()) return fallback;
  ONNXLLM_CHECK(q[key].is_boolean(), kInvalidModel, source, ": quantization_config.", key,
                " should be true or false, got ", json_excerpt(q[key]));
  return q[key].get<bool>();
}

int64_t int_field(const json &q, const char *key, const std::string &source) {
  ONNXLLM_CHECK(q.contains(key), kInvalidModel, source, ": quantization_config has no '", key, "'");
  ONNXLLM_CHECK(q[key].is_number_integer(), kInvalidModel, source, ": quantization_config.", key,
                " should be an integer, got ", json_excerpt(q[key]));
  return q[key].get<int64_t>();
}

}  // namespace

const char *QuantizationConfig::method_name() const {
  switch (method) {
    case QuantMethod::kGptq:
      return "gptq";
    case QuantMethod::kAwq:
      return "awq";
    case QuantMethod::kNone:
      break;
  }
  return "none";
}

QuantizationConfig parse_quantization_config(const json &q, const std::string &source) {
  QuantizationConfig c;
  if (q.is_null()) return c;
  ONNXLLM_CHECK(q.is_object(), kInvalidModel, source, ": quantization_config should be an object, got ",
                json_excerpt(q));
  const std::string method = lower(string_field(q, "quant_method", "", source));
  ONNXLLM_CHECK(!method.empty(), kInvalidModel, source, ": quantization_config has no 'quant_method'");
  if (method == "mxfp4") {
    c.mxfp4_experts = true;
    return c;
  }
  if (method == "gptq")
    c.method = QuantMethod::kGptq;
  else if (method == "awq")
    c.method = QuantMethod::kAwq;
  else
    throw_error(ErrorCode::kUnsupported, source, ": quantization_config.quant_method '", method,
                "' is not supported (pre-quantized checkpoints: gptq, awq; mxfp4 for gpt-oss)");

  const int64_t bits = int_field(q, "bits", source);
  const bool bits_ok = c.method == QuantMethod::kGptq ? bits == 4 || bits == 8 : bits == 4;
  ONNXLLM_CHECK(bits_ok, kUnsupported, source, ": quantization_config.bits ", bits, " is not supported for ", method,
                c.method == QuantMethod::kGptq ? " (4 or 8)" : " (4)");
  c.bits = static_cast<int>(bits);
  c.group_size = int_field(q, "group_size", source);
  ONNXLLM_CHECK(c.group_size == -1 || (c.group_size > 0 && c.group_size <= (int64_t{1} << 24)), kInvalidModel, source,
                ": quantization_config.group_size should be -1 or positive, got ", c.group_size);

  if (c.method == QuantMethod::kGptq) {
    c.symmetric = bool_field(q, "sym", true, source);
    c.desc_act = bool_field(q, "desc_act", false, source);
    // optimum and AutoGPTQ write no checkpoint_format: their checkpoints are
    // v1.
    const std::string format = lower(string_field(q, "checkpoint_format", "gptq", source));
    ONNXLLM_CHECK(format == "gptq" || format == "gptq_v2", kUnsupported, source,
                  ": quantization_config.checkpoint_format '", format, "' is not supported (gptq, gptq_v2)");
    c.zeros_minus_one = format == "gptq";
  } else {
    const std::string version = lower(string_field(q, "version", "gemm", source));
    ONNXLLM_CHECK(version == "gemm", kUnsupported, source, ": quantization_config.version '", version,
                  "' is not supported for awq (gemm)");
    ONNXLLM_CHECK(bool_field(q, "zero_point", true, source), kUnsupported, source,
                  ": quantization_config.zero_point false is not supported for "
                  "awq (gemm stores zero points)");
    c.symmetric = false;
  }
  if (q.contains("modules_to_not_convert") && !q["modules_to_not_convert"].is_null()) {
    const json &list = q["modules_to_not_convert"];
    ONNXLLM_CHECK(list.is_array(), kInvalidModel, source,
                  ": quantization_config.modules_to_not_convert should be a "
                  "list of names, got ",
                  json_excerpt(list));
    for (const auto &m : list) {
      ONNXLLM_CHECK(m.is_string(), kInvalidModel, source,
                    ": quantization_config.modules_to_not_convert entries "
                    "should be strings, got ",
                    json_excerpt(m));
      c.modules_to_not_convert.push_back(m.get<std::string>());
    }
  }
  return c;
}

}  // namespace onnxllm

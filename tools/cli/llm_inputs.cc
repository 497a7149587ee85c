#include "tools/cli/llm_inputs.h"

#include <algorithm>

#include "core/error.h"

namespace onnxllm::cli {

namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// past_key_values.N.key / .value, or gpt2's past_N.
bool is_past(const std::string& name) {
  if (starts_with(name, "past_key_values.")) return true;
  return starts_with(name, "past_") && name.size() > 5 &&
         name.find_first_not_of("0123456789", 5) == std::string::npos;
}

// Fills an integer tensor of any integer dtype with f(row, column) over its last axis.
template <typename F>
void fill_int(Tensor& t, F f) {
  const int64_t columns = t.shape().rank() == 0 ? 1 : t.shape().dim(-1);
  dispatch_dtype<int64_t, int32_t>(t.dtype(), [&]<typename T>() {
    auto values = t.span<T>();
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = static_cast<T>(f(static_cast<int64_t>(i) / columns, static_cast<int64_t>(i) % columns));
  });
}

}  // namespace

int64_t LlmInputs::dim(const IoInfo& in, size_t i, int64_t dflt) const {
  if (in.dims[i] >= 0) return in.dims[i];
  const std::string& name = i < in.dim_names.size() ? in.dim_names[i] : std::string();
  const auto it = dims_.find(name);
  return it != dims_.end() && !name.empty() ? it->second : dflt;
}

LlmInputs::LlmInputs(const std::vector<IoInfo>& inputs, const std::map<std::string, int64_t>& dims) : dims_(dims) {
  bool has_ids = false, has_llm_input = false;
  for (const IoInfo& in : inputs) {
    if (in.name == "input_ids" && in.dims.size() == 2) {
      has_ids = true;
      batch_ = dim(in, 0, 1);
      sequence_ = dim(in, 1, 1);
    }
    if (in.name == "attention_mask" || in.name == "position_ids") has_llm_input = true;
    if (is_past(in.name) && in.dims.size() >= 2) {
      has_llm_input = true;
      past_ = dim(in, in.dims.size() - 2, 0);
    }
  }
  is_llm_ = has_ids && has_llm_input;
}

std::optional<Tensor> LlmInputs::make(const IoInfo& in) const {
  if (!is_llm_) return std::nullopt;
  const DType dtype = in.dtype == DType::kUndefined ? DType::kInt64 : in.dtype;
  const auto check_int = [&] {
    ONNXLLM_CHECK(dtype == DType::kInt64 || dtype == DType::kInt32, kUnsupported, "run: LLM input '", in.name,
                  "' has dtype ", dtype_name(dtype), " (expected int32 or int64)");
  };
  if (in.name == "attention_mask" && in.dims.size() == 2) {
    check_int();
    Tensor t(dtype, Shape{batch_, past_ + sequence_});
    fill_int(t, [](int64_t, int64_t) { return 1; });
    return t;
  }
  if (in.name == "position_ids" && in.dims.size() == 2) {
    check_int();
    Tensor t(dtype, Shape{batch_, sequence_});
    fill_int(t, [this](int64_t, int64_t column) { return past_ + column; });
    return t;
  }
  if (in.name == "past_sequence_length" || in.name == "total_sequence_length") {
    check_int();
    Shape shape;
    for (size_t i = 0; i < in.dims.size(); ++i) shape.push_back(dim(in, i, 1));
    Tensor t(dtype, shape);
    const int64_t value = in.name == "past_sequence_length" ? past_ : past_ + sequence_;
    fill_int(t, [value](int64_t, int64_t) { return value; });
    return t;
  }
  if (is_past(in.name) && in.dims.size() >= 2) {
    Shape shape;
    for (size_t i = 0; i < in.dims.size(); ++i) {
      const bool batch_axis = i == in.dims.size() - 4;  // [.., B, heads, P, head_size]
      shape.push_back(i == in.dims.size() - 2 ? past_ : batch_axis ? dim(in, i, batch_) : dim(in, i, 1));
    }
    return Tensor(in.dtype == DType::kUndefined ? DType::kFloat32 : in.dtype, shape);  // zeros: an empty cache
  }
  return std::nullopt;
}

}  // namespace onnxllm::cli

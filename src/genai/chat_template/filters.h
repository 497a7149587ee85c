// jinja2's filters (`x | name(args)`) and tests (`x is name(args)`) as transformers' environment
// has them, including its own tojson (json.dumps with ensure_ascii=False, no HTML escaping).
#pragma once

#include <string>
#include <string_view>

#include "genai/chat_template/value.h"

namespace onnxllm::chat_template {

bool has_filter(std::string_view name);
bool has_test(std::string_view name);

// Throws TemplateError for an unknown name, bad arguments, or a value the filter cannot take.
Value apply_filter(const std::string& name, const Value& input, const CallArgs& args, const RenderLimits& limits);
bool apply_test(const std::string& name, const Value& input, const CallArgs& args, const RenderLimits& limits);

}  // namespace onnxllm::chat_template

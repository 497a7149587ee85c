// Results, strings, string arrays, sequences, logging and the global functions of the C API.
#include <cstring>

#include "api/api_log.h"
#include "api/c_api_guard.h"
#include "api/handles.h"

namespace onnxllm::api {

namespace {
// Returned when allocating a result fails; never freed.
ResultData g_out_of_memory{"out of memory"};
}  // namespace

OgaResult* make_result(std::string message) noexcept {
  try {
    return opaque<OgaResult>(new ResultData{std::move(message)});
  } catch (...) {
    return opaque<OgaResult>(&g_out_of_memory);
  }
}

void warn(const std::string& message) noexcept {
  try {
    ApiLog::instance().write("warning", message);
  } catch (...) {
  }
}

void not_supported(const char* function, const char* what) {
  throw_error(ErrorCode::kUnsupported, function, ": not supported by onnxllm yet: ", what);
}

const char* new_c_string(std::string_view s) {
  char* p = new char[s.size() + 1];
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  return p;
}

DType to_dtype(OgaElementType type) {
  switch (type) {
    case OgaElementType_complex64:
    case OgaElementType_complex128:
    case OgaElementType_string:
      return DType::kUndefined;
    default:
      return static_cast<DType>(type);
  }
}

size_t element_size(OgaElementType type) {
  switch (type) {
    case OgaElementType_complex64:
      return 8;
    case OgaElementType_complex128:
      return 16;
    default: {
      const DType d = to_dtype(type);
      return dtype_is_known(d) ? dtype_size(d) : 0;
    }
  }
}

std::shared_ptr<TensorData> copy_tensor(const TensorView& view) {
  auto t = std::make_shared<TensorData>();
  t->type = static_cast<OgaElementType>(view.dtype());
  t->shape.assign(view.shape().dims().begin(), view.shape().dims().end());
  t->bytes = view.bytes();
  t->owned.reset(new std::byte[t->bytes > 0 ? t->bytes : 1]);
  if (t->bytes > 0) std::memcpy(t->owned.get(), view.raw(), t->bytes);
  t->data = t->owned.get();
  return t;
}

}  // namespace onnxllm::api

using namespace onnxllm;
using namespace onnxllm::api;

extern "C" {

void OGA_API_CALL OgaShutdown(void) { ApiLog::instance().close(); }

void OGA_API_CALL OgaSetTelemetryEnabled(bool) {}  // nothing is ever sent

const char* OGA_API_CALL OgaResultGetError(const OgaResult* result) {
  return result == nullptr ? nullptr : handle<ResultData>(result)->message.c_str();
}

void OGA_API_CALL OgaDestroyResult(OgaResult* result) {
  ResultData* r = handle<ResultData>(result);
  if (r != &g_out_of_memory) delete r;
}

void OGA_API_CALL OgaDestroyString(const char* str) { delete[] str; }

OgaResult* OGA_API_CALL OgaSetLogBool(const char* name, bool value) {
  return guard("OgaSetLogBool", [&] { ApiLog::instance().set_bool(require_string(name, "OgaSetLogBool", "name"), value); });
}

OgaResult* OGA_API_CALL OgaSetLogString(const char* name, const char* value) {
  return guard("OgaSetLogString", [&] {
    ApiLog::instance().set_string(require_string(name, "OgaSetLogString", "name"),
                                  require_string(value, "OgaSetLogString", "value"));
  });
}

OgaResult* OGA_API_CALL OgaSetLogCallback(void (*callback)(const char* string, size_t length)) {
  return guard("OgaSetLogCallback", [&] { ApiLog::instance().set_callback(callback); });
}

const char* OGA_API_CALL OgaGetVersion(void) { return ONNXLLM_VERSION; }

OgaResult* OGA_API_CALL OgaSetCurrentGpuDeviceId(int) {
  return guard("OgaSetCurrentGpuDeviceId",
               [] { not_supported("OgaSetCurrentGpuDeviceId", "GPU devices (onnxllm runs on the CPU)"); });
}

OgaResult* OGA_API_CALL OgaGetCurrentGpuDeviceId(int*) {
  return guard("OgaGetCurrentGpuDeviceId",
               [] { not_supported("OgaGetCurrentGpuDeviceId", "GPU devices (onnxllm runs on the CPU)"); });
}

void OGA_API_CALL OgaRegisterExecutionProviderLibrary(const char* registration_name, const char* library_path) {
  warn(std::string("OgaRegisterExecutionProviderLibrary: onnxllm loads no provider libraries; '") +
       (registration_name ? registration_name : "(null)") + "' from '" + (library_path ? library_path : "(null)") +
       "' was not registered (built-in providers: cpu)");
}

void OGA_API_CALL OgaUnregisterExecutionProviderLibrary(const char* registration_name) {
  warn(std::string("OgaUnregisterExecutionProviderLibrary: '") + (registration_name ? registration_name : "(null)") +
       "' was never registered (onnxllm loads no provider libraries)");
}

// ---- String arrays ----

OgaResult* OGA_API_CALL OgaCreateStringArray(OgaStringArray** out) {
  return guard("OgaCreateStringArray", [&] {
    require_out(out, "OgaCreateStringArray", "out");
    *out = opaque<OgaStringArray>(new StringArrayData);
  });
}

OgaResult* OGA_API_CALL OgaCreateStringArrayFromStrings(const char* const* strs, size_t count, OgaStringArray** out) {
  return guard("OgaCreateStringArrayFromStrings", [&] {
    constexpr const char* kFn = "OgaCreateStringArrayFromStrings";
    require_out(out, kFn, "out");
    if (count > 0) require(strs, kFn, "strs");
    auto a = std::make_unique<StringArrayData>();
    for (size_t i = 0; i < count; ++i) {
      if (strs[i] == nullptr) throw_error(ErrorCode::kInvalidArgument, kFn, ": strs[", i, "] is NULL");
      a->strings.emplace_back(strs[i]);
    }
    *out = opaque<OgaStringArray>(a.release());
  });
}

void OGA_API_CALL OgaDestroyStringArray(OgaStringArray* string_array) { delete handle<StringArrayData>(string_array); }

OgaResult* OGA_API_CALL OgaStringArrayAddString(OgaStringArray* string_array, const char* str) {
  return guard("OgaStringArrayAddString", [&] {
    auto& a = require(handle<StringArrayData>(string_array), "OgaStringArrayAddString", "string_array");
    a.strings.emplace_back(require_string(str, "OgaStringArrayAddString", "str"));
  });
}

OgaResult* OGA_API_CALL OgaStringArrayGetCount(const OgaStringArray* string_array, size_t* out) {
  return guard("OgaStringArrayGetCount", [&] {
    const auto& a = require(handle<StringArrayData>(string_array), "OgaStringArrayGetCount", "string_array");
    require_out(out, "OgaStringArrayGetCount", "out");
    *out = a.strings.size();
  });
}

OgaResult* OGA_API_CALL OgaStringArrayGetString(const OgaStringArray* string_array, size_t index, const char** out) {
  return guard("OgaStringArrayGetString", [&] {
    const auto& a = require(handle<StringArrayData>(string_array), "OgaStringArrayGetString", "string_array");
    require_out(out, "OgaStringArrayGetString", "out");
    if (index >= a.strings.size())
      throw_error(ErrorCode::kInvalidArgument, "OgaStringArrayGetString: index ", index, " is out of range [0, ",
                  a.strings.size(), ")");
    *out = a.strings[index].c_str();
  });
}

// ---- Sequences ----

OgaResult* OGA_API_CALL OgaCreateSequences(OgaSequences** out) {
  return guard("OgaCreateSequences", [&] {
    require_out(out, "OgaCreateSequences", "out");
    *out = opaque<OgaSequences>(new SequencesData);
  });
}

void OGA_API_CALL OgaDestroySequences(OgaSequences* sequences) { delete handle<SequencesData>(sequences); }

size_t OGA_API_CALL OgaSequencesCount(const OgaSequences* sequences) {
  return guard_value("OgaSequencesCount", size_t{0}, [&] {
    return require(handle<SequencesData>(sequences), "OgaSequencesCount", "sequences").rows.size();
  });
}

OgaResult* OGA_API_CALL OgaAppendTokenSequence(const int32_t* token_ptr, size_t token_cnt, OgaSequences* sequences) {
  return guard("OgaAppendTokenSequence", [&] {
    auto& s = require(handle<SequencesData>(sequences), "OgaAppendTokenSequence", "sequences");
    if (token_cnt > 0) require(token_ptr, "OgaAppendTokenSequence", "token_ptr");
    s.rows.emplace_back(token_ptr, token_ptr + token_cnt);
  });
}

OgaResult* OGA_API_CALL OgaAppendTokenToSequence(int32_t token, OgaSequences* sequences, size_t sequence_index) {
  return guard("OgaAppendTokenToSequence", [&] {
    auto& s = require(handle<SequencesData>(sequences), "OgaAppendTokenToSequence", "sequences");
    if (sequence_index > s.rows.size())
      throw_error(ErrorCode::kInvalidArgument, "OgaAppendTokenToSequence: sequence_index ", sequence_index,
                  " is out of range [0, ", s.rows.size(), "] (", s.rows.size(), " starts a new sequence)");
    if (sequence_index == s.rows.size()) s.rows.emplace_back();
    s.rows[sequence_index].push_back(token);
  });
}

namespace {
const std::vector<int32_t>& sequence_row(const OgaSequences* sequences, size_t index, const char* function) {
  const auto& s = require(handle<SequencesData>(sequences), function, "sequences");
  if (index >= s.rows.size())
    throw_error(ErrorCode::kInvalidArgument, function, ": sequence_index ", index, " is out of range [0, ",
                s.rows.size(), ")");
  return s.rows[index];
}
}  // namespace

size_t OGA_API_CALL OgaSequencesGetSequenceCount(const OgaSequences* sequences, size_t sequence_index) {
  return guard_value("OgaSequencesGetSequenceCount", size_t{0}, [&] {
    return sequence_row(sequences, sequence_index, "OgaSequencesGetSequenceCount").size();
  });
}

const int32_t* OGA_API_CALL OgaSequencesGetSequenceData(const OgaSequences* sequences, size_t sequence_index) {
  return guard_value("OgaSequencesGetSequenceData", static_cast<const int32_t*>(nullptr), [&] {
    return sequence_row(sequences, sequence_index, "OgaSequencesGetSequenceData").data();
  });
}

}  // extern "C"

// How every C function keeps exceptions from crossing the C boundary: its body runs inside
// guard(), which turns any exception into an OgaResult holding the message. Argument checks
// throw Error(kInvalidArgument) with messages naming the function and the argument.
#pragma once
#include <exception>
#include <new>
#include <string>

#include "api/include/ort_genai_c.h"
#include "core/error.h"

namespace onnxllm::api {

// A new OgaResult with `message` (a static "out of memory" result when even that fails).
OgaResult* make_result(std::string message) noexcept;
// Logs a warning (for functions that cannot return an OgaResult).
void warn(const std::string& message) noexcept;

template <typename Fn>
OgaResult* guard(const char* function, Fn&& fn) noexcept {
  try {
    fn();
    return nullptr;
  } catch (const std::bad_alloc&) {
    return make_result(std::string(function) + ": out of memory");
  } catch (const std::exception& e) {
    return make_result(error_text(e.what()));
  } catch (...) {
    return make_result(std::string(function) + ": unknown error");
  }
}

// For functions returning a value: fn's result, or `fallback` after logging the error.
template <typename T, typename Fn>
T guard_value(const char* function, T fallback, Fn&& fn) noexcept {
  try {
    return fn();
  } catch (const std::exception& e) {
    warn(std::string(function) + ": " + error_text(e.what()));
  } catch (...) {
    warn(std::string(function) + ": unknown error");
  }
  return fallback;
}

// Throws "<function>: <argument> is NULL" when p is null; returns *p.
template <typename T>
T& require(T* p, const char* function, const char* argument) {
  if (p == nullptr) throw_error(ErrorCode::kInvalidArgument, function, ": ", argument, " is NULL");
  return *p;
}

inline void require_non_null(const void* p, const char* function, const char* argument) {
  if (p == nullptr) throw_error(ErrorCode::kInvalidArgument, function, ": ", argument, " is NULL");
}

inline void require_out(const void* p, const char* function, const char* argument) {
  if (p == nullptr)
    throw_error(ErrorCode::kInvalidArgument, function, ": ", argument, " (the output pointer) is NULL");
}

// The string a caller passed, checked for NULL.
inline const char* require_string(const char* s, const char* function, const char* argument) {
  if (s == nullptr) throw_error(ErrorCode::kInvalidArgument, function, ": ", argument, " is NULL");
  return s;
}

// "not supported by onnxllm yet: <what>", naming the function.
[[noreturn]] void not_supported(const char* function, const char* what);

}  // namespace onnxllm::api

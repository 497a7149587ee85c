// Errors: one exception type with a category and a message naming what is at fault.
// Exceptions inside the library; the C API (later) turns them into status objects.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace onnxllm {

enum class ErrorCode {
  kInvalidArgument,  // a caller passed something wrong (name, dtype, shape, option)
  kInvalidModel,     // a model file or config is malformed
  kNotFound,         // a file, input or output that should exist does not
  kUnsupported,      // valid input that we do not implement (op, dtype, attribute value)
  kOutOfMemory,      // an allocation could not be satisfied
  kRuntime,          // anything else going wrong while running
};

std::string_view error_code_name(ErrorCode code);

// `message` safe to print and to pass on as text: bytes that are not UTF-8, control characters
// other than newline and tab (an escape sequence in a model's node name would otherwise reach the
// user's terminal) and C1 controls as \xNN; everything else as is. Every Error's message is
// this; the API boundaries apply it to other exceptions' messages too.
std::string error_text(std::string_view message);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(error_text(message)), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

// Text from a file or a request, fit to quote in a message: control bytes (newlines and tabs
// included) and bytes that are not UTF-8 as \xNN, and at most `max` bytes of it (then "..."), so
// that a corrupt name neither writes escape sequences to a terminal nor makes a message megabytes
// long.
std::string printable(std::string_view text, size_t max = 200);

template <typename... Args>
[[noreturn]] void throw_error(ErrorCode code, const Args&... args) {
  throw Error(code, str_cat(args...));
}

}  // namespace onnxllm

// Throws onnxllm::Error(code, message parts...) when cond is false.
#define ONNXLLM_CHECK(cond, code, ...)                                   \
  do {                                                                   \
    if (!(cond)) ::onnxllm::throw_error(::onnxllm::ErrorCode::code, __VA_ARGS__); \
  } while (0)

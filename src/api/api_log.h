// The C API's log (OgaSetLogBool / OgaSetLogString / OgaSetLogCallback): named switches, one
// destination (a callback, else a file, else stderr), one process-wide instance. Thread-safe.
#pragma once
#include <cstddef>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace onnxllm::api {

class ApiLog {
 public:
  using Callback = void (*)(const char* text, size_t length);

  static ApiLog& instance();

  // Throws Error(kInvalidArgument) naming an unknown option.
  void set_bool(std::string_view name, bool value);
  // "filename" (empty: back to stderr) and "prefix". Throws for unknown names or unopenable files.
  void set_string(std::string_view name, std::string_view value);
  void set_callback(Callback callback);

  // True when logging is enabled and so is `item` (e.g. "warning", "generate_next_token").
  bool on(std::string_view item) const;
  // Writes "<prefix>[item] message\n" when on(item).
  void write(std::string_view item, std::string_view message);
  // OgaShutdown: closes the log file.
  void close();

 private:
  ApiLog();
  mutable std::mutex mutex_;
  std::map<std::string, bool, std::less<>> items_;
  std::string prefix_ = "onnxllm ";
  std::ofstream file_;
  Callback callback_ = nullptr;
};

}  // namespace onnxllm::api

// Incremental SHA-256 (OpenSSL's libcrypto): LFS files on the hub are named by it (X-Linked-Etag),
// so a downloaded blob is checked against its name.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

namespace onnxllm {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t size);
  // Starts over, as if newly made.
  void reset();
  // Lowercase hex digest; the object starts over afterwards.
  std::string hex_digest();

  static std::string of(const void* data, size_t size);

 private:
  struct Context;
  std::unique_ptr<Context> ctx_;
};

}  // namespace onnxllm

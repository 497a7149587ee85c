#include "hub/sha256.h"

#include <openssl/evp.h>

#include "core/error.h"

namespace onnxllm {

struct Sha256::Context {
  EVP_MD_CTX* md = nullptr;
};

Sha256::Sha256() : ctx_(std::make_unique<Context>()) {
  ctx_->md = EVP_MD_CTX_new();
  ONNXLLM_CHECK(ctx_->md != nullptr && EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) == 1, kOutOfMemory,
                "cannot create a SHA-256 context");
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_->md); }

void Sha256::update(const void* data, size_t size) {
  ONNXLLM_CHECK(EVP_DigestUpdate(ctx_->md, data, size) == 1, kRuntime, "SHA-256 update failed");
}

void Sha256::reset() {
  ONNXLLM_CHECK(EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) == 1, kRuntime, "SHA-256 init failed");
}

std::string Sha256::hex_digest() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  ONNXLLM_CHECK(
      EVP_DigestFinal_ex(ctx_->md, digest, &length) == 1 && EVP_DigestInit_ex(ctx_->md, EVP_sha256(), nullptr) == 1,
      kRuntime, "SHA-256 final failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < length; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 15]);
  }
  return out;
}

std::string Sha256::of(const void* data, size_t size) {
  Sha256 h;
  h.update(data, size);
  return h.hex_digest();
}

}  // namespace onnxllm

// SPDX-License-Identifier: MIT
#include "protocol/sha256.hpp"

#include <cstdlib>
#include <memory>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdexcept>

namespace comb::protocol {
namespace {

// OpenSSL 3's one-shot SHA256() looks the algorithm up in the provider tables and allocates a
// context on every call: about a fifth of an event id's cost for a 600-byte event. The
// algorithm is fetched once for the process, the context kept per thread.
const EVP_MD* sha256_algorithm() {
  static EVP_MD* md = [] {
    EVP_MD* fetched = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    if (!fetched)
      std::abort(); // OpenSSL without its default provider: nothing could be verified
    return fetched;
  }();
  return md;
}

struct context_free {
  void operator()(EVP_MD_CTX* ctx) const noexcept { EVP_MD_CTX_free(ctx); }
};

EVP_MD_CTX* thread_context() {
  thread_local std::unique_ptr<EVP_MD_CTX, context_free> ctx(EVP_MD_CTX_new());
  if (!ctx)
    std::abort();
  return ctx.get();
}

} // namespace

bytes32 sha256(std::string_view data) noexcept {
  bytes32 digest{};
  EVP_MD_CTX* ctx = thread_context();
  unsigned int length = 0;
  if (EVP_DigestInit_ex2(ctx, sha256_algorithm(), nullptr) != 1
      || EVP_DigestUpdate(ctx, data.data(), data.size()) != 1
      || EVP_DigestFinal_ex(ctx, digest.data(), &length) != 1 || length != digest.size())
    std::abort(); // cannot fail for SHA-256 in memory
  return digest;
}

bytes32 hmac_sha256(const bytes32& key, std::string_view message) {
  bytes32 out{};
  unsigned int length = 0;
  if (!HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
            reinterpret_cast<const unsigned char*>(message.data()), message.size(), out.data(),
            &length)
      || length != out.size())
    throw std::runtime_error("HMAC-SHA256 failed");
  return out;
}

} // namespace comb::protocol

// SPDX-License-Identifier: MIT
#include "actors/bridge/cluster_tls.hpp"

#include <memory>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

namespace comb::actors {
namespace {

struct ctx_free {
  void operator()(SSL_CTX* c) const noexcept { SSL_CTX_free(c); }
};
struct store_ctx_free {
  void operator()(X509_STORE_CTX* c) const noexcept { X509_STORE_CTX_free(c); }
};

std::string openssl_error() {
  char text[256] = {};
  ERR_error_string_n(ERR_get_error(), text, sizeof text);
  ERR_clear_error();
  return text;
}

/// Whether our own certificate chains to the CA: peers verify it against the same file.
std::optional<std::string> chains_to_ca(SSL_CTX* ctx, const std::string& cert_file) {
  X509* cert = SSL_CTX_get0_certificate(ctx);
  std::unique_ptr<X509_STORE_CTX, store_ctx_free> check(X509_STORE_CTX_new());
  if (!cert || !check || X509_STORE_CTX_init(check.get(), SSL_CTX_get_cert_store(ctx), cert, nullptr) != 1)
    return "cannot check " + cert_file + ": " + openssl_error();
  if (X509_verify_cert(check.get()) != 1)
    return cert_file + " does not chain to COMB_CLUSTER_CA: "
           + X509_verify_cert_error_string(X509_STORE_CTX_get_error(check.get()));
  return std::nullopt;
}

} // namespace

std::optional<std::string> cluster_tls_problem(const conf::relay_settings& s) {
  if (!conf::cluster_tls(s))
    return std::nullopt;
  std::unique_ptr<SSL_CTX, ctx_free> ctx(SSL_CTX_new(TLS_method()));
  if (!ctx)
    return "cannot create an OpenSSL context: " + openssl_error();
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), s.cluster_cert.c_str()) != 1)
    return "COMB_CLUSTER_CERT " + s.cluster_cert + ": " + openssl_error();
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), s.cluster_key.c_str(), SSL_FILETYPE_PEM) != 1)
    return "COMB_CLUSTER_KEY " + s.cluster_key + ": " + openssl_error();
  if (SSL_CTX_check_private_key(ctx.get()) != 1)
    return "COMB_CLUSTER_KEY does not belong to COMB_CLUSTER_CERT";
  if (SSL_CTX_load_verify_locations(ctx.get(), s.cluster_ca.c_str(), nullptr) != 1)
    return "COMB_CLUSTER_CA " + s.cluster_ca + ": " + openssl_error();
  return chains_to_ca(ctx.get(), s.cluster_cert);
}

} // namespace comb::actors

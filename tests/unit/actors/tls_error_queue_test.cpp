// SPDX-License-Identifier: MIT
// A TLS link whose thread's error queue another connection left an error on: OpenSSL's own
// SSL_read then reports "no whole record yet" as a failure (what closed healthy cluster links
// under CAF 0.17); through comb's SSL_read (actors/bridge/tls_error_queue.cpp) it is a wait.

#include <catch2/catch.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

namespace {

struct free_ctx {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
struct free_ssl {
  void operator()(SSL* ssl) const { SSL_free(ssl); }
};
struct free_key {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct free_cert {
  void operator()(X509* cert) const { X509_free(cert); }
};
using ctx_ptr = std::unique_ptr<SSL_CTX, free_ctx>;
using ssl_ptr = std::unique_ptr<SSL, free_ssl>;

/// A server context with a fresh self-signed P-256 certificate.
ctx_ptr server_context() {
  std::unique_ptr<EVP_PKEY, free_key> key(EVP_EC_gen("P-256"));
  std::unique_ptr<X509, free_cert> cert(X509_new());
  REQUIRE((key && cert));
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), 0);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 3600);
  X509_set_pubkey(cert.get(), key.get());
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("comb-test"), -1, -1, 0);
  X509_set_issuer_name(cert.get(), name);
  REQUIRE(X509_sign(cert.get(), key.get(), EVP_sha256()) > 0);
  ctx_ptr ctx(SSL_CTX_new(TLS_server_method()));
  REQUIRE(ctx);
  REQUIRE(SSL_CTX_use_certificate(ctx.get(), cert.get()) == 1);
  REQUIRE(SSL_CTX_use_PrivateKey(ctx.get(), key.get()) == 1);
  return ctx;
}

/// What the error queue makes of a read with no data waiting, after `read` was called.
int outcome_of(SSL* ssl, int (*read)(SSL*, void*, int)) {
  char buffer[64];
  int got = read(ssl, buffer, sizeof buffer);
  return got > 0 ? SSL_ERROR_NONE : SSL_get_error(ssl, got);
}

/// The error a connection whose peer vanished without a TLS close leaves behind.
void leave_an_error_on_the_queue() {
  ERR_raise(ERR_LIB_SSL, SSL_R_UNEXPECTED_EOF_WHILE_READING);
}

} // namespace

TEST_CASE("a read with nothing waiting is a wait, whatever another connection left on the error queue",
          "[actors][cluster][tls]") {
  auto server_ctx = server_context();
  ctx_ptr client_ctx(SSL_CTX_new(TLS_client_method()));
  REQUIRE(client_ctx);
  int fds[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  for (int fd : fds)
    REQUIRE(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0);
  ssl_ptr client(SSL_new(client_ctx.get()));
  ssl_ptr server(SSL_new(server_ctx.get()));
  SSL_set_fd(client.get(), fds[0]);
  SSL_set_fd(server.get(), fds[1]);
  bool client_done = false, server_done = false;
  for (int turn = 0; turn < 100 && !(client_done && server_done); ++turn) {
    client_done = client_done || SSL_connect(client.get()) == 1;
    server_done = server_done || SSL_accept(server.get()) == 1;
  }
  REQUIRE(client_done);
  REQUIRE(server_done);
  const std::string greeting = "hello";
  REQUIRE(SSL_write(server.get(), greeting.data(), static_cast<int>(greeting.size())) == 5);
  char buffer[16] = {};
  REQUIRE(SSL_read(client.get(), buffer, sizeof buffer) == 5); // the session tickets read too
  CHECK(std::string(buffer, 5) == greeting);

  // OpenSSL's own SSL_read, as CAF 0.17 calls it: the stale error makes the wait a failure.
  auto openssl_read = reinterpret_cast<int (*)(SSL*, void*, int)>(dlsym(RTLD_NEXT, "SSL_read"));
  REQUIRE(openssl_read != nullptr);
  REQUIRE(reinterpret_cast<void*>(openssl_read) != reinterpret_cast<void*>(&SSL_read));
  leave_an_error_on_the_queue();
  CHECK(outcome_of(client.get(), openssl_read) == SSL_ERROR_SSL);
  ERR_clear_error();

  // Through comb's: the same read waits, and the link goes on.
  leave_an_error_on_the_queue();
  CHECK(outcome_of(client.get(), &SSL_read) == SSL_ERROR_WANT_READ);
  leave_an_error_on_the_queue();
  REQUIRE(SSL_write(server.get(), greeting.data(), static_cast<int>(greeting.size())) == 5);
  leave_an_error_on_the_queue();
  CHECK(outcome_of(client.get(), &SSL_read) == SSL_ERROR_NONE);
  ERR_clear_error();
  close(fds[0]);
  close(fds[1]);
}

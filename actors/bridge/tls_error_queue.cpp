// SPDX-License-Identifier: MIT
//
// OpenSSL's I/O calls with the thread's error queue emptied first.
//
// OpenSSL reads its error queue to explain a failed call: SSL_get_error(3) requires the queue to
// be empty before SSL_read, SSL_write, SSL_connect or SSL_accept. CAF 0.17's TLS sessions
// (libcaf_openssl, fixed upstream only in libcaf_net) never empty it, and every socket of a node
// shares the multiplexer's thread. So a peer that vanished without a TLS close (an intruder with
// a valid certificate, a crashed pod) left an "unexpected EOF" on the queue, and the next read of
// a healthy link that merely had no whole record yet was reported as a failure: CAF closed that
// link, and the pods saw a flap and filled a gap they did not have.
//
// These definitions interpose on OpenSSL's (an executable's symbols come first for the shared
// libraries it loads) and forward to them, so CAF's calls, and any other library's, run as
// OpenSSL documents. This object is linked into every program that links comb_actors' cluster
// transport (an OBJECT library, so the linker never leaves it out).

#include <dlfcn.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace {

/// OpenSSL's own definition of `name`, the next one after this program's.
template <class Function>
Function next_definition(const char* name) {
  return reinterpret_cast<Function>(dlsym(RTLD_NEXT, name));
}

} // namespace

extern "C" {

int SSL_read(SSL* ssl, void* buffer, int size) {
  static const auto real = next_definition<int (*)(SSL*, void*, int)>("SSL_read");
  ERR_clear_error();
  return real(ssl, buffer, size);
}

int SSL_write(SSL* ssl, const void* buffer, int size) {
  static const auto real = next_definition<int (*)(SSL*, const void*, int)>("SSL_write");
  ERR_clear_error();
  return real(ssl, buffer, size);
}

int SSL_connect(SSL* ssl) {
  static const auto real = next_definition<int (*)(SSL*)>("SSL_connect");
  ERR_clear_error();
  return real(ssl);
}

int SSL_accept(SSL* ssl) {
  static const auto real = next_definition<int (*)(SSL*)>("SSL_accept");
  ERR_clear_error();
  return real(ssl);
}

} // extern "C"

// SPDX-License-Identifier: MIT
// comb-admin cluster init-ca DIR / cluster issue DIR NODE: a private CA for the pods' cluster
// links and one certificate per pod (mutual TLS with CAF's OpenSSL module), made with OpenSSL.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <memory>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admin/commands.hpp"

namespace comb::admin {
namespace {

struct cluster_args {
  std::string dir;
  std::string node;
  int days = 825;
};

struct pkey_free {
  void operator()(EVP_PKEY* p) const noexcept { EVP_PKEY_free(p); }
};
struct x509_free {
  void operator()(X509* x) const noexcept { X509_free(x); }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, pkey_free>;
using x509_ptr = std::unique_ptr<X509, x509_free>;

/// A file created anew (never replacing one), with `mode` even under a permissive umask.
FILE* create_exclusive(const std::string& path, mode_t mode, std::string& error) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    error = "cannot create " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  if (::fchmod(fd, mode) != 0) {
    error = "cannot set the mode of " + path + ": " + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  FILE* file = ::fdopen(fd, "w");
  if (!file)
    ::close(fd);
  return file;
}

bool write_key(const std::string& path, EVP_PKEY* key, std::string& error) {
  FILE* file = create_exclusive(path, 0600, error);
  if (!file)
    return false;
  bool ok = PEM_write_PrivateKey(file, key, nullptr, nullptr, 0, nullptr, nullptr) == 1;
  ok = std::fclose(file) == 0 && ok;
  if (!ok)
    error = "cannot write " + path;
  return ok;
}

bool write_cert(const std::string& path, X509* cert, std::string& error) {
  FILE* file = create_exclusive(path, 0644, error);
  if (!file)
    return false;
  bool ok = PEM_write_X509(file, cert) == 1;
  ok = std::fclose(file) == 0 && ok;
  if (!ok)
    error = "cannot write " + path;
  return ok;
}

template <class T, class Read>
T read_pem(const std::string& path, Read read, std::string& error) {
  FILE* file = std::fopen(path.c_str(), "r");
  if (!file) {
    error = "cannot read " + path + ": " + std::strerror(errno);
    return T{};
  }
  T value(read(file));
  std::fclose(file);
  if (!value)
    error = path + " is not a PEM file of the expected kind";
  return value;
}

bool add_extension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (!ext)
    return false;
  bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

/// A certificate for `key` named `common_name`, valid `days`, unsigned.
x509_ptr new_certificate(EVP_PKEY* key, const std::string& common_name, int days) {
  x509_ptr cert(X509_new());
  if (!cert)
    return nullptr;
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1)
    return nullptr;
  serial[0] &= 0x7f; // positive
  BIGNUM* number = BN_bin2bn(serial, sizeof serial, nullptr);
  bool ok = number && BN_to_ASN1_INTEGER(number, X509_get_serialNumber(cert.get()));
  BN_free(number);
  X509_NAME* name = X509_get_subject_name(cert.get());
  ok = ok && X509_set_version(cert.get(), 2) == 1
       && X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600)
       && X509_gmtime_adj(X509_getm_notAfter(cert.get()), 86400L * days)
       && X509_set_pubkey(cert.get(), key) == 1
       && X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                                     reinterpret_cast<const unsigned char*>("comb cluster"), -1, -1, 0)
       && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                     reinterpret_cast<const unsigned char*>(common_name.c_str()),
                                     -1, -1, 0);
  return ok ? std::move(cert) : nullptr;
}

/// Node names become file names and certificate names: letters, digits, '.', '_', '-'.
bool valid_node_name(const std::string& node) {
  if (node.empty() || node.size() > 64 || node.front() == '.' || node == "ca")
    return false;
  return node.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
         == std::string::npos;
}

int run_init_ca(const admin_options&, const cluster_args& args, reporter& out) {
  std::error_code ec;
  std::filesystem::create_directories(args.dir, ec);
  ::chmod(args.dir.c_str(), 0700);
  const std::string key_path = args.dir + "/ca.key";
  const std::string cert_path = args.dir + "/ca.pem";
  if (std::filesystem::exists(key_path) || std::filesystem::exists(cert_path))
    return out.fail(exit_code::conflict, "conflict: " + args.dir + " already holds a CA");
  pkey_ptr key(EVP_EC_gen("P-256"));
  x509_ptr cert = key ? new_certificate(key.get(), "comb cluster CA", 3650) : nullptr;
  bool ok = cert && X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get())) == 1
            && add_extension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0")
            && add_extension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign")
            && add_extension(cert.get(), cert.get(), NID_subject_key_identifier, "hash")
            && X509_sign(cert.get(), key.get(), EVP_sha256()) > 0;
  if (!ok)
    return out.fail(exit_code::usage, "OpenSSL could not make the CA");
  std::string error;
  if (!write_key(key_path, key.get(), error) || !write_cert(cert_path, cert.get(), error))
    return out.fail(exit_code::usage, error);
  out.fields()["ca_key"] = key_path;
  out.fields()["ca_cert"] = cert_path;
  out.say(cert_path);
  out.note("CA written to " + cert_path + " (its key " + key_path + ", mode 0600: keep it off the"
           " pods); next: comb-admin cluster issue " + args.dir + " NODE, once per pod");
  return as_int(exit_code::ok);
}

int run_issue(const admin_options&, const cluster_args& args, reporter& out) {
  if (!valid_node_name(args.node))
    return out.fail(exit_code::usage, "NODE must be letters, digits, '.', '_' or '-' (not \"ca\")");
  std::string error;
  auto ca_key = read_pem<pkey_ptr>(
    args.dir + "/ca.key", [](FILE* f) { return PEM_read_PrivateKey(f, nullptr, nullptr, nullptr); }, error);
  auto ca_cert = ca_key ? read_pem<x509_ptr>(
                            args.dir + "/ca.pem",
                            [](FILE* f) { return PEM_read_X509(f, nullptr, nullptr, nullptr); }, error)
                        : nullptr;
  if (!ca_key || !ca_cert)
    return out.fail(exit_code::usage, error + " (run comb-admin cluster init-ca " + args.dir + " first)");
  const std::string key_path = args.dir + "/" + args.node + ".key";
  const std::string cert_path = args.dir + "/" + args.node + ".pem";
  if (std::filesystem::exists(key_path) || std::filesystem::exists(cert_path))
    return out.fail(exit_code::conflict, "conflict: " + cert_path + " or its key exists");
  pkey_ptr key(EVP_EC_gen("P-256"));
  x509_ptr cert = key ? new_certificate(key.get(), args.node, args.days) : nullptr;
  const std::string san = "DNS:" + args.node;
  bool ok = cert && X509_set_issuer_name(cert.get(), X509_get_subject_name(ca_cert.get())) == 1
            && add_extension(cert.get(), ca_cert.get(), NID_basic_constraints, "critical,CA:FALSE")
            && add_extension(cert.get(), ca_cert.get(), NID_key_usage, "critical,digitalSignature,keyAgreement")
            && add_extension(cert.get(), ca_cert.get(), NID_ext_key_usage, "serverAuth,clientAuth")
            && add_extension(cert.get(), ca_cert.get(), NID_subject_alt_name, san.c_str())
            && X509_sign(cert.get(), ca_key.get(), EVP_sha256()) > 0;
  if (!ok)
    return out.fail(exit_code::usage, "OpenSSL could not make the certificate");
  if (!write_key(key_path, key.get(), error) || !write_cert(cert_path, cert.get(), error))
    return out.fail(exit_code::usage, error);
  out.fields()["cert"] = cert_path;
  out.fields()["key"] = key_path;
  out.fields()["ca"] = args.dir + "/ca.pem";
  out.say("COMB_CLUSTER_CERT=" + cert_path);
  out.say("COMB_CLUSTER_KEY=" + key_path);
  out.say("COMB_CLUSTER_CA=" + args.dir + "/ca.pem");
  out.note("certificate for " + args.node + " written (key mode 0600); copy the three files to"
           " that pod only");
  return as_int(exit_code::ok);
}

} // namespace

void add_cluster_commands(CLI::App& app, admin_cli& cli) {
  auto* group = app.add_subcommand("cluster", "certificates for mutual TLS on cluster links");
  group->require_subcommand(1);
  auto args = std::make_shared<cluster_args>();
  auto* init = group->add_subcommand("init-ca", "create a private CA in DIR (ca.pem, ca.key 0600)");
  init->add_option("dir", args->dir, "folder for the CA")->required();
  on_run(init, cli, args, run_init_ca);
  auto* issue = group->add_subcommand(
    "issue", "create NODE.pem and NODE.key (0600) in DIR, signed by its CA");
  issue->add_option("dir", args->dir, "folder holding ca.pem and ca.key")->required();
  issue->add_option("node", args->node, "the pod's name (file and certificate name)")->required();
  issue->add_option("--days", args->days, "validity in days (default 825)")
    ->check(CLI::Range(1, 3650));
  on_run(issue, cli, args, run_issue);
}

} // namespace comb::admin

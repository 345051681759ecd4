// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "protocol/sha256.hpp"

using namespace comb::protocol;

// FIPS 180-2 test vectors: empty input, one block, two blocks, and a million bytes.
TEST_CASE("sha256 matches the FIPS 180-2 vectors") {
  CHECK(to_hex(sha256("")) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(to_hex(sha256("abc")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(to_hex(sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"))
        == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(to_hex(sha256(std::string(1'000'000, 'a')))
        == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// The context is reused per thread: a digest must not carry state into the next one, on any
// thread, with several threads hashing at once.
TEST_CASE("sha256 gives the same digests from several threads at once, call after call") {
  const std::string expected = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
  std::vector<int> wrong(4, 0);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < wrong.size(); ++t)
    threads.emplace_back([&wrong, &expected, t] {
      for (int i = 0; i < 2000; ++i) {
        (void)sha256(std::string(static_cast<std::size_t>(i % 200), 'x'));
        if (to_hex(sha256("abc")) != expected)
          ++wrong[t];
      }
    });
  for (auto& thread : threads)
    thread.join();
  for (int w : wrong)
    CHECK(w == 0);
}

// SPDX-License-Identifier: MIT
// Boost.JSON compiled into the fuzzer itself, so its parser is instrumented for coverage too.
#include <boost/json/src.hpp>

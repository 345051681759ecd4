#!/usr/bin/env bash
# Builds the libFuzzer target for the client frame parser with clang (ASan + UBSan) and runs it
# for a bounded time, seeded with tests/data/malformed. Usage: tools/fuzz.sh [seconds]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
seconds="${1:-60}"
out="${COMB_BUILD_DIR:-$top/build}/fuzz"
mkdir -p "$out/corpus"
sources=("$top"/protocol/*.cpp "$top/tests/fuzz/client_message_fuzz.cpp" "$top/tests/fuzz/boost_json_impl.cpp")
binary="$out/client_message_fuzz"
newest_source=$(ls -t "${sources[@]}" "$top"/protocol/*.hpp | head -1)
if [ ! -x "$binary" ] || [ "$newest_source" -nt "$binary" ]; then
  echo "fuzz: building $binary"
  clang++ -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
    -DBOOST_JSON_HEADER_ONLY -DBOOST_JSON_NO_LIB -I"$top" "${sources[@]}" \
    -lsecp256k1 -lcrypto -lboost_url -o "$binary"
fi
echo "fuzz: running for ${seconds}s"
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  "$binary" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 "$out/corpus" "$top/tests/data/malformed" 2>"$out/last_run.log" || {
  tail -60 "$out/last_run.log"
  echo "fuzz: FAILED (crash input and log under $out)"
  exit 1
}
grep -E "stat::number_of_executed_units|stat::new_units_added" "$out/last_run.log" || true
echo "fuzz: passed, no crash in ${seconds}s"

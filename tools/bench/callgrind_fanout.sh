#!/usr/bin/env bash
# Instructions the relay executes per fan-out delivery, counted by callgrind (stable on a noisy
# shared machine, unlike time): the relay runs under valgrind, its counters are zeroed once every
# subscriber's REQ arrived (the setup is not counted) and dumped after comb-bench ends; the
# dump's total divided by the deliveries is the figure.
#   source /tmp/<svc>/env   # tools/services.sh
#   bash tools/bench/callgrind_fanout.sh [BIN] [SUBSCRIBERS] [RATE] [SECONDS]
# Prints one line: Ir total, deliveries, Ir per delivery; keeps the dump in $CG_OUT (default a
# fresh /tmp folder) for callgrind_annotate. Never commit the dump.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${1:-$root/build/bin/comb-relay}
subs=${2:-100} rate=${3:-50} seconds=${4:-3}
port=${CG_PORT:-7795}
out=${CG_OUT:-$(mktemp -d /tmp/callgrind-fanout.XXXXXX)}
source "$here/callgrind_relay.sh"
callgrind_start callgrind "$port" "$bin"
# comb-bench opens and subscribes first, then publishes: zero the counters once the relay has
# seen every subscriber's REQ (its EOSE follows within milliseconds; publishing starts after).
"$root/build/bin/comb-bench" fanout --relay "ws://127.0.0.1:$port" --subscribers "$subs" \
  --rate "$rate" --seconds "$seconds" --json > "$out/bench.json" 2>"$out/bench.err" &
bench=$!
callgrind_await_messages "$port" REQ "$subs" 600  # every subscription held (at most 60 s)
callgrind_measure "$bench"
deliveries=$(tail -1 "$out/bench.json" | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["deliveries"]))')
echo "Ir $ir deliveries $deliveries Ir_per_delivery $((ir / (deliveries > 0 ? deliveries : 1))) dump $dump"

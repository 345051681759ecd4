#!/usr/bin/env bash
# Instructions the relay executes per accepted EVENT (ingest), counted by callgrind (stable on a
# noisy shared machine, unlike time): the relay runs under valgrind, its counters are zeroed once
# every connection has authenticated (connection setup and AUTH are not counted) and dumped after
# comb-bench ends; the dump's total divided by the accepted events is the figure, and the share
# of secp256k1 (the one Schnorr verify per event, the floor) is printed next to it.
#   source /tmp/<svc>/env   # tools/services.sh
#   bash tools/bench/callgrind_ingest.sh [BIN] [EVENTS] [CONNECTIONS] [SECONDS]
# Prints one line: Ir total, accepted events, Ir per event, secp256k1 Ir per event and share;
# keeps the dump in $CG_OUT (default a fresh /tmp folder) for callgrind_annotate. Never commit it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${1:-$root/build/bin/comb-relay}
events=${2:-3000} conns=${3:-16} seconds=${4:-60}
port=${CG_PORT:-7797}
out=${CG_OUT:-$(mktemp -d /tmp/callgrind-ingest.XXXXXX)}
source "$here/callgrind_relay.sh"
callgrind_start callgrind-ingest "$port" "$bin"
# comb-bench measures the verify rate (1 s), signs its corpus, opens and authenticates every
# connection, then publishes: zero the counters once the relay has seen every AUTH.
"$root/build/bin/comb-bench" ingest --relay "ws://127.0.0.1:$port" --events "$events" \
  --connections "$conns" --seconds "$seconds" --json > "$out/bench.json" 2>"$out/bench.err" &
bench=$!
callgrind_await_messages "$port" AUTH "$conns" 1200  # every connection authenticated (at most 120 s)
sleep 0.5  # the last AUTH's verify and OK
callgrind_measure "$bench"
accepted=$(tail -1 "$out/bench.json" | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["events_accepted"]))')
accepted=$((accepted > 0 ? accepted : 1))
secp=$(callgrind_annotate --inclusive=yes --threshold=100 "$dump" 2>/dev/null \
  | awk '/secp256k1_schnorrsig_verify/ && !found {gsub(",","",$1); print $1; found=1}' || true)
secp=${secp:-0}
echo "Ir $ir accepted $accepted Ir_per_event $((ir / accepted))" \
  "secp256k1_verify_Ir_per_event $((secp / accepted)) share $(python3 -c "print(round($secp/$ir,3))") dump $dump"

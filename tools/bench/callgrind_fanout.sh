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
wrapper=$out/relay.sh
cat > "$wrapper" <<EOF
#!/bin/sh
export COMB_METRICS_LISTEN=127.0.0.1:$((port + 1))
exec valgrind --tool=callgrind --callgrind-out-file=$out/callgrind.out.%p --dump-instr=no "$bin"
EOF
chmod +x "$wrapper"
pid=$(bash "$here/bench_relay.sh" start callgrind "$port" "$wrapper")
trap 'bash "$here/bench_relay.sh" stop callgrind >/dev/null 2>&1 || true' EXIT
for _ in $(seq 120); do  # valgrind starts slowly: up to 60 s
  curl -sf "http://127.0.0.1:$port/" -H 'Accept: application/nostr+json' >/dev/null 2>&1 && break
  sleep 0.5
done
# comb-bench opens and subscribes first, then publishes: zero the counters once the relay has
# seen every subscriber's REQ (its EOSE follows within milliseconds; publishing starts after).
"$root/build/bin/comb-bench" fanout --relay "ws://127.0.0.1:$port" --subscribers "$subs" \
  --rate "$rate" --seconds "$seconds" --json > "$out/bench.json" 2>"$out/bench.err" &
bench=$!
for _ in $(seq 600); do  # until the relay holds every subscription (at most 60 s)
  held=$(curl -s "http://127.0.0.1:$((port + 1))/metrics" 2>/dev/null | awk '/^comb_messages_total\{type="REQ"\}/{print $2}')
  [ "${held:-0}" -ge "$subs" ] && break
  sleep 0.1
done
callgrind_control -z "$pid" >/dev/null
wait "$bench" || true
callgrind_control -d "$pid" >/dev/null
sleep 1
dump=$(ls -t "$out"/callgrind.out.* | head -1)
ir=$(awk '/^summary:|^totals:/{print $2; exit}' "$dump")
deliveries=$(tail -1 "$out/bench.json" | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["deliveries"]))')
echo "Ir $ir deliveries $deliveries Ir_per_delivery $((ir / (deliveries > 0 ? deliveries : 1))) dump $dump"

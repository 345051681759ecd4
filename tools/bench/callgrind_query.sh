#!/usr/bin/env bash
# Instructions the relay executes per event served by REQ (history reads), counted by callgrind
# (stable on a noisy shared machine, unlike time). The store is preloaded once by a relay
# running at full speed (EVENTS events, then ANALYZE), then the relay restarts under valgrind
# on the same database; its counters are zeroed once comb-bench's connections are up and dumped
# after the timed phase. Instructions ÷ events served is the figure, per shape (SHAPES: one or
# more of authors_kinds_limit500, e_tag, kinds_since, comma-separated; default each in turn).
#   source /tmp/<svc>/env   # tools/services.sh
#   bash tools/bench/callgrind_query.sh [BIN] [EVENTS] [SECONDS] [CONNECTIONS]
# Prints one line per shape: Ir total, REQs, events served, Ir per event and per REQ; keeps the
# dumps in $CG_OUT (default a fresh /tmp folder) for callgrind_annotate. Never commit them.
# WARM_SECONDS: the warm-up before the measured phase (default 3).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${1:-$root/build/bin/comb-relay}
events=${2:-100000} seconds=${3:-6} conns=${4:-1}
port=${CG_PORT:-7799}
shapes=${SHAPES:-authors_kinds_limit500,e_tag,kinds_since}
out=${CG_OUT:-$(mktemp -d /tmp/callgrind-query.XXXXXX)}
name=callgrind-query
bench=$root/build/bin/comb-bench
# The preload, at full speed (under valgrind it would take many minutes).
bash "$here/bench_relay.sh" start "$name" "$port" "$bin" >/dev/null
"$bench" query --relay "ws://127.0.0.1:$port" --events "$events" --seconds 1 > "$out/preload.txt" 2>&1
bash "$here/bench_relay.sh" stop "$name" >/dev/null
psql -q "${COMB_TEST_DATABASE_URL%/*}/bench_${name//-/_}" -c ANALYZE
export BENCH_KEEP_DB=1
source "$here/callgrind_relay.sh"
callgrind_start "$name" "$port" "$bin"
# A warm-up of every shape first: the reader's backends prepare their statements and fill
# their catalog caches, which a long-running relay has long done. The relay's event body cache
# starts empty, so the measured REQs are mostly misses; WARM_SECONDS=40 reads every e_tag root
# once first, which measures hits as a long-running pod serves them.
"$bench" query --relay "ws://127.0.0.1:$port" --events 0 --seconds "${WARM_SECONDS:-3}" \
  --connections "$conns" > /dev/null 2>&1
reqs() {
  curl -s "http://127.0.0.1:$((port + 1))/metrics" \
    | awk '/^comb_messages_total\{type="REQ"\}/ {print $2}'
}
for shape in ${shapes//,/ }; do
  "$bench" query --relay "ws://127.0.0.1:$port" --events 0 --seconds "$seconds" \
    --connections "$conns" --shapes "$shape" --json > "$out/$shape.json" 2>"$out/$shape.err" &
  job=$!
  callgrind_await_messages "$port" REQ $(($(reqs) + conns)) 600  # every connection is asking
  callgrind_control -z "$pid" >/dev/null
  first=$(reqs)
  wait "$job" || true
  callgrind_control -d "$pid" >/dev/null
  last=$(reqs)
  sleep 1
  dump=$(ls -t "$out"/callgrind.out.* | head -1)
  ir=$(awk '/^summary:|^totals:/{print $2; exit}' "$dump")
  cp "$dump" "$out/$shape.callgrind"
  python3 - "$out/$shape.json" "$shape" "$ir" "$((last - first))" "$out/$shape.callgrind" <<'PY'
import json, sys
figures = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
shape, ir, reqs, dump = sys.argv[2], int(sys.argv[3]), max(int(sys.argv[4]), 1), sys.argv[5]
per_req = figures[shape + "_events_per_req"]
print(f"{shape}: Ir {ir} REQs {reqs} events_per_req {per_req:.0f} Ir_per_REQ {ir // reqs}"
      f" Ir_per_event {ir / reqs / max(per_req, 1):.0f} dump {dump}")
PY
done

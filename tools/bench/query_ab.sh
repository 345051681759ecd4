#!/usr/bin/env bash
# Two comb-relay binaries on the three query shapes, alternating in one sitting: for each binary
# and round a fresh store preloaded through that binary (100,000 events, so its body cache holds
# what it stored) and vacuumed, then comb-bench query --events 0 on 4 connections for 9 s with the relay's and
# Postgres' CPU counted. Prints one line per run: REQ/s, relay and Postgres µs per event served,
# p99 per shape; the JSON lines stay in $AB_OUT (default a fresh /tmp folder).
#   source /tmp/<svc>/env   # tools/services.sh
#   bash tools/bench/query_ab.sh OLD_BIN NEW_BIN [ROUNDS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bins=("$1" "$2")
rounds=${3:-2}
port=${AB_PORT:-7811}
out=${AB_OUT:-$(mktemp -d /tmp/query-ab.XXXXXX)}
bench=$root/build/bin/comb-bench
: "${COMB_TEST_DATABASE_URL:?source the services env first}"
source "$root/tools/postgres.sh" # comb_pg_pids
for round in $(seq "$rounds"); do
  for which in 0 1; do
    pid=$(bash "$here/bench_relay.sh" start query-ab "$port" "${bins[$which]}")
    timeout 300 "$bench" query --relay "ws://127.0.0.1:$port" --events 100000 --seconds 1 > /dev/null 2>&1
    # Settled before the clock starts: autovacuum on a fresh store would otherwise run in one
    # binary's timed phase and not the other's (its CPU counts as the database's).
    psql -q "${COMB_TEST_DATABASE_URL%/*}/bench_query_ab" -c "VACUUM ANALYZE" > /dev/null
    json=$out/$which.$round.json
    timeout 120 "$bench" query --relay "ws://127.0.0.1:$port" --events 0 --connections 4 --seconds 9 \
      --relay-pid "$pid" --db-pids "$(comb_pg_pids "$COMB_TEST_DATABASE_URL")" --json 2>/dev/null | tail -1 > "$json"
    bash "$here/bench_relay.sh" stop query-ab > /dev/null 2>&1
    python3 - "$json" "${bins[$which]}" "$round" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
line = [sys.argv[2], "round " + sys.argv[3]]
for s in ("authors_kinds_limit500", "e_tag", "kinds_since"):
    line.append(f"{s}: {d[s + '_reqs_per_s']:.0f}/s relay {d[s + '_relay_cpu_us_per_event']:.2f}"
                f" db {d[s + '_db_cpu_us_per_event']:.2f} p99 {d[s + '_p99_ms']:.1f}")
print(" | ".join(line))
PY
  done
done

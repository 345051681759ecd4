#!/usr/bin/env bash
# Instructions Postgres executes per stored EVENT (ingest), counted by callgrind: CPU time of
# Postgres on a shared machine moves by ±30 % from run to run, its instruction counts do not.
# A private Postgres 15 cluster runs under valgrind (every backend and background process, as
# they are forks of the postmaster); the relay runs natively on it: a short warm-up ingest
# (300 events), then the measured one. Each process writes its dump when the cluster stops; the
# relay's writer backends (COMB_STORAGE_WRITERS, 1 by default: the busiest processes) over every
# event they stored is the figure (their start-up is a few million instructions in all).
#   bash tools/bench/callgrind_postgres_ingest.sh [BIN] [EVENTS] [CONNECTIONS] [SECONDS]
# Dumps stay in $CG_OUT (default a fresh /tmp folder); never commit them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$root/tools/postgres.sh"
bin=${1:-$root/build/bin/comb-relay}
events=${2:-3000} conns=${3:-16} seconds=${4:-300}
port=${CG_PORT:-7897} pg_port=${CG_PG_PORT:-7899}
out=${CG_OUT:-$(mktemp -d /tmp/callgrind-pg-ingest.XXXXXX)}
mkdir -p "$out"
chmod 777 "$out" # the postgres system user writes the dumps
pgdir=$out/pg
mkdir -p "$pgdir"
[ "$(id -u)" -eq 0 ] && chown postgres:postgres "$pgdir"
comb_pg_as_owner "$COMB_PG_BIN/initdb" -D "$pgdir/data" -A trust -U postgres -E UTF8 \
  --locale=C.UTF-8 >"$pgdir/initdb.log" 2>&1
comb_pg_as_owner valgrind --tool=callgrind --dump-instr=no \
  --callgrind-out-file="$out/pg.%p" "$COMB_PG_BIN/postgres" -D "$pgdir/data" \
  -c listen_addresses=127.0.0.1 -p "$pg_port" -k "$pgdir" -c max_connections=60 \
  >"$pgdir/server.log" 2>&1 &
cleanup() {
  bash "$here/bench_relay.sh" stop cgpg >/dev/null 2>&1 || true
  comb_pg_as_owner "$COMB_PG_BIN/pg_ctl" -D "$pgdir/data" -m fast -w -t 120 stop >/dev/null 2>&1 \
    || true
}
trap cleanup EXIT
export COMB_TEST_DATABASE_URL="postgresql://postgres@127.0.0.1:$pg_port/postgres"
for _ in $(seq 240); do
  psql "$COMB_TEST_DATABASE_URL" -qAtc "SELECT 1" >/dev/null 2>&1 && break
  sleep 0.5
done
bash "$here/bench_relay.sh" start cgpg "$port" "$bin" >/dev/null
for _ in $(seq 240); do
  curl -sf "http://127.0.0.1:$port/" -H 'Accept: application/nostr+json' >/dev/null 2>&1 && break
  sleep 0.5
done
"$root/build/bin/comb-bench" ingest --relay "ws://127.0.0.1:$port" --events 300 \
  --connections 4 --seconds 60 --json >"$out/warmup.json" 2>"$out/warmup.err"
"$root/build/bin/comb-bench" ingest --relay "ws://127.0.0.1:$port" --events "$events" \
  --connections "$conns" --seconds "$seconds" --json >"$out/bench.json" 2>"$out/bench.err"
accepted() { tail -1 "$1" | python3 -c 'import json,sys; print(int(json.load(sys.stdin)["events_accepted"]))'; }
stored=$(( $(accepted "$out/warmup.json") + $(accepted "$out/bench.json") ))
cleanup # every process writes its dump when it exits
trap - EXIT
python3 - "$out" "$stored" "${COMB_STORAGE_WRITERS:-1}" <<'PY'
import glob, re, sys
out, stored, writers_count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
per = []
for dump in glob.glob(out + "/pg.*"):
    text = open(dump, errors="replace").read()
    m = re.search(r"^(?:summary|totals):\s+(\d+)", text, re.M)
    if m:
        per.append((int(m.group(1)), dump.rsplit("/", 1)[1]))
per.sort(reverse=True)
writers = [ir for ir, _ in per[:writers_count]]
total = sum(ir for ir, _ in per)
print(f"writer backends Ir {sum(writers)} stored {stored} Ir_per_event {sum(writers) // stored}"
      f" ({', '.join(f'{ir / stored:,.0f}' for ir in writers)});"
      f" all Postgres processes {total // stored} per event, start-up and migrations included;"
      f" dumps {out}")
PY

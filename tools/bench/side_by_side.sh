#!/usr/bin/env bash
# comb and strfry side by side: every scenario of issue 16's table against both relays, in
# alternating rounds (comb, strfry, comb, strfry, ...), then the table of medians, ratios and CPU.
# Each relay runs twice for the whole sitting, both instances preloaded once with the same
# 100,000 events: one takes the writes (ingest, fan-out) and the idle connections, the other only
# the queries, so every round's REQs read the store the table names (not one the rounds' writes
# grew) while the writes go into a store of that size as before.
#
#   bash tools/services.sh start /tmp/sbs-svc && source /tmp/sbs-svc/env
#   bash tools/bench/side_by_side.sh [ROUNDS]        # default 2 rounds, about 5 minutes on a quiet machine
#
# comb: build/bin/comb-relay (tools/build.sh), Postgres of tools/services.sh (fsync and
# synchronous_commit on), CPU counted for the relay and every Postgres process.
# strfry: ../shared/peers/strfry (its defaults), one process.
# Environment: SBS_OUT (folder for the JSON lines, default a fresh temp folder), STRFRY_DIR,
# COMB_PORT / STRFRY_PORT (default 7781 / 7782; the query instances take the next two ports),
# SBS_SECONDS (timed seconds per phase, 4).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
rounds=${1:-2}
bench=$root/build/bin/comb-bench
strfry_dir=${STRFRY_DIR:-/work/shared/peers/strfry}
comb_port=${COMB_PORT:-7781}
strfry_port=${STRFRY_PORT:-7782}
seconds=${SBS_SECONDS:-4}
out=${SBS_OUT:-$(mktemp -d /tmp/side-by-side.XXXXXX)}
: "${COMB_TEST_DATABASE_URL:?source the services env first (tools/services.sh)}"
[ -x "$bench" ] || { echo "build first: bash tools/build.sh" >&2; exit 2; }
mkdir -p "$out"

source "$root/tools/postgres.sh" # comb_pg_pids

# Instances by role: "comb" and "strfry" take the writes, "combq" and "strfryq" the queries.
declare -A port pid
port[comb]=$comb_port port[strfry]=$strfry_port port[combq]=$((comb_port + 2)) port[strfryq]=$((strfry_port + 2))
pid[comb]=$(bash "$here/bench_relay.sh" start sbs "${port[comb]}")
pid[combq]=$(bash "$here/bench_relay.sh" start sbsq "${port[combq]}")
pid[strfry]=$(bash "$strfry_dir/run.sh" start "${port[strfry]}" /tmp/sbs-strfry)
pid[strfryq]=$(bash "$strfry_dir/run.sh" start "${port[strfryq]}" /tmp/sbs-strfryq)
cleanup() {
  bash "$here/bench_relay.sh" stop sbs >/dev/null 2>&1 || true
  bash "$here/bench_relay.sh" stop sbsq >/dev/null 2>&1 || true
  for dir in sbs-strfry sbs-strfryq; do
    cp "/tmp/$dir/log" "$out/$dir.log" 2>/dev/null || true  # its own account of a failed phase
    bash "$strfry_dir/run.sh" stop "/tmp/$dir" >/dev/null 2>&1 || true
  done
}
trap cleanup EXIT
for instance in comb combq strfry strfryq; do
  echo "$instance pid ${pid[$instance]} on ${port[$instance]}" >&2
done
echo "JSON lines in $out" >&2

# One scenario against one instance; its JSON line goes to $out/<relay>.<name>.jsonl.
run() {
  local instance=$1 name=$2; shift 2
  local relay=${instance%q} db=()
  [ "$relay" = comb ] && db=(--db-pids "$(comb_pg_pids "$COMB_TEST_DATABASE_URL")")
  timeout 180 "$bench" "$@" --relay "ws://127.0.0.1:${port[$instance]}" --relay-pid "${pid[$instance]}" "${db[@]}" --json \
    2>>"$out/$relay.stderr" | tail -1 >> "$out/$relay.$name.jsonl" || true  # exit_code is in the line
  echo "  $relay $name done" >&2
}

for instance in comb combq strfry strfryq; do  # the store, once per instance, outside the rounds
  timeout 300 "$bench" query --relay "ws://127.0.0.1:${port[$instance]}" \
    --events 100000 --seconds 1 --json 2>>"$out/${instance%q}.stderr" | tail -1 > "$out/$instance.preload.json" || true
  echo "  $instance preloaded" >&2
done
# What autovacuum does within a minute of a bulk load (since Postgres 13 inserts alone trigger
# a vacuum too), done now so the first round's plans, and its index-only scans (the visibility
# map), are the steady state's rather than whatever autovacuum reached by then.
for db in bench_sbs bench_sbsq; do psql "${COMB_TEST_DATABASE_URL%/*}/$db" -qc "VACUUM ANALYZE" || true; done

# What comb's write phases of a round left for autovacuum (tens of thousands of rows), done before
# its query phase: on 2 cores an autovacuum of the writer's store otherwise lands in whichever
# phase comes next (in sitting 46 it ran through comb's second query phase; rounds differ as much
# without it, docs/benchmarks.md). Its CPU is written down, not hidden: one process (no
# parallel workers, as autovacuum), its backend's own /proc ticks, in $out/comb.vacuum.jsonl.
vacuum_writes() {
  local ticks
  ticks=$(psql "${COMB_TEST_DATABASE_URL%/*}/bench_sbs" -Atq -c "VACUUM (ANALYZE, PARALLEL 0)" \
    -c "SELECT split_part(s, ' ', 14)::bigint + split_part(s, ' ', 15)::bigint
        FROM pg_read_file('/proc/' || pg_backend_pid() || '/stat') AS s" 2>>"$out/comb.stderr") || ticks=""
  [ -n "$ticks" ] && echo "{\"vacuum_cpu_s\": $(awk -v t="$ticks" -v hz="$(getconf CLK_TCK)" 'BEGIN { print t / hz }')}" \
    >> "$out/comb.vacuum.jsonl"
  echo "  comb vacuum done" >&2
}

# Where comb's query phase found its pages: blocks of the query store read from outside
# Postgres's shared buffers (the OS page cache or the disk) against those found in them, from
# pg_stat_database around the phase (backends report within a second or so), to tell whether the
# writer's store of the same cluster pushed the query store's pages out between rounds.
query_blocks() {
  psql "${COMB_TEST_DATABASE_URL%/*}/bench_sbsq" -Atq -F ' ' \
    -c "SELECT blks_read, blks_hit FROM pg_stat_database WHERE datname = 'bench_sbsq'" 2>>"$out/comb.stderr" || true
}

# The host's CPU accounting over the rounds (/proc/stat): on a shared VM, time stolen by other
# guests slows both relays and inflates every CPU-per-operation figure of the sitting.
head -1 /proc/stat > "$out/procstat.start"
for round in $(seq "$rounds"); do
  echo "round $round" >&2
  for relay in comb strfry; do
    run "$relay" ingest ingest --events 40000 --connections 256 --seconds $((seconds * 2))
    run "$relay" fanout1000 fanout --subscribers 1000 --rate 200 --seconds "$seconds"
    run "$relay" fanout200 fanout --subscribers 200 --rate 1000 --seconds "$seconds"
    run "$relay" fanout10 fanout --subscribers 10 --rate 2000 --seconds "$seconds"
    # The two above offer 200,000 deliveries/s, which comb delivers whole: its ratio there is
    # capped at 200,000 ÷ strfry's rate. These offer 500,000, to find where each relay saturates.
    run "$relay" fanout1000x500 fanout --subscribers 1000 --rate 500 --seconds "$seconds"
    run "$relay" fanout200x2500 fanout --subscribers 200 --rate 2500 --seconds "$seconds"
    # On a faster host (sitting 47) comb delivered the whole 500,000/s too: these offer twice that.
    run "$relay" fanout1000x1000 fanout --subscribers 1000 --rate 1000 --seconds "$seconds"
    run "$relay" fanout200x5000 fanout --subscribers 200 --rate 5000 --seconds "$seconds"
    [ "$relay" = comb ] && vacuum_writes && blocks_before=$(query_blocks)
    run "${relay}q" query query --events 0 --connections 4 --seconds $((seconds * 3))
    if [ "$relay" = comb ]; then
      sleep 2 # the readers' last counts
      read -r read0 hit0 <<< "${blocks_before:-0 0}"
      read -r read1 hit1 <<< "$(query_blocks)"
      echo "{\"blocks_read\": $(( ${read1:-0} - read0 )), \"blocks_hit\": $(( ${hit1:-0} - hit0 ))}" \
        >> "$out/comb.queryblocks.jsonl"
    fi
    run "$relay" connections connections --connections 5000 --seconds 30
  done
done

head -1 /proc/stat > "$out/procstat.end"

python3 - "$out" <<'EOF'
import json, os, statistics, sys
out = sys.argv[1]

def values(relay, name, field):
    path = os.path.join(out, f"{relay}.{name}.jsonl")
    found = []
    if os.path.exists(path):
        for line in open(path):
            try:
                v = json.loads(line).get(field)
            except ValueError:
                v = None
            if isinstance(v, (int, float)):
                found.append(float(v))
    return found

def med(relay, name, field):
    v = values(relay, name, field)
    return statistics.median(v) if v else None

def fmt(x):
    if x is None:
        return "n/a"
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.2f}" if abs(x) < 10 else f"{x:.1f}"

rows = []
def row(label, name, field, higher_better=True, comb_extra=None, sum_ratio=False):
    s, c = med("strfry", name, field), med("comb", name, field)
    if sum_ratio and c is not None:
        c = c + (med("comb", name, comb_extra) or 0)
    ratio = (c / s) if (s and c is not None) else None
    if ratio is not None and not higher_better:
        ratio = (s / c) if c else None
    c = med("comb", name, field)
    cv = fmt(c) if comb_extra is None else f"{fmt(c)} + {fmt(med('comb', name, comb_extra))}"
    rows.append((label, fmt(s), cv, fmt(ratio)))

row("ingest, 256 connections: events/s", "ingest", "events_per_s")
row("ingest: CPU µs per accepted event (relay; comb: relay + Postgres; ratio on the sum)", "ingest", "relay_cpu_us_per_event", False, "db_cpu_us_per_event", True)
# The relay's CPU per event in signature verifies, each round against the verify rate comb-bench
# measured in that round (the issue's yardstick: the same machine, the same minute).
def verifies(relay):
    path = os.path.join(out, f"{relay}.ingest.jsonl")
    per_round = []
    if os.path.exists(path):
        for line in open(path):
            try:
                d = json.loads(line)
                per_round.append(d["relay_cpu_us_per_event"] * d["verify_per_s_one_core"] / 1e6)
            except (ValueError, KeyError, TypeError):
                pass
    return statistics.median(per_round) if per_round else None
vs, vc = verifies("strfry"), verifies("comb")
rows.append(("same: relay CPU per accepted event in signature verifies (each round's verify rate)",
             fmt(vs), fmt(vc), fmt(vs / vc) if vs and vc else "n/a"))
for subs, rate, name in ((1000, 200, "fanout1000"), (200, 1000, "fanout200"), (10, 2000, "fanout10"),
                         (1000, 500, "fanout1000x500"), (200, 2500, "fanout200x2500"),
                         (1000, 1000, "fanout1000x1000"), (200, 5000, "fanout200x5000")):
    row(f"fan-out {subs:,} subscribers × {rate:,} ev/s: deliveries/s", name, "deliveries_per_s")
    row(f"same: p50 publish→deliver ms (ratio: strfry ÷ comb)", name, "p50_ms", False)
    row(f"same: CPU µs per delivery (relay; comb: relay + Postgres; ratio on the relay)", name, "relay_cpu_us_per_delivery", False, "db_cpu_us_per_delivery")
    row(f"same: delivered fraction (within the run's bound)", name, "delivered_fraction")
    row(f"same: generator CPU s", name, "bench_cpu_s", False)
for shape in ("authors_kinds_limit500", "e_tag", "kinds_since"):
    row(f"query {shape}, 4 connections: REQ/s", "query", f"{shape}_reqs_per_s")
    row(f"same: p99 ms (ratio: strfry ÷ comb)", "query", f"{shape}_p99_ms", False)
    row(f"same: CPU µs per event served (relay; comb: relay + Postgres; ratio on the sum)", "query", f"{shape}_relay_cpu_us_per_event", False, f"{shape}_db_cpu_us_per_event", True)
row("5,000 idle connections: relay KiB per connection (ratio: strfry ÷ comb)", "connections", "relay_kib_per_connection", False)

n = len(values("comb", "ingest", "events_per_s"))
print(f"\nMedians of {n} alternating round(s); ratio = comb ÷ strfry unless noted (> 1: comb better).\n")
print("| scenario (comb-bench) | strfry | comb | ratio |")
print("|---|---:|---:|---:|")
for r in rows:
    print("| " + " | ".join(r) + " |")

blocks = list(zip(values("comb", "queryblocks", "blocks_read"), values("comb", "queryblocks", "blocks_hit")))
if blocks:
    print("\ncomb's query phase, blocks of the query store read from outside shared buffers / found in them, per round: "
          + ", ".join(f"{r:,.0f} / {h:,.0f}" for r, h in blocks) + ".")
vacuums = values("comb", "vacuum", "vacuum_cpu_s")
if vacuums:
    print(f"\ncomb's writer store vacuumed before each query phase (what autovacuum would do there): "
          f"{', '.join(f'{v:.2f}' for v in vacuums)} s of Postgres CPU per round.")

def cpu_fields(name):
    try:
        return [int(x) for x in open(os.path.join(out, name)).read().split()[1:]]
    except (OSError, ValueError):
        return None
start, end = cpu_fields("procstat.start"), cpu_fields("procstat.end")
if start and end and len(start) >= 8 and len(end) >= 8:
    spent = [e - s for s, e in zip(start, end)]
    total = sum(spent[:8])  # user nice system idle iowait irq softirq steal
    if total > 0:
        print(f"\nHost during the rounds: {100 * spent[7] / total:.1f} % of CPU time stolen by other guests, "
              f"{100 * spent[3] / total:.1f} % idle.")
EOF

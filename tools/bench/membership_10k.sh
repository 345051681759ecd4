#!/usr/bin/env bash
# The membership figures of docs/benchmarks.md: a fresh relay whose community is seeded with
# 9,990 members by SQL, one priming join (it writes the first 13534 of about 10,000 members),
# then `comb-bench membership` with 32 joiners for 10 s.
#   source /tmp/bench-svc/env   # from: bash tools/services.sh start /tmp/bench-svc
#   bash tools/bench/membership_10k.sh PORT [RELAY_BIN]
set -euo pipefail
port=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
bench=$root/build/bin/comb-bench
name=members10k
bash "$root/tools/bench/bench_relay.sh" start $name "$port" ${2:+"$2"} >/dev/null
trap 'bash "$root/tools/bench/bench_relay.sh" stop $name' EXIT
db_url="${COMB_TEST_DATABASE_URL%/*}/bench_$name"
psql -q "$db_url" -c "INSERT INTO members (community_id, pubkey, role, added_by)
  SELECT 1, decode(md5(i::text) || md5(i::text || 'x'), 'hex'), 'member', 'bench-seed'
  FROM generate_series(1, 9990) i" >/dev/null
"$bench" membership --relay "ws://127.0.0.1:$port" --members 1 --events 1 --connections 1 \
  --seconds 5 >/dev/null
"$bench" membership --relay "ws://127.0.0.1:$port" --members 10000 --events 3000 \
  --connections 32 --seconds 10 --json

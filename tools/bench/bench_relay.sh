#!/usr/bin/env bash
# Starts comb-relay for comb-bench on a fresh database of its own, with raised limits (every
# client of a benchmark comes from 127.0.0.1, which has no exemption from the per-address bounds).
#   source /tmp/bench-svc/env   # from: bash tools/services.sh start /tmp/bench-svc
#   bash tools/bench/bench_relay.sh start NAME PORT [BIN]   # prints the relay PID
#   bash tools/bench/bench_relay.sh stop NAME
# Extra COMB_* settings in the environment pass through (e.g. COMB_WS_DEFLATE=false).
# BENCH_KEEP_DB=1 keeps the database of an earlier start of NAME (a preloaded store).
# BENCH_DB_SOCKET=1 reaches Postgres on its Unix socket (COMB_TEST_PG_DIR), as the run command's
# private Postgres is reached, instead of on 127.0.0.1.
set -euo pipefail
cmd=$1 name=$2
state=/tmp/comb-bench-relay-$name
base=${COMB_TEST_DATABASE_URL:?source the services env first}
case $cmd in
start)
  port=$3 bin=${4:-$(cd "$(dirname "$0")/../.." && pwd)/build/bin/comb-relay}
  mkdir -p "$state"
  db="bench_${name//-/_}"
  [ "${BENCH_KEEP_DB:-0}" = 1 ] ||
    PGOPTIONS=--client-min-messages=warning psql -q "$base" -o /dev/null -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
  url="${base%/*}/$db"
  if [ "${BENCH_DB_SOCKET:-0}" = 1 ]; then
    pg_port=${base##*:}
    url="postgresql://postgres@/$db?host=${COMB_TEST_PG_DIR:?source the services env first}&port=${pg_port%%/*}"
  fi
  data=$(mktemp -d)
  echo "$data" > "$state/data"
  ulimit -n "$(ulimit -Hn)"  # 10,000 connections need more than the default
  # The key outlives the data folder: a kept database refuses any other (relay_identity).
  COMB_RELAY_KEY_FILE="/tmp/comb-bench-relay-$name.key" \
  COMB_DATABASE_URL="$url" COMB_DATA_DIR="$data" COMB_LISTEN="127.0.0.1:$port" \
  COMB_EVENT_RATE=${COMB_EVENT_RATE:-100000} COMB_EVENT_BURST=${COMB_EVENT_BURST:-100000} \
  COMB_MAX_CONNECTIONS=${COMB_MAX_CONNECTIONS:-20000} COMB_LOG_LEVEL=${COMB_LOG_LEVEL:-warn} \
  COMB_FRAME_RATE=${COMB_FRAME_RATE:-1000000} COMB_FRAME_BURST=${COMB_FRAME_BURST:-1000000} \
  COMB_IP_FRAME_RATE=${COMB_IP_FRAME_RATE:-100000000} COMB_IP_FRAME_BURST=${COMB_IP_FRAME_BURST:-100000000} \
  COMB_IP_REQUEST_RATE=${COMB_IP_REQUEST_RATE:-1000000} COMB_IP_REQUEST_BURST=${COMB_IP_REQUEST_BURST:-1000000} \
  COMB_MAX_CONNECTIONS_PER_IP=${COMB_MAX_CONNECTIONS_PER_IP:-20000} \
  COMB_MAX_FILTERS_PER_IP=${COMB_MAX_FILTERS_PER_IP:-1000000} \
  COMB_MAX_FILTER_VALUES_PER_IP=${COMB_MAX_FILTER_VALUES_PER_IP:-10000000} \
    "$bin" > "$state/log" 2>&1 &
  echo $! > "$state/pid"
  for _ in $(seq 100); do
    curl -sf "http://127.0.0.1:$port/" -H 'Accept: application/nostr+json' >/dev/null 2>&1 && break
    sleep 0.1
  done
  cat "$state/pid"
  ;;
stop)
  [ -f "$state/pid" ] && kill "$(cat "$state/pid")" 2>/dev/null || true
  sleep 1
  [ -f "$state/data" ] && rm -rf "$(cat "$state/data")"
  rm -rf "$state"
  ;;
esac

# Sourced by the callgrind_*.sh scripts: a relay under callgrind, its counters zeroed once the
# setup is done and dumped after the run, so the dump holds only the measured phase.
# Needs: here (tools/bench), out (a folder for the wrapper and the dumps).

# Starts BIN under callgrind as bench relay NAME on PORT (metrics on PORT+1), stopped on exit;
# sets `pid`; returns once the relay answers NIP-11 (valgrind starts slowly: up to 60 s).
callgrind_start() {
  local name=$1 port=$2 bin=$3
  local wrapper=$out/relay.sh
  cat > "$wrapper" <<WRAP
#!/bin/sh
export COMB_METRICS_LISTEN=127.0.0.1:$((port + 1))
exec valgrind --tool=callgrind --callgrind-out-file=$out/callgrind.out.%p --dump-instr=no "$bin"
WRAP
  chmod +x "$wrapper"
  pid=$(bash "$here/bench_relay.sh" start "$name" "$port" "$wrapper")
  trap "bash '$here/bench_relay.sh' stop '$name' >/dev/null 2>&1 || true" EXIT
  for _ in $(seq 120); do
    curl -sf "http://127.0.0.1:$port/" -H 'Accept: application/nostr+json' >/dev/null 2>&1 && break
    sleep 0.5
  done
}

# Waits (at most TENTHS tenths of a second) until the relay on PORT has counted COUNT client
# messages of TYPE (REQ, AUTH, ...); past that it goes on, as the measured phase has begun.
callgrind_await_messages() {
  local port=$1 type=$2 count=$3 tenths=$4 seen
  for _ in $(seq "$tenths"); do
    seen=$(curl -s "http://127.0.0.1:$((port + 1))/metrics" 2>/dev/null \
      | awk -v t="$type" '$0 ~ "^comb_messages_total\\{type=\"" t "\"\\}" {print $2}')
    [ "${seen:-0}" -ge "$count" ] && return 0
    sleep 0.1
  done
  return 0
}

# Zeroes the counters, waits for the load generator BENCH_PID, dumps; sets `dump` (its file)
# and `ir` (the relay's instructions, all threads, over the measured phase).
callgrind_measure() {
  local bench_pid=$1
  callgrind_control -z "$pid" >/dev/null
  wait "$bench_pid" || true
  callgrind_control -d "$pid" >/dev/null
  sleep 1
  dump=$(ls -t "$out"/callgrind.out.* | head -1)
  ir=$(awk '/^summary:|^totals:/{print $2; exit}' "$dump")
}

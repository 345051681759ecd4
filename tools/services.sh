#!/usr/bin/env bash
# Private, loopback-only Postgres and Redis servers for the tests.
#   tools/services.sh start DIR   starts both under DIR and writes DIR/env (COMB_TEST_* variables)
#   tools/services.sh stop DIR    stops both and removes DIR
# Postgres refuses to run as root, so as root it runs as the `postgres` system user.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/postgres.sh"
command="${1:?start or stop}"
dir="${2:?directory}"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  mkdir -p "$dir"
  chmod 755 "$dir"
  local pg_port redis_port attempt
  # A free port can be taken by another process before the server binds it (a shared CI
  # machine): each server gets three tries, on a fresh port each.
  for attempt in 1 2 3; do
    pg_port=$(free_port)
    comb_pg_start "$dir/postgres" "$pg_port" && break
    [ "$attempt" -lt 3 ] || return 1
    echo "services: postgres did not start on 127.0.0.1:$pg_port, trying another port" >&2
  done
  mkdir -p "$dir/redis"
  for attempt in 1 2 3; do
    redis_port=$(free_port)
    rm -f "$dir/redis/redis.pid"
    redis-server --bind 127.0.0.1 --port "$redis_port" --save '' --appendonly no --daemonize yes \
      --pidfile "$dir/redis/redis.pid" --logfile "$dir/redis/redis.log" --dir "$dir/redis"
    # redis-server writes its pid file only once it has bound the port.
    for _ in $(seq 50); do
      [ -f "$dir/redis/redis.pid" ] && redis-cli -p "$redis_port" ping >/dev/null 2>&1 && break
      sleep 0.1
    done
    [ -f "$dir/redis/redis.pid" ] && break
    [ "$attempt" -lt 3 ] || return 1
    echo "services: redis did not start on 127.0.0.1:$redis_port, trying another port" >&2
  done
  cat > "$dir/env" <<ENV
export COMB_TEST_DATABASE_URL='postgresql://postgres@127.0.0.1:$pg_port/postgres'
export COMB_TEST_PG_DIR='$dir/postgres'
export COMB_TEST_REDIS_URL='redis://127.0.0.1:$redis_port'
export COMB_TEST_REDIS_PORT='$redis_port'
ENV
  echo "services: postgres on 127.0.0.1:$pg_port, redis on 127.0.0.1:$redis_port"
}

# Redis opens its log file again for every line it logs, so the folder is removed only once it
# has exited: a line logged while `rm -rf` runs would leave a new log behind and fail the removal.
stop_redis() {
  local pid
  pid=$(cat "$dir/redis/redis.pid" 2>/dev/null) || return 0
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  echo "services: redis (pid $pid) did not exit within 10 s" >&2
}

stop() {
  [ -d "$dir" ] || return 0
  comb_pg_stop "$dir/postgres" || true
  stop_redis
  rm -rf "$dir"
}

case "$command" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac

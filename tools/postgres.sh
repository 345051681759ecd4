#!/usr/bin/env bash
# Shared by the run and test commands: a private Postgres 15 cluster in a folder, listening on
# loopback only. Sourced, not run.
COMB_PG_BIN=${COMB_PG_BIN:-/usr/lib/postgresql/15/bin}

# Runs a Postgres binary as the postgres system user when we are root (initdb refuses root).
comb_pg_as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

# comb_pg_start DIR PORT [socket-only]: creates the cluster on first use, then starts it if it is
# not running. With socket-only it listens on no TCP port at all, only on a Unix socket in DIR,
# which is mode 0700: only its owner (and root) can reach it, so trust authentication there
# admits no other local user.
comb_pg_start() {
  local dir="$1" port="$2" mode="${3:-tcp}"
  mkdir -p "$dir"
  [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$dir"
  local listen="-c listen_addresses=127.0.0.1"
  if [ "$mode" = "socket-only" ]; then
    chmod 700 "$dir"
    listen="-c listen_addresses=''"
  fi
  if [ ! -f "$dir/data/PG_VERSION" ]; then
    comb_pg_as_owner "$COMB_PG_BIN/initdb" -D "$dir/data" -A trust -U postgres -E UTF8 \
      --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; return 1; }
  fi
  if comb_pg_as_owner "$COMB_PG_BIN/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
    return 0
  fi
  comb_pg_as_owner "$COMB_PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "$listen -p $port -k $dir -c max_connections=200" start >/dev/null \
    || { tail -20 "$dir/server.log" >&2; return 1; }
}

comb_pg_stop() {
  local dir="$1"
  [ -f "$dir/data/PG_VERSION" ] || return 0
  comb_pg_as_owner "$COMB_PG_BIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1
}

# comb_pg_pids URL: every process of the Postgres serving URL, the postmaster and its children,
# comma-separated (comb-bench --db-pids).
comb_pg_pids() {
  local pm
  pm=$(head -1 "$(psql "$1" -qAtc "SHOW data_directory")/postmaster.pid")
  echo "$pm$(pgrep -P "$pm" | sed 's/^/,/' | tr -d '\n')"
}

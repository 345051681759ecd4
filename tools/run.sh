#!/usr/bin/env bash
# The run command: installs what is missing, builds, and runs comb-relay at ws://127.0.0.1:7777
# (or COMB_LISTEN). When no database URL is configured (COMB_DATABASE_URL, the config file's
# database_url, or a flag) it creates, on first use, and starts a private Postgres cluster under
# the data folder (data_dir, default ./var), which keeps running for the next start;
# `tools/run.sh --stop-database` stops it. Other arguments go to comb-relay.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
source "$top/tools/postgres.sh"
relay="$top/build/bin/comb-relay"

# What the configuration says, wherever it says it (file, environment, flags): the environment
# set below must not override the file's data folder or database.
configured() { # NAME: the effective value of a setting (a secret shows as ********)
  "$relay" --print-config "${relay_args[@]}" 2>/dev/null | sed -n "s/^$1 = \"\(.*\)\"  # .*/\1/p" | head -1
}
relay_args=("$@")

if [ "${1:-}" = "--stop-database" ]; then
  relay_args=()
  data_dir=${COMB_DATA_DIR:-./var}
  [ -x "$relay" ] && data_dir=$(configured data_dir)
  comb_pg_stop "$(realpath -m "$data_dir")/postgres" && echo "comb: private Postgres stopped"
  exit 0
fi

bash "$top/tools/build.sh" --target comb-relay >&2
"$relay" --print-config "$@" > /dev/null || exit 2 # a bad setting: comb-relay said which
data_dir=$(configured data_dir)
[ -n "$data_dir" ] || exec "$relay" "$@" # --help, --version: nothing to set up
export COMB_DATA_DIR=$(realpath -m "$data_dir")
pg_dir="$COMB_DATA_DIR/postgres"

if [ -z "$(configured database_url)" ]; then
  mkdir -p "$pg_dir"
  if [ "$(id -u)" -eq 0 ] && ! runuser -u postgres -- test -w "$COMB_DATA_DIR" -o -x "$COMB_DATA_DIR" 2>/dev/null; then
    chmod o+x "$COMB_DATA_DIR" 2>/dev/null || true
  fi
  if [ "$(id -u)" -eq 0 ] && ! runuser -u postgres -- test -x "$pg_dir/.." 2>/dev/null; then
    echo "comb: the postgres user cannot reach $COMB_DATA_DIR (a parent folder is private);" >&2
    echo "      set COMB_DATA_DIR to a folder it can traverse, e.g. /var/lib/comb" >&2
    exit 1
  fi
  if [ ! -f "$pg_dir/port" ]; then
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' > "$pg_dir/port"
  fi
  port=$(cat "$pg_dir/port")
  # No TCP port: other local users cannot reach it (its socket folder is private to its owner).
  if [ ${#pg_dir} -gt 90 ]; then
    echo "comb: $pg_dir is too long a path for a Unix socket; set COMB_DATA_DIR shorter" >&2
    exit 1
  fi
  comb_pg_start "$pg_dir" "$port" socket-only
  export COMB_DATABASE_URL="postgresql://postgres@/postgres?host=$pg_dir&port=$port"
  echo "comb: private Postgres on the Unix socket in $pg_dir (no TCP port)" >&2
fi

exec "$relay" "$@"

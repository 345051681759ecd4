#!/usr/bin/env bash
# The install as an operator runs it, into a staging folder (DESTDIR): every file in its place,
# then the installed relay run once (--version, --check-config on the installed config).
# Usage: tools/check_install.sh [build folder]. Called by tools/test.sh.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build="${1:-${COMB_BUILD_DIR:-$top/build}}"
stage=$(mktemp -d /tmp/comb-stage.XXXXXX)
trap 'rm -rf "$stage"' EXIT
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
DESTDIR="$stage" cmake --install "$build" > "$stage.log" 2>&1 || { cat "$stage.log"; exit 1; }
rm -f "$stage.log"
root="$stage$prefix"
for file in bin/comb-relay bin/comb-admin bin/comb-watch bin/comb-bench \
            share/doc/comb/comb.example.toml lib/systemd/system/comb-relay.service \
            lib/sysusers.d/comb.conf lib/tmpfiles.d/comb.conf; do
  [ -e "$root/$file" ] || { echo "install: missing $prefix/$file" >&2; exit 1; }
done
[ -f "$stage/etc/comb/comb.toml" ] || { echo "install: missing /etc/comb/comb.toml" >&2; exit 1; }
unit="$root/lib/systemd/system/comb-relay.service"
grep -qx "StateDirectory=comb" "$unit" || { echo "install: unit without StateDirectory=comb" >&2; exit 1; }
grep -qx "ExecStart=$prefix/bin/comb-relay" "$unit" || { echo "install: unit runs another binary" >&2; exit 1; }
"$root/bin/comb-relay" --version
# The database is the operator's to name (COMB_DATABASE_URL, or database_url in the file).
env -u COMB_CONFIG COMB_DATABASE_URL=postgresql://comb@127.0.0.1/comb \
  "$root/bin/comb-relay" --config "$stage/etc/comb/comb.toml" --check-config
echo "install: staged install under $prefix checked"

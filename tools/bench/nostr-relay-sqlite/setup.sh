#!/usr/bin/env bash
# Installs the comparison relay of docs/benchmarks.md into this folder: the npm packages, then
# better-sqlite3's native module built from source with npm's own node-gyp against Debian's
# Node headers (its install script would download a prebuilt binary, which is not reachable).
set -euo pipefail
cd "$(dirname "$0")"
npm install --no-audit --no-fund >/dev/null
gyp=$(dirname "$(readlink -f "$(command -v npm)")")/../node_modules/node-gyp/bin/node-gyp.js
for module in $(find node_modules -type d -name better-sqlite3 -path '*node_modules/better-sqlite3'); do
  [ -f "$module/build/Release/better_sqlite3.node" ] && continue
  (cd "$module" && npm_config_nodedir=/usr node "$gyp" rebuild --release -j 2 >/dev/null)
done
echo "ready: node $(pwd)/server.mjs PORT DB_FILE"

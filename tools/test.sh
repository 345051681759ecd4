#!/usr/bin/env bash
# The test command: installs what is missing, builds, checks `cmake --install` into a staging
# folder (tools/check_install.sh), starts private Postgres and Redis servers,
# fuzzes the frame parser for a bounded time, then runs every ctest tier
# (unit, actor, integration, multiprocess, e2e). Exits non-zero if anything fails.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
bash tools/build.sh
bash tools/check_install.sh

services=$(mktemp -d /tmp/comb-test-services.XXXXXX)
trap 'bash "$top/tools/services.sh" stop "$services"' EXIT
bash tools/services.sh start "$services"
source "$services/env"

if [ -f tests/e2e/package.json ] && [ ! -d tests/e2e/node_modules/nostr-tools ]; then
  (cd tests/e2e && npm ci --no-audit --no-fund --loglevel=error)
fi

bash tools/fuzz.sh "${COMB_FUZZ_SECONDS:-60}"

cd "${COMB_BUILD_DIR:-$top/build}"
ctest --output-on-failure --timeout 600 -j "${COMB_TEST_JOBS:-1}" "$@"

#!/usr/bin/env bash
# Configures (once) and builds comb into build/ incrementally. Binaries land in build/bin/.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
bash "$top/tools/deps.sh"
build="${COMB_BUILD_DIR:-$top/build}"
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$top" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCOMB_WERROR="$werror" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON
fi
# Beast/coroutine translation units need about 2 GB each; two jobs fit the 2-core machines.
cmake --build "$build" -j "${COMB_BUILD_JOBS:-2}" "$@"

#!/usr/bin/env bash
# The main demo, from a fresh Debian 12 machine (as root): installs what is
# missing, configures and builds, then runs the two-process camera-ingest demo.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${PINNEDFLOW_BUILD_DIR:-$top/build}

bash "$top/tools/setup.sh" "$build"
exec bash "$top/tools/run-demo.sh" "$build"

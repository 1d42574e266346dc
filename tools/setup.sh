#!/usr/bin/env bash
# Installs what is missing (Debian 12, as root), configures and builds.
# Usage: tools/setup.sh [BUILD_DIR]   (default: build)
# Sourced by tools/demo.sh and tools/test.sh; safe to run again.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$top/build}

mapfile -t wanted < <(grep -v -e '^#' -e '^$' "$top/tools/packages.txt")
missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" "$top" -Dwerror=true -Dtests=enabled
fi
ninja -C "$build"

#!/usr/bin/env bash
# Formats C sources in GStreamer's style: GNU indent with the options of
# GStreamer's gst-indent, applied to .c files as its pre-commit hook does.
# Usage: tools/indent.sh [FILE...] (default: all tracked .c files). Needs GNU indent.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"
if [ $# -eq 0 ]; then
  mapfile -t files < <(git ls-files '*.c')
else
  files=("$@")
fi
# GNU indent is not idempotent in one pass: run it twice, as gst-indent does.
for _ in 1 2; do
  indent --braces-on-if-line --case-brace-indentation0 --case-indentation2 \
    --braces-after-struct-decl-line --line-length80 --no-tabs --cuddle-else \
    --dont-line-up-parentheses --continuation-indentation4 --honour-newlines \
    --tab-size8 --indent-level2 --leave-preprocessor-space "${files[@]}"
done
for f in "${files[@]}"; do rm -f "$f~"; done

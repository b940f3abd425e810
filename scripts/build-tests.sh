#!/usr/bin/env bash
# Builds the package and its tests (`make test`), and fails on any compiler warning in the
# project's own code (Sources/, Tests/): a fresh clone — CI — builds everything, so its
# build must be warning-free. A warm build checks the files it compiles again.
set -euo pipefail
swift="${SWIFT:-swift}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$swift" build --build-tests 2>&1 | tee "$log"
pattern="^($(pwd)/)?(Sources|Tests)/[^:]+:[0-9]+:[0-9]+: warning:"
if grep -qE "$pattern" "$log"; then
  echo "error: the project's own code has compiler warnings; it must build without any:" >&2
  grep -E "$pattern" "$log" | sort -u >&2
  exit 1
fi

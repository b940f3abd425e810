#!/usr/bin/env bash
# Builds the DocC documentation of the Concord module (`make docs`, part of `make test`):
# the articles in Sources/Concord/Concord.docc and the code they show, the snippets in
# Snippets/ (one executable per file, which a plain `swift build` compiles). Fails if a
# snippet compiles with a warning or does not run to the end (each checks the outcomes its
# article states, in a temporary folder it deletes, with no network request), or if DocC
# warns: every link and every @Snippet reference must resolve. The archive is written to
# .build/plugins/Swift-DocC/outputs/Concord.doccarchive.
set -euo pipefail
swift="${SWIFT:-swift}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# 1. Compile the snippets. They are touched first so that a warm build compiles them again
#    and shows their warnings, if any.
touch Snippets/*.swift
"$swift" build 2>&1 | tee "$log"
pattern="^($(pwd)/)?Snippets/[^:]+:[0-9]+:[0-9]+: warning:"
if grep -qE "$pattern" "$log"; then
  echo "error: the snippets have compiler warnings; they must build without any:" >&2
  grep -E "$pattern" "$log" | sort -u >&2
  exit 1
fi

# 2. Run them.
bin=$("$swift" build --show-bin-path)
for file in Snippets/*.swift; do
  snippet=$(basename "$file" .swift)
  echo "running snippet $snippet"
  if ! "$bin/$snippet" >"$log" 2>&1; then
    cat "$log" >&2
    echo "error: snippet $snippet failed" >&2
    exit 1
  fi
done

# 3. Generate the documentation; DocC's warnings are errors, and any other warning line
#    fails too — except SwiftPM's notice about files that a dependency's checkout leaves
#    unhandled (each listed below it, under .build/checkouts/), which is not about this
#    package.
started=$(date +%s)
"$swift" package --disable-sandbox generate-documentation --target Concord --warnings-as-errors 2>&1 | tee "$log"
if ! awk '
  listing && /^[ \t]/ { if ($0 !~ /\/checkouts\//) { print; bad = 1 } next }
  { listing = 0 }
  /^warning: .*: found [0-9]+ file\(s\) which are unhandled/ { listing = 1; next }
  /warning:/ { print; bad = 1 }
  END { exit bad }
' "$log" >&2; then
  echo "error: documentation generation printed the warnings above; it must print none" >&2
  exit 1
fi
echo "documentation built in $(( $(date +%s) - started )) s: .build/plugins/Swift-DocC/outputs/Concord.doccarchive"

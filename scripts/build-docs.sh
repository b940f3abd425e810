#!/usr/bin/env bash
# Builds the DocC documentation (`make docs`, part of `make test`): one combined archive of
# the modules an app imports — the articles in Sources/Concord/Concord.docc and the code
# they show, the snippets in Snippets/ (one executable per file, which a plain `swift build`
# compiles), and the API reference of ConcordCore, ConcordCodec, ConcordCrypto,
# ConcordStore, ConcordRemote and ConcordSync, whose catalogs (Sources/<module>/<module>.docc)
# group each main type's members by task — and of the other products: ConcordWebDAV and
# ConcordS3 with the ConcordHTTP they share, and the test kit ConcordTesting. Fails if a
# snippet compiles with a warning or does not run to the end (each checks the outcomes its
# article states, in a temporary folder it deletes, with no network request), if DocC warns
# — every symbol link, in the articles and in the doc comments alike, and every @Snippet
# reference must resolve — or if the reference lacks a module's page, the topic groups of
# the HTTP modules' and the test kit's pages, or the grouped pages of Store, StoredRecord,
# SyncEngine, AutoSync or Remote. The archive is written to
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
#    package. The plugin's combined documentation builds each module's archive in
#    dependency order, each with the archives of the modules it imports, so that a link to
#    another module's symbol (``/ConcordStore/Store``, with the leading slash) resolves and
#    a broken one fails; then it merges them into one archive.
archive=.build/plugins/Swift-DocC/outputs/Concord.doccarchive
targets=()
for target in ConcordCore ConcordCodec ConcordCrypto ConcordStore ConcordRemote ConcordHTTP ConcordWebDAV ConcordS3 ConcordSync ConcordTesting Concord; do
  targets+=(--target "$target")
done
rm -rf "$archive"
started=$(date +%s)
"$swift" package --disable-sandbox generate-documentation --enable-experimental-combined-documentation \
  "${targets[@]}" --warnings-as-errors 2>&1 | tee "$log"
if ! awk '
  listing && /^[ \t]/ { if ($0 !~ /\/checkouts\//) { print; bad = 1 } next }
  { listing = 0 }
  /^warning: .*: found [0-9]+ file\(s\) which are unhandled/ { listing = 1; next }
  /warning:/ || /^error:/ { print; bad = 1 }
  END { exit bad }
' "$log" >&2; then
  echo "error: documentation generation printed the warnings or errors above; it must print none" >&2
  exit 1
fi

# 4. The reference holds a page for each type an app uses, with its members grouped by task
#    (the topic groups of the catalogs' Extension/ pages): removing a page or its groups
#    fails here.
missing=0
check_page() {  # module, type ("" for the module's own page), topic groups…
  local page="$archive/data/documentation/$1${2:+/$2}.json"
  shift 2
  if [ ! -f "$page" ]; then
    echo "error: the reference has no page $page" >&2
    missing=1
    return
  fi
  local group
  for group in "$@"; do
    # A topic group is an object with its title and its anchor (the title, spaces made
    # hyphens), in no fixed key order.
    if ! grep -qF "\"topicSections\":" "$page" || ! grep -qF "\"title\":\"$group\"" "$page" \
      || ! grep -qF "\"anchor\":\"${group// /-}\"" "$page"; then
      echo "error: $page has no topic group \"$group\"" >&2
      missing=1
    fi
  done
}
check_page concordstore store "Opening a store" "Writing" "Reading" "Typed records" "Files" "Conflicts" "Change events"
check_page concordstore storedrecord "Saving and loading"
check_page concordsync syncengine "Syncing" "Compaction" "Replicas" "Doctor"
check_page concordsync autosync "Running it" "Observing it"
check_page concordremote remote "Whole objects" "Listing" "Streaming"
check_page concordhttp "" "Requests" "Retries and bounds" "Streaming XML"
check_page concordwebdav "" "The remote" "PROPFIND answers"
check_page concords3 "" "The remote" "Signing"
check_page concordtesting "" "Replayable runs" "Remotes that misbehave" "Checking a remote" "Simulating replicas"
for module in concord concordcore concordcodec concordcrypto concordstore concordremote concordhttp concordwebdav concords3 concordsync concordtesting; do
  [ -f "$archive/data/documentation/$module.json" ] || { echo "error: the archive has no $module module page" >&2; missing=1; }
done
if [ "$missing" -ne 0 ]; then
  echo "error: the API reference is incomplete (see above)" >&2
  exit 1
fi
echo "documentation built in $(( $(date +%s) - started )) s: $archive"

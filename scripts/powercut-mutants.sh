#!/usr/bin/env bash
# Mutation check of the power-cut enumeration (`make powercut-mutants`; not part of
# `make test`): each mutant removes one fsync, fdatasync or folder fsync from the blob
# store, the folder remote or the store's SQLite settings — one line of the source changed
# in place —, rebuilds the crash child (-j 1), and runs the power-cut tests
# (`--filter aPowerCut`, make test's strides). A mutant is killed when they fail; every one
# must be. The test process itself is not rebuilt: only the crash child, which the tests cut
# off, runs the mutated code; the checks run the code as it is.
#
# With POWERCUT_MUTANTS_KILL=1 each mutant also runs the kill enumeration
# (`aKillAtEveryIOCall`): it should pass, a kill keeping the page cache — the power cut is
# what catches a missing fsync.
#
#   scripts/powercut-mutants.sh [ID …]     (all mutants when no ID is given)
#
# Every source file is restored on exit (even on ^C), and the crash child rebuilt from it.
# Prints a table, also written to .build/powercut-mutants.txt. Exits 1 if a mutant survived.
set -euo pipefail
cd "$(dirname "$0")/.."
swift="${SWIFT:-swift}"
filter="${POWERCUT_MUTANTS_FILTER:-aPowerCut}"
kill_filter='aKillAtEveryIOCall'

# ID <tab> file <tab> occurrence <tab> text in that line <tab> what replaces the text
mutants=$(cat <<'EOF'
blob-file-fsync	Sources/ConcordStore/Blobs/BlobStore.swift	1	guard fsync(output) == 0 else { throw Self.ioError("fsync \(temporary)") }	_ = output
blob-shard-folder-parent-fsync	Sources/ConcordStore/Blobs/BlobStore.swift	1	try Self.syncDirectory(directory)	_ = directory
blob-rename-folder-fsync	Sources/ConcordStore/Blobs/BlobStore.swift	1	try Self.syncDirectory(folder)	_ = folder
blob-directory-parent-fsync	Sources/ConcordStore/Blobs/BlobStore.swift	1	try Self.syncDirectory(parent.isEmpty ? "." : parent)	_ = parent
blob-export-file-fsync	Sources/ConcordStore/Blobs/BlobStore.swift	2	guard fsync(output) == 0 else { throw Self.ioError("fsync \(temporary)") }	_ = output
blob-export-folder-fsync	Sources/ConcordStore/Blobs/BlobStore.swift	1	try Self.syncDirectory(folder.isEmpty ? "." : folder)	_ = folder
blob-every-folder-fsync	Sources/ConcordStore/Blobs/BlobStore.swift	1	guard fsync(descriptor) == 0 else { throw ioError("fsync \(path)") }	_ = descriptor
folder-object-fsync	Sources/ConcordRemote/Folder/FolderRemote+Writer.swift	1	if let error = POSIX.sync(descriptor) { throw remote.failure("write", path, error) }	_ = descriptor
folder-rename-folder-fsync	Sources/ConcordRemote/Folder/FolderRemote+Writer.swift	1	if let error = POSIX.syncFolder(descriptor: folder) { throw remote.failure("write", path, error) }	_ = folder
folder-new-folder-parent-fsync	Sources/ConcordRemote/Folder/FolderRemote+Walk.swift	1	if let error = POSIX.syncFolder(descriptor: descriptor) {	if let error = Optional<POSIX.Errno>.none {
folder-every-fsync	Sources/ConcordRemote/Folder/POSIX.swift	1	while fsync(descriptor) != 0 {	while descriptor < 0 {
folder-every-folder-fsync	Sources/ConcordRemote/Folder/POSIX.swift	1	if let error = sync(descriptor), error.code != EINVAL, error.code != ENOTSUP { return error }	_ = descriptor
sqlite-synchronous-off	Sources/ConcordStore/Store/Store.swift	1	PRAGMA synchronous = FULL	PRAGMA synchronous = OFF
sqlite-synchronous-normal	Sources/ConcordStore/Store/Store.swift	1	PRAGMA synchronous = FULL	PRAGMA synchronous = NORMAL
EOF
)

selected=("$@")
backup=$(mktemp -d)
table=.build/powercut-mutants.txt
mkdir -p .build
# Every file a mutant touches, saved, and restored whatever happens.
files=$(printf '%s\n' "$mutants" | cut -f2 | sort -u)
for source in $files; do mkdir -p "$backup/$(dirname "$source")" && cp "$source" "$backup/$source"; done
restore() {
  local source
  for source in $files; do cp "$backup/$source" "$source"; done
}
finish() {
  restore
  echo "sources restored; rebuilding the crash child from them" >&2
  "$swift" build -j 1 --product ConcordCrashChild >/dev/null 2>&1 || echo "warning: the crash child did not rebuild; run swift build" >&2
  rm -rf "$backup"
}
trap finish EXIT
trap 'exit 130' INT TERM

# Replaces `text` in the line holding its `occurrence`th appearance in `file` (exactly one
# line changes; fails if the text is not there).
mutate() {
  python3 - "$@" <<'PY'
import sys
file, occurrence, text, replacement = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
lines = open(file).read().split("\n")
hits = [index for index, line in enumerate(lines) if text in line]
if len(hits) < occurrence:
    sys.exit(f"{file}: '{text}' appears {len(hits)} times, not {occurrence}")
index = hits[occurrence - 1]
lines[index] = lines[index].replace(text, replacement, 1)
open(file, "w").write("\n".join(lines))
print(f"{file}:{index + 1}: {lines[index].strip()}")
PY
}

# Runs the tests matching $1; prints the names of those that failed, or "build failed".
run_tests() {
  local output
  output=$(mktemp)
  if "$swift" test --skip-build --filter "$1" >"$output" 2>&1; then
    echo "passed"
  else
    local failed
    failed=$(grep -oE '✘ Test [A-Za-z]+\(\) (failed|recorded)' "$output" | grep -oE '[A-Za-z]+\(\)' | sort -u | tr '\n' ' ')
    echo "FAILED ${failed:-(see output)}"
  fi
  rm -f "$output"
}

echo "building the crash child and the tests, as they are" >&2
"$swift" build -j 1 --build-tests >/dev/null
echo "baseline: the power-cut tests, no mutant" >&2
baseline=$(run_tests "$filter")
if [[ $baseline != passed ]]; then
  echo "error: the power-cut tests fail without a mutant: $baseline" >&2
  exit 2
fi

{
  printf '%-32s %-62s %-8s %s\n' "mutant" "line" "power" "${POWERCUT_MUTANTS_KILL:+kill enumeration}"
} | tee "$table"
survived=0
while IFS=$'\t' read -r id file occurrence text replacement; do
  if [[ ${#selected[@]} -gt 0 && ! " ${selected[*]} " =~ " $id " ]]; then continue; fi
  restore
  line=$(mutate "$file" "$occurrence" "$text" "$replacement")
  started=$SECONDS
  if ! "$swift" build -j 1 --product ConcordCrashChild >/dev/null 2>&1; then
    printf '%-32s %-62s %-8s\n' "$id" "${line%%: *}" "no build" | tee -a "$table"
    survived=$((survived + 1))
    continue
  fi
  power=$(run_tests "$filter")
  if [[ $power == passed ]]; then verdict="SURVIVED"; survived=$((survived + 1)); else verdict="killed"; fi
  kill_result=""
  if [[ -n ${POWERCUT_MUTANTS_KILL:-} ]]; then kill_result=$(run_tests "$kill_filter"); fi
  printf '%-32s %-62s %-8s %s\n' "$id" "${line%%: *}" "$verdict" "$kill_result" | tee -a "$table"
  echo "  $line" >&2
  echo "  power-cut tests: $power ($((SECONDS - started)) s)" >&2
done <<<"$mutants"
echo "table: $table" >&2
[[ $survived -eq 0 ]]

#!/usr/bin/env bash
# `make bench-scale`: a new replica bootstraps from a snapshot of SCALE_RECORDS (1,000,000)
# records × 10 fields through a folder remote, against raw SQLite inserting the same rows in
# one transaction (Benchmarks/Tools/BootstrapBenchmark; each step its own process, so each
# peak resident size is its own). SCALE_RUNS (3) runs of each, on tmpfs (/dev/shm) and on
# the disk (SCALE_DISK_DIR, /var/tmp); prints the medians, the ratio join ÷ raw (target ≤ 2)
# and the join's largest peak resident size (target < 256 MiB), and the writer's side: the
# time and largest peak resident size of writing a new snapshot of the records.
set -euo pipefail
cd "$(dirname "$0")/.."
swift="${SWIFT:-swift}"
records="${SCALE_RECORDS:-1000000}"
runs="${SCALE_RUNS:-3}"
"$swift" build -c release --package-path Benchmarks --product BootstrapBenchmark
binary="$("$swift" build -c release --package-path Benchmarks --show-bin-path)/BootstrapBenchmark"

median() { sort -n | awk '{ values[NR] = $1 } END { print values[int((NR + 1) / 2)] }'; }
field() { sed -n "s/.* $1=\([0-9]*\).*/\1/p"; }

summary=()
for base in /dev/shm "${SCALE_DISK_DIR:-/var/tmp}"; do
  directory="$base/concord-scale-$$"
  trap 'rm -rf "$directory"' EXIT
  echo "== $base: $records records × 10 fields"
  "$binary" prepare "$directory" "$records"
  joins=()
  raws=()
  rss=()
  snapshots=()
  writer_rss=()
  for _ in $(seq "$runs"); do
    line=$("$binary" snapshot "$directory"); echo "$line"
    snapshots+=("$(echo "$line" | field ms)"); writer_rss+=("$(echo "$line" | field peak_rss_mib)")
    line=$("$binary" join "$directory"); echo "$line"
    joins+=("$(echo "$line" | field ms)"); rss+=("$(echo "$line" | field peak_rss_mib)")
    line=$("$binary" raw "$directory" "$records"); echo "$line"
    raws+=("$(echo "$line" | field ms)")
  done
  join=$(printf '%s\n' "${joins[@]}" | median)
  raw=$(printf '%s\n' "${raws[@]}" | median)
  peak=$(printf '%s\n' "${rss[@]}" | sort -n | tail -n 1)
  ratio=$(awk -v j="$join" -v r="$raw" 'BEGIN { printf "%.2f", j / r }')
  snapshot=$(printf '%s\n' "${snapshots[@]}" | median)
  writer_peak=$(printf '%s\n' "${writer_rss[@]}" | sort -n | tail -n 1)
  summary+=("$base: join $join ms, raw insert $raw ms, join ÷ raw $ratio (target ≤ 2); join peak RSS $peak MiB (target < 256); writing a snapshot $snapshot ms, peak RSS $writer_peak MiB")
  rm -rf "$directory"
done
echo
echo "== bootstrap at scale ($records records × 10 fields, medians of $runs)"
printf '%s\n' "${summary[@]}"

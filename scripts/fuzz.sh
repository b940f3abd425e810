#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer targets of Fuzz/ (one binary, ConcordFuzz) with the
# address sanitizer and coverage instrumentation, then runs every target for FUZZ_SECONDS
# (default 60) from its seed corpus in Fuzz/Corpus/<target>/. Fails if any target crashes,
# trips an oracle or the sanitizer, times out on one input (FUZZ_TIMEOUT seconds, default
# 10) or runs out of memory (FUZZ_RSS_MB, default 2048); a failing input is kept in
# Fuzz/.build-fuzz-runs/crashes/<target>/. Prints each target's executions per second.
#
#   FUZZ_SECONDS=600 make fuzz                      longer runs
#   FUZZ_CPU_SECONDS=3600 make fuzz                 runs of FUZZ_SECONDS each, repeated until a
#                                                   target has used this much CPU time (for a
#                                                   campaign beside other work, e.g. under nice)
#   FUZZ_TARGETS="delta snapshot" make fuzz         some targets only
#   scripts/fuzz.sh --build-only                    build, run nothing
#
# New inputs libFuzzer finds go to Fuzz/.build-fuzz-runs/corpus/<target>/ (not checked in); a
# crashing input, once fixed, becomes a fixture in Tests/Vectors/fuzz/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
swift="${SWIFT:-swift}"
seconds="${FUZZ_SECONDS:-60}"
cpu_goal="${FUZZ_CPU_SECONDS:-0}"
timeout="${FUZZ_TIMEOUT:-10}"
rss_mb="${FUZZ_RSS_MB:-2048}"
scratch=Fuzz/.build-fuzz
# What the runs leave, beside the build and not in it: SwiftPM owns its scratch folder's
# names (it empties `artifacts/` on every build), and a crashing input must survive the next one.
runs=Fuzz/.build-fuzz-runs

# libFuzzer's driver without its main(), from the toolchain's clang runtime.
toolchain=$(dirname "$(dirname "$(readlink -f "$(command -v "$swift")")")")
runtime=$(ls "$toolchain"/lib/clang/*/lib/linux/libclang_rt.fuzzer_no_main-"$(uname -m)".a 2>/dev/null | head -n 1)
if [ -z "$runtime" ]; then
  echo "error: no libclang_rt.fuzzer_no_main in $toolchain/lib/clang/*/lib/linux" >&2
  exit 1
fi

# SwiftPM cannot link `-sanitize=fuzzer` into an executable: instrument for coverage,
# sanitize addresses, and link the driver, which the binary calls (LLVMFuzzerRunDriver).
echo "== building Fuzz/ (release, address sanitizer, coverage)"
"$swift" build --package-path Fuzz/ConcordFuzz --scratch-path "$scratch" -c release --product ConcordFuzz \
  -Xswiftc -sanitize=address \
  -Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp \
  -Xlinker "$runtime" -Xlinker -lstdc++
binary="$("$swift" build --package-path Fuzz/ConcordFuzz --scratch-path "$scratch" -c release --show-bin-path)/ConcordFuzz"
[ "${1:-}" = "--build-only" ] && exit 0

targets="${FUZZ_TARGETS:-$(SWIFT_BACKTRACE=enable=no "$binary" list | cut -f1)}"
summary=()
failed=0
for target in $targets; do
  seeds="Fuzz/Corpus/$target"
  corpus="$runs/corpus/$target"
  artifacts="$runs/crashes/$target"
  log="$runs/logs/$target.log"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  [ -d "$seeds" ] || { echo "error: no seed corpus $seeds" >&2; exit 1; }
  echo "== $target: ${seconds}s a run$([ "$cpu_goal" -gt 0 ] && echo ", until ${cpu_goal} CPU seconds")"
  status=0
  cpu=0
  executed=0
  : >"$log"
  while :; do
    start=$(wc -l <"$log")
    # Swift's backtracer would swallow the crash, and libFuzzer would write no crash file.
    # Leaks in the toolchain's own code are suppressed by name (Fuzz/lsan-suppressions.txt).
    SWIFT_BACKTRACE=enable=no LSAN_OPTIONS="suppressions=$PWD/Fuzz/lsan-suppressions.txt${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
      /usr/bin/time -f '%U %S' -o "$log.cpu" \
      "$binary" "$target" $(SWIFT_BACKTRACE=enable=no "$binary" flags "$target") \
      -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb="$rss_mb" -print_final_stats=1 \
      -artifact_prefix="$artifacts/" "$corpus" "$seeds" >>"$log" 2>&1 || status=$?
    # CPU time (user + system) of this run; with `time -o` a non-zero exit adds a line first.
    cpu=$(awk -v total="$cpu" 'NF == 2 && $1 ~ /^[0-9.]+$/ { total += $1 + $2 } END { printf "%d", total }' "$log.cpu")
    chunk_runs=$(tail -n +"$((start + 1))" "$log" | sed -n 's/^stat::number_of_executed_units:[[:space:]]*//p' | tail -n 1)
    executed=$((executed + ${chunk_runs:-0}))
    echo "stat::concord_cumulative_runs: $executed cpu_seconds: $cpu" >>"$log"
    [ "$status" -eq 0 ] && [ "$(ls -A "$artifacts" | wc -l)" -eq 0 ] || break
    [ "$cpu" -lt "$cpu_goal" ] || break
  done
  execs=$(( cpu > 0 ? executed / cpu : 0 ))
  units=$(ls -A "$corpus" | wc -l)
  # The corpus libFuzzer ended with (seeds and what it found, reduced): units/size.
  final=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -n 1 | sed -n 's/.* corp: \([^ ]*\).*/\1/p')
  found=$(ls -A "$artifacts" | wc -l)
  verdict=clean
  if [ "$status" -ne 0 ] || [ "$found" -ne 0 ] || grep -qE "ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|SUMMARY: |Fatal error" "$log"; then
    verdict="FAILED (exit $status; log $log; artifacts $artifacts)"
    failed=1
    grep -E "ERROR:|SUMMARY:|Fatal error|==[0-9]+==|artifact" "$log" | head -n 20 >&2 || true
  fi
  line=$(printf '%-17s %7s exec/s %10s runs %6s CPU s  corpus %-12s (%s new files)  %s' \
    "$target" "$execs" "$executed" "$cpu" "${final:-?}" "$units" "$verdict")
  echo "$line"
  summary+=("$line")
done

echo
echo "== fuzz summary (${seconds}s a run$([ "$cpu_goal" -gt 0 ] && echo ", until ${cpu_goal} CPU seconds a target"))"
printf '%s\n' "${summary[@]}"
exit "$failed"

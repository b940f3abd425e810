#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer targets of Fuzz/ (one binary, ConcordFuzz) with the
# address sanitizer and coverage instrumentation, then runs every target for FUZZ_SECONDS
# (default 60) from its seed corpus in Fuzz/Corpus/<target>/. Fails if any target crashes,
# trips an oracle or the sanitizer, times out on one input (FUZZ_TIMEOUT seconds, default
# 10) or runs out of memory (FUZZ_RSS_MB, default 2048); a failing input is kept in
# Fuzz/.build-fuzz/artifacts/<target>/. Prints each target's executions per second.
#
#   FUZZ_SECONDS=600 make fuzz                      longer runs
#   FUZZ_TARGETS="delta snapshot" make fuzz         some targets only
#   scripts/fuzz.sh --build-only                    build, run nothing
#
# New inputs libFuzzer finds go to Fuzz/.build-fuzz/corpus/<target>/ (not checked in); a
# crashing input, once fixed, becomes a fixture in Tests/Vectors/fuzz/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
swift="${SWIFT:-swift}"
seconds="${FUZZ_SECONDS:-60}"
timeout="${FUZZ_TIMEOUT:-10}"
rss_mb="${FUZZ_RSS_MB:-2048}"
scratch=Fuzz/.build-fuzz

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
  corpus="$scratch/corpus/$target"
  artifacts="$scratch/artifacts/$target"
  log="$scratch/logs/$target.log"
  mkdir -p "$corpus" "$artifacts" "$(dirname "$log")"
  [ -d "$seeds" ] || { echo "error: no seed corpus $seeds" >&2; exit 1; }
  echo "== $target: ${seconds}s"
  status=0
  # Swift's backtracer would swallow the crash, and libFuzzer would write no crash file.
  # Leaks in the toolchain's own code are suppressed by name (Fuzz/lsan-suppressions.txt).
  SWIFT_BACKTRACE=enable=no LSAN_OPTIONS="suppressions=$PWD/Fuzz/lsan-suppressions.txt${LSAN_OPTIONS:+:$LSAN_OPTIONS}" \
    "$binary" "$target" $(SWIFT_BACKTRACE=enable=no "$binary" flags "$target") \
    -max_total_time="$seconds" -timeout="$timeout" -rss_limit_mb="$rss_mb" -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "$corpus" "$seeds" >"$log" 2>&1 || status=$?
  execs=$(sed -n 's/^stat::average_exec_per_sec:[[:space:]]*//p' "$log" | tail -n 1)
  runs=$(sed -n 's/^stat::number_of_executed_units:[[:space:]]*//p' "$log" | tail -n 1)
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
  line=$(printf '%-17s %7s exec/s %9s runs  corpus %-12s (%s new files)  %s' \
    "$target" "${execs:-?}" "${runs:-?}" "${final:-?}" "$units" "$verdict")
  echo "$line"
  summary+=("$line")
done

echo
echo "== fuzz summary (${seconds}s per target)"
printf '%s\n' "${summary[@]}"
exit "$failed"

#!/usr/bin/env bash
# Model-checks key generations and rotation (keyring.pml; README.md, "Key rotation").
#
#   check-keyring.sh              the correct model (2 rotations), its mutants and its
#                                 non-vacuity probes: every result must be as expected
#   check-keyring.sh --extended   the correct model with 3 rotations (slower)
set -u
cd "$(dirname "$0")"
MODEL=$PWD/keyring.pml
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
command -v spin >/dev/null && command -v gcc >/dev/null || { echo "spin and gcc are needed (make proofs installs spin)" >&2; exit 2; }
failed=0

# run NAME EXPECT SPINFLAGS GCCFLAGS: EXPECT = pass (errors: 0) | fail (errors > 0)
run() {
  local name=$1 expect=$2 sflags=$3 gflags=$4 d="$WORK/$1" errs states secs verdict why
  mkdir -p "$d" && cp "$MODEL" "$d/keyring.pml" && cd "$d" || return 1
  spin $sflags -a keyring.pml > spin.out 2>&1 || { echo "ERROR $name: spin -a failed"; failed=$((failed + 1)); cd - >/dev/null; return; }
  gcc -O2 -w $gflags -o pan pan.c > gcc.out 2>&1 || { echo "ERROR $name: gcc failed"; failed=$((failed + 1)); cd - >/dev/null; return; }
  ./pan -m100000 > pan.out 2>&1
  errs=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' pan.out | head -1)
  states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' pan.out | head -1)
  secs=$(sed -n 's/^pan: elapsed time \([0-9.e+]*\).*/\1/p' pan.out | head -1)
  why=$(grep -m1 -E '^pan:[0-9]+: ' pan.out | sed -E 's/^pan:[0-9]+: *//')
  # An incomplete search proves nothing.
  if grep -qiE 'max search depth too small|out of memory|search was truncated' pan.out; then errs=""; why="incomplete search"; fi
  if [ "${errs:-0}" = 0 ] && grep -q 'Search not completed' pan.out; then errs=""; why="incomplete search"; fi
  if [ -z "$errs" ]; then verdict=ERROR
  elif [ "$expect" = pass ] && [ "$errs" = 0 ]; then verdict=OK
  elif [ "$expect" = fail ] && [ "$errs" != 0 ]; then verdict=OK
  else verdict=BAD; fi
  [ "$verdict" = OK ] || failed=$((failed + 1))
  printf '%-5s %-26s errors: %s, states stored: %s, time: %s s%s\n' "$verdict" "$name" "${errs:-?}" "${states:-?}" "${secs:-?}" "${why:+ -- $why}"
  cd - >/dev/null
}

start=$(date +%s)
case "${1:-}" in
  "")
    echo "== keyring: correct model (errors: 0), mutants and probes (errors > 0)"
    run rot2.safety pass "" "-DSAFETY"
    for m in NEWEST_ONLY ADOPT_FIRST KEEP_REMOVED FORGET_REMOVED; do run "MUTANT_$m" fail "-DMUTANT_$m" "-DSAFETY"; done
    for n in 1 2 3; do run "REACH_$n" fail "-DREACH=$n" "-DSAFETY"; done
    ;;
  --extended)
    echo "== keyring, extended: 3 rotations (errors: 0)"
    run rot3.safety pass "-DROT=3" "-DSAFETY -DCOLLAPSE"
    ;;
  *) echo "usage: $0 [--extended]" >&2; exit 2 ;;
esac
echo "== $( [ $failed = 0 ] && echo PASS || echo FAIL ) ($(( $(date +%s) - start )) s wall)"
[ $failed = 0 ]

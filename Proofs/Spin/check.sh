#!/usr/bin/env bash
# Model-check Proofs/Spin/concord.pml with Spin (see README.md).
#
#   check.sh              every property on the correct model; exits non-zero
#                         unless every run reports "errors: 0"
#   check.sh --mutants    every mutant; exits non-zero unless EVERY mutant is
#                         caught (its run reports errors > 0)
#   check.sh --vacuity    every non-vacuity probe; exits non-zero unless every
#                         probed event is reachable in the correct model
#   check.sh --extended   slower runs of the correct model (bigger bounds)
#   check.sh --all        all four
#
# pan exits 0 even when it finds errors, so every verdict is read from its
# output.  Runs go two at a time (the machine has 2 cores) in a temporary
# directory that is removed on exit.  The only thing this script may install
# is spin itself (apt-get), when it is missing.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
MODEL="$HERE/concord.pml"
JOBS=${JOBS:-2}

# ---------------------------------------------------------------- tools
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
apt_install_spin() {
  local try
  for try in 1 2 3 4 5 6; do
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y spin && return 0
    # empty package lists on a fresh machine: update once, then retry
    [ "$try" = 1 ] && as_root apt-get update
    # another apt process may hold the lock: wait and retry
    sleep 5
  done
  return 1
}
if ! command -v spin >/dev/null 2>&1; then
  echo "spin is missing: installing it with apt-get" >&2
  apt_install_spin >&2 || { echo "FAIL: could not install spin" >&2; exit 2; }
fi
command -v gcc >/dev/null 2>&1 || { echo "FAIL: gcc is required (pan is C)" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/concord-spin.XXXXXX") || exit 2
cleanup() {   # stop our own jobs (and their spin/gcc/pan children), remove the temp dir
  local p
  for p in $(jobs -p); do pkill -TERM -P "$p" 2>/dev/null; kill -TERM "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- runs
# Configurations (-D flags for spin); the model's defaults are config A.
CFG_A=""                                          # W=(2,1,0) F=2, r1 snapshots
CFG_B="-DFAULTS=1 -DSNAPPERS=1 -DJOIN_TWO_STEP"   # r0 snapshots: keep-two rotation
CFG_C="-DFAULTS=0 -DW0=1 -DW2=1"                 # all three replicas write
CFG_D="-DFAULTS=1 -DSNAPPERS=3 -DJOIN_TWO_STEP"   # two snapshot writers
CFG_E="-DROLLBACK -DFAULTS=0 -DW0=1"              # the storage loses objects or goes back
CFG_F="-DRESTORE -DFAULTS=1 -DW2=1"               # replica 0's device is restored from a backup
# a device restored from a backup and the storage rolled back, in one run: the remote's copy
# predates replica 0's first batch, the device's backup follows its first push
CFG_G="-DRESTORE -DROLLBACK -DFAULTS=0 -DW2=1 -DSNAPPERS=0 -DNO_FINALE -DCOPY_BEFORE_R0"

# job NAME EXPECT SPINFLAGS GCCFLAGS PANFLAGS
#   EXPECT = pass (errors: 0 required) | fail (errors > 0 required)
JOBLIST=()
job() { JOBLIST+=("$1|$2|$3|$4|$5"); }

run_one() {   # runs in a background subshell; writes $WORK/<name>.res
  local name=$1 expect=$2 sflags=$3 gflags=$4 pflags=$5
  local d="$WORK/$name" verdict errs states secs why
  mkdir -p "$d" && cp "$MODEL" "$d/concord.pml" && cd "$d" || return 0
  if ! spin $sflags -a concord.pml > spin.out 2>&1; then
    echo "ERROR|$name|spin -a failed: $(head -c 300 spin.out | tr '\n' ' ')" > "$WORK/$name.res"; return 0
  fi
  if ! gcc -O2 -w $gflags -o pan pan.c > gcc.out 2>&1; then
    echo "ERROR|$name|gcc failed: $(head -c 300 gcc.out | tr '\n' ' ')" > "$WORK/$name.res"; return 0
  fi
  local rc=0
  ./pan -m100000 $pflags > pan.out 2>&1 || rc=$?
  errs=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' pan.out | head -1)
  states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' pan.out | head -1)
  secs=$(sed -n 's/^pan: elapsed time \([0-9.e+]*\).*/\1/p' pan.out | head -1)
  why=$(grep -m1 -E '^pan:[0-9]+: ' pan.out | sed -E 's/^pan:[0-9]+: *//')
  # A search that did not finish proves nothing: pan still prints "errors: 0" after it
  # ran out of memory or was cut short, so any sign of that fails the run.
  if grep -q 'max search depth too small' pan.out; then why="incomplete: max search depth too small"; errs=""; fi
  # (A run that must fail stops at its first error, and says "Search not completed" then:
  # only a run that found nothing is judged incomplete.)
  if [ "${errs:-0}" = 0 ] && grep -qiE 'out of memory|reached -DMEMLIM|memory limit|Search not completed|search was truncated' pan.out; then
    why="incomplete: $(grep -m1 -iE 'out of memory|reached -DMEMLIM|memory limit|Search not completed|search was truncated' pan.out)"; errs=""
  fi
  if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then why="pan exited with status $rc"; errs=""; fi
  if [ -z "$errs" ]; then verdict=ERROR
  elif [ "$expect" = pass ] && [ "$errs" = 0 ]; then verdict=OK
  elif [ "$expect" = fail ] && [ "$errs" != 0 ]; then verdict=OK
  else verdict=BAD; fi
  echo "$verdict|$name|errors: ${errs:-?}, states stored: ${states:-?}, time: ${secs:-?} s${why:+ -- $why}" > "$WORK/$name.res"
}

run_all() {   # run JOBLIST, $JOBS at a time; print results in order
  local spec running=0 failed=0 name res
  for spec in "${JOBLIST[@]}"; do
    IFS='|' read -r a b c d e <<< "$spec"
    run_one "$a" "$b" "$c" "$d" "$e" &
    running=$((running + 1))
    if [ "$running" -ge "$JOBS" ]; then wait -n; running=$((running - 1)); fi
  done
  wait
  for spec in "${JOBLIST[@]}"; do
    name=${spec%%|*}
    res=$(cat "$WORK/$name.res" 2>/dev/null || echo "ERROR|$name|no result")
    IFS='|' read -r v n msg <<< "$res"
    printf '%-5s %-34s %s\n' "$v" "$n" "$msg"
    [ "$v" = OK ] || failed=$((failed + 1))
  done
  JOBLIST=()
  return "$failed"
}

SAFE="-DSAFETY"                    # assertions + invalid end states
LIVE="-DLIVE_ONLY"                 # liveness runs skip the (already checked) invariants
QUICK="-DSAFETY -O0"               # counterexamples are found in well under a second:
                                   # compile fast rather than run fast

correct() {
  echo "== correct model: every run must report errors: 0"
  # the long run first, so that both cores stay busy
  job D.safety            pass "$CFG_D"                "$SAFE -DCOLLAPSE" ""
  job F.p3_converged.ltl  pass "$CFG_F -DLTL $LIVE"    "-DCOLLAPSE" "-a -N p3_converged"
  job A.p3_converged.ltl  pass "$CFG_A -DLTL $LIVE"    ""      "-a -N p3_converged"
  job A.safety            pass "$CFG_A"                "$SAFE" ""
  job C.safety            pass "$CFG_C"                "$SAFE" ""
  job B.safety            pass "$CFG_B"                "$SAFE" ""
  job E.safety            pass "$CFG_E"                "$SAFE" ""
  job E.p3_converged.ltl  pass "$CFG_E -DLTL $LIVE"    ""      "-a -N p3_converged"
  job E2.safety           pass "$CFG_E -DRFAULTS=2"    "$SAFE" ""
  job F.safety            pass "$CFG_F"                "$SAFE" ""
  job G.safety            pass "$CFG_G"                "$SAFE" ""
  run_all
}

extended() {
  echo "== extended runs (slower): every run must report errors: 0"
  job A.termination.np    pass "$CFG_A $LIVE"          "-DNP"  "-l"
  job B.p3_converged.ltl  pass "$CFG_B -DLTL $LIVE"    ""      "-a -N p3_converged"
  job E.full.safety       pass "-DROLLBACK -DFAULTS=0" "$SAFE -DCOLLAPSE" ""
  job A.p1_delivered.ltl  pass "$CFG_A -DLTL $LIVE"    ""      "-a -N p1_delivered"
  # configuration G with the remote's copy taken at any moment: a known gap (README,
  # "restore with rollback"), so this run must FAIL (p4_one_content)
  job G.any_copy.gap      fail "-DRESTORE -DROLLBACK -DFAULTS=0 -DW2=1 -DSNAPPERS=0 -DNO_FINALE" "$QUICK" ""
  # the same with the store's file identity (the device restored as a new file): the gap
  # closes, so this run must PASS (configuration H, README)
  job H.any_copy.safety   pass "-DRESTORE -DROLLBACK -DFILE_IDENTITY -DFAULTS=0 -DW2=1 -DSNAPPERS=0 -DNO_FINALE" "$SAFE -DCOLLAPSE" ""
  run_all
}

mutants() {
  echo "== mutants: every run must report errors > 0 (the bug is caught)"
  local m
  for m in NO_GRACE COMPACT_UNSAFE COMPACT_ALL_APPLIED BATCH_BEFORE_BLOBS HEAD_BEFORE_BATCH \
           NO_DEADLINE SNAP_NO_REPUT NO_CAUSAL JOIN_OVERWRITE RESEAL DROP_UNCOVERED; do
    job "MUTANT_$m" fail "$CFG_A -DMUTANT_$m" "$QUICK" ""
  done
  # a relaxed modelling assumption: the collector acts on a stale decision
  job "ASSUME_COLLECT_TWO_STEP" fail "$CFG_A -DCOLLECT_TWO_STEP" "$QUICK" ""
  # the liveness formula alone (no Finale assertion, no invariants) catches it too
  job "MUTANT_RESEAL.ltl" fail "$CFG_A -DMUTANT_RESEAL -DLTL $LIVE -DNO_FINALE" "-O0" "-a -N p3_converged"
  # rollbacks: a replica that does not publish again what the storage lost
  job "MUTANT_NO_REPUBLISH" fail "$CFG_E -DMUTANT_NO_REPUBLISH" "$QUICK" ""
  job "MUTANT_NO_REPUBLISH.ltl" fail "$CFG_E -DMUTANT_NO_REPUBLISH -DLTL $LIVE -DNO_FINALE" "-O0" "-a -N p3_converged"
  # restored devices: a copy that carries on under its id; one that leaves unannounced batches
  job "MUTANT_NO_RESTORE_CHECK" fail "$CFG_F -DMUTANT_NO_RESTORE_CHECK" "$QUICK" ""
  job "MUTANT_NO_ORPHANS" fail "$CFG_F -DMUTANT_NO_ORPHANS" "$QUICK" ""
  job "MUTANT_NO_ORPHANS.ltl" fail "$CFG_F -DMUTANT_NO_ORPHANS -DLTL $LIVE -DNO_FINALE" "-O0" "-a -N p3_converged"
  # restore with rollback: a store whose newest head the remote lost carries on under its id
  job "MUTANT_NO_OWNLOSS" fail "$CFG_G -DMUTANT_NO_OWNLOSS" "$QUICK" ""
  run_all
}

vacuity() {
  echo "== non-vacuity: each probed event must be reachable (errors > 0)"
  local n
  for n in 1 2 3 4 5 6 7 8 9 11 12 13 14 15 16 17; do
    job "REACH_$n" fail "$CFG_A -DREACH=$n" "$QUICK" ""
  done
  job "REACH_10.cfgB" fail "$CFG_B -DREACH=10" "$QUICK" ""
  job "REACH_18.cfgD" fail "$CFG_D -DREACH=18" "$QUICK" ""
  job "REACH_19.cfgE" fail "$CFG_E -DREACH=19" "$QUICK" ""
  job "REACH_20.cfgE" fail "$CFG_E -DREACH=20" "$QUICK" ""
  job "REACH_21.cfgE" fail "$CFG_E -DREACH=21" "$QUICK" ""
  job "REACH_22.cfgF" fail "$CFG_F -DREACH=22" "$QUICK" ""
  job "REACH_23.cfgF" fail "$CFG_F -DREACH=23" "$QUICK" ""
  job "REACH_24.cfgF" fail "$CFG_F -DREACH=24" "$QUICK" ""
  job "REACH_25.cfgG" fail "$CFG_G -DREACH=25" "$QUICK" ""
  run_all
}

status=0
start=$(date +%s)
case "${1:-}" in
  "")          correct || status=1 ;;
  --mutants)   mutants || status=1 ;;
  --vacuity)   vacuity || status=1 ;;
  --extended)  extended || status=1 ;;
  --all)       correct || status=1; mutants || status=1; vacuity || status=1
               extended || status=1 ;;
  *)           echo "usage: $0 [--mutants|--vacuity|--extended|--all]" >&2; exit 2 ;;
esac
echo "== $( [ $status = 0 ] && echo PASS || echo FAIL ) ($(( $(date +%s) - start )) s wall)"
exit $status

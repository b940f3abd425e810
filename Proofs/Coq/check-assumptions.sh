#!/bin/sh
# Fails unless (1) no source file leaves a proof unfinished or assumes anything
# (the vernacular keywords for that are listed, split, in $forbidden below),
# (2) every Theorem of the development is listed in Assumptions.v, and
# (3) `Print Assumptions` says "Closed under the global context" for every entry.
set -u
COQC=${COQC:-coqc}
cd "$(dirname "$0")" || exit 1
status=0

sources=$(ls *.v Mutants/*.v)
# Spelled in pieces so that this script itself never matches a search for them.
forbidden="Ad""mitted|ad""mit|Axiom|Axioms|Parameter|Parameters|Conjecture|Conjectures"
if grep -n -w -E "$forbidden" $sources; then
  echo "FAIL: a source file leaves a proof unfinished or states an axiom (lines above)"
  status=1
fi

names=$(sed -n 's/^Print Assumptions \([A-Za-z0-9_'"'"']*\)\.$/\1/p' Assumptions.v)
for t in $(sed -n 's/^ *Theorem \([A-Za-z0-9_'"'"']*\).*/\1/p' $(ls *.v | grep -v '^Assumptions.v$')); do
  if ! printf '%s\n' $names | grep -qx "$t"; then
    echo "FAIL: Theorem $t is not checked in Assumptions.v"
    status=1
  fi
done

out=$($COQC -Q . Concord Assumptions.v 2>&1) || { echo "$out"; echo "FAIL: Assumptions.v did not compile"; exit 1; }
n_names=$(printf '%s\n' $names | wc -l)
n_lines=$(printf '%s\n' "$out" | wc -l)
if [ "$n_lines" -ne "$n_names" ] || printf '%s\n' "$out" | grep -v -x -q 'Closed under the global context'; then
  echo "$out"
  echo "FAIL: some theorem depends on an assumption (output above)"
  exit 1
fi
printf '%s\n' $names | while read -r t; do printf '  %-58s Closed under the global context\n' "$t"; done
if [ "$status" -eq 0 ]; then
  echo "OK: $n_names results, all closed under the global context"
else
  echo "FAIL: see above"
fi
exit $status

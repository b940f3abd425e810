#!/bin/sh
# Demonstrates that the add-wins proof (rule 3) has teeth: on a remove-wins mutant of the
# OR-set the very same proof text must be rejected by coqc.  Succeeds only if
#   1. the rule-3 block of Mutants/ORSetRemoveWins.v is byte-identical to ORSet.v's,
#   2. coqc fails on the mutant, and
#   3. the failure lies inside that block (so the mutant's definitions, its re-proved
#      helper lemmas and the counterexample remove_wins_breaks_rule3 all compiled).
set -u
COQC=${COQC:-coqc}
cd "$(dirname "$0")" || exit 1
mutant=Mutants/ORSetRemoveWins.v
block() { awk '/\(\* BEGIN rule3 \*\)/,/\(\* END rule3 \*\)/' "$1"; }

block ORSet.v > .rule3.orig
block "$mutant" > .rule3.mutant
if [ ! -s .rule3.orig ] || ! cmp -s .rule3.orig .rule3.mutant; then
  diff .rule3.orig .rule3.mutant
  echo "FAIL: the rule-3 proof in $mutant is not the one in ORSet.v"
  rm -f .rule3.orig .rule3.mutant; exit 1
fi
rm -f .rule3.orig .rule3.mutant
echo "rule-3 proof text in $mutant is identical to ORSet.v ($(block ORSet.v | wc -l) lines)"

if $COQC -Q . Concord "$mutant" > .mutant.log 2>&1; then
  cat .mutant.log; rm -f .mutant.log
  echo "FAIL: coqc accepted the remove-wins mutant: the add-wins proof has no teeth"
  exit 1
fi
line=$(sed -n 's/^File "[^"]*", line \([0-9]*\),.*/\1/p' .mutant.log | head -n 1)
start=$(grep -n '(\* BEGIN rule3 \*)' "$mutant" | cut -d: -f1)
stop=$(grep -n '(\* END rule3 \*)' "$mutant" | cut -d: -f1)
echo "coqc rejected $mutant, as it must:"
sed -n '1p' .mutant.log
echo "  > $(sed -n "${line}p" "$mutant" | sed 's/^ *//')"
msg=$(sed -n '/^Unable to unify\|^The term\|^Found no\|^Tactic failure\|^No such\|^Error: [^ ]/,$p' .mutant.log)
if [ -n "$msg" ]; then printf 'Error: %s\n' "$msg"; else tail -n 20 .mutant.log; fi
rm -f .mutant.log
if [ -z "$line" ] || [ "$line" -le "$start" ] || [ "$line" -ge "$stop" ]; then
  echo "FAIL: the mutant failed outside the rule-3 proof (line $line, block $start-$stop)"
  exit 1
fi
echo "OK: the add-wins proof fails on the remove-wins mutant (line $line, inside the rule-3 proof, lines $start-$stop);"
echo "    remove_wins_breaks_rule3, which precedes it in the file, proves the rule false for the mutant."

#!/usr/bin/env bash
# The Chebyshev filter's degree caps, A/B in one process tree: each row alternates the binary's
# defaults with TCSOLVE_CHEB_TUNE=$OLD (default ",36,100,,": the caps before 2026-11-26) REPS
# times; prints seconds.solve / seconds.verify / outer iterations of each run (--json).
#   T=path/to/tcsolve REPS=3 [OLD=",36,100,,"] bash bench/e2e/cheb_tune_ab.sh
set -u
T=${T:-build/apps/tcsolve}
REPS=${REPS:-3}
OLD=${OLD:-,36,100,,}
ROWS=${ROWS:-"gen:lap3d:100 --k 16 --which largest|gen:lap3d:100 --k 16|gen:lap3d:100 --k 64|gen:elast3d:64 --k 16 --which largest|gen:lap3d:64 --k 256|gen:lap2d:1000 --k 32|gen:elast3d:40 --k 10|gen:lap2d:200 --k 16"}
one() {  # args...: prints solve/verify/iterations
  "$@" --json 2>/dev/null | python3 -c "
import json, sys; d = json.load(sys.stdin); s = d['seconds']
print('%.4f/%.4f/%s' % (s['solve'], s['verify'], d.get('iterations')))"
}
IFS='|'
for row in $ROWS; do
  unset IFS
  new="" old=""
  for r in $(seq "$REPS"); do
    new="$new $(one $T eigs $row)"
    old="$old $(TCSOLVE_CHEB_TUNE=$OLD one $T eigs $row)"
  done
  echo "$row | new:$new | old($OLD):$old"
  IFS='|'
done

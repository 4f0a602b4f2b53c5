#!/usr/bin/env bash
# The default path as a user runs it: `tcsolve CMD --json`, wall = the whole process (date before
# and after), REPS runs of each row; one line per run: wall, seconds.total and its phases.
# usage: T=path/to/tcsolve REPS=2 bash bench/e2e/default_path.sh
T=${T:-.device-data/s4/tcsolve}; REPS=${REPS:-2}
rows=("solve gen:elast3d:64 --rhs random:32" "solve gen:lap3d:100 --rhs random:32"
      "solve gen:lap3d:100 --rhs random:32 --precond jacobi" "eigs gen:lap3d:100 --k 16 --which largest"
      "eigs gen:elast3d:40 --k 10" "eigs gen:elast3d:64 --k 16 --which largest" "eigs gen:elast3d:64 --k 16")
for row in "${rows[@]}"; do
  for r in $(seq $REPS); do
    t0=$(date +%s.%N); $T $row --json > /tmp/dp.json 2>/dev/null; t1=$(date +%s.%N)
    python3 -c "
import json,sys; d=json.load(open('/tmp/dp.json')); s=d['seconds']
prec=d.get('precision','')
prec=(prec[:60] if not prec.startswith('ladder') else prec.split(';')[0])
print(f\"{sys.argv[1]:48s} wall {float(sys.argv[3])-float(sys.argv[2]):.3f} total {s['total']:.3f} read {s['read']:.3f} setup {s['setup']:.3f} (operator {s.get('operator',0):.3f}) solve {s['solve']:.3f} verify {s['verify']:.3f} it {d['iterations']} {d['status']} {prec}\")" "$row" $t0 $t1
  done
done

#!/usr/bin/env bash
# Same-run A/B of the precision ladder on the default eigs path: --precision auto (the Chebyshev
# filter on the fp32 rung where it may, climbing to fp64) against --precision fp64, interleaved,
# 3 repetitions. Prints seconds.solve / total, the rungs' column-steps and seconds (so µs per
# column-step per rung), and the largest error against the closed-form Laplacian spectrum.
# The copy bandwidth of the run's GPU comes first (solver_bench copy cuda), for the byte budget:
# per column-step fp64 moves 24·n bytes of blocks, fp32 16·n, plus A (12·nnz per step).
# docs/performance.md, "Precision ladder".
#   bash bench/eigs_ladder_ab.sh [TCSOLVE] [SOLVER_BENCH]
set -u
T=${1:-build/apps/tcsolve}
SB=${2:-build/bench/solver_bench}
PY=${PYTHON:-python3}
[ -x "$SB" ] && "$SB" copy cuda
run() { tag=$1; shift; "$T" eigs "$@" --json 2>/dev/null | $PY -c "
import json, math, re, sys
d = json.loads(sys.stdin.read()); s = d['seconds']
args = sys.argv[2:]
spec = args[0].split(':'); dim = spec[1]; N = int(spec[2]); k = int(args[args.index('--k') + 1])
largest = '--which' in args and args[args.index('--which') + 1] == 'largest'
c = [2 - 2 * math.cos(i * math.pi / (N + 1)) for i in range(1, N + 1)]
if dim == 'lap2d':
    ev = sorted(a + b for a in c for b in c)
else:
    c2 = sorted(a + b for a in c for b in c)
    ev = sorted(a + b for a in c2[: k + 64] for b in c) if not largest else None
    if largest:
        c2r = c2[-(k + 64):]
        ev = sorted(a + b for a in c2r for b in c)
ref = ev[-k:][::-1] if largest else ev[:k]
got = d['eigenvalues']
err = max(abs(x - y) / max(1.0, abs(y)) for x, y in zip(got, ref)) if len(got) == k else float('nan')
p = d.get('precision', '')
m = re.search(r'(\d+) filters on fp32 \((\d+) column-steps, ([0-9.e-]+) s\), (\d+) on fp64 \((\d+) column-steps, ([0-9.e-]+) s\)', p)
rung = ''
if m:
    f32, c32, s32, f64, c64, s64 = int(m[1]), int(m[2]), float(m[3]), int(m[4]), int(m[5]), float(m[6])
    rung = f'fp32 {f32} filters {c32} col-steps {s32:.3f} s ({1e6 * s32 / max(c32, 1):.1f} us/col-step); fp64 {f64} filters {c64} col-steps {s64:.3f} s ({1e6 * s64 / max(c64, 1):.1f} us/col-step)'
    if 'climbed' in p: rung += ' CLIMBED'
print(f\"{sys.argv[1]:5s} {' '.join(args):40s} {d['status']:9s} {d['method']:9s} it {d['iterations']:4d} solve {s['solve']:.3f} total {s['total']:.3f} err {err:.1e} {rung}\")" $tag "$@"; }
"$T" eigs gen:lap3d:100 --k 16 -q >/dev/null 2>&1  # warm-up
for args in "gen:lap3d:100 --k 16" "gen:lap3d:100 --k 16 --which largest" "gen:lap3d:100 --k 64" \
            "gen:lap2d:1000 --k 32" "gen:lap2d:200 --k 16" "gen:lap3d:64 --k 256"; do
  for rep in 1 2 3; do
    run auto $args --precision auto
    run fp64 $args --precision fp64
  done
done

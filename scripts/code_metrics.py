#!/usr/bin/env python3
"""The shape measures of issue 41, on the library code (not tests/, bench/, examples/).

  scripts/code_metrics.py [--top N]

Prints: functions over 100/150/200 lines (a function's length includes its lambdas; ctags names
the enclosing function), files over 800 lines, virtual methods per class, and includes that reach
up the layer order core < io < preprocess < spmm | factor (peers) < solvers < distributed | results (peers) <
apps | python.
"""
import os, re, subprocess, sys
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIB = ["core", "io", "preprocess", "spmm", "factor", "solvers", "distributed", "results", "apps", "python"]
# spmm and factor are peers (operators on A): neither may include the other.
LAYER = {"core": 0, "io": 1, "preprocess": 2, "spmm": 3, "factor": 3, "solvers": 4,
         "distributed": 5, "results": 5, "apps": 6, "python": 6}
EXT = (".cpp", ".cu", ".hpp", ".cuh", ".h", ".py")


def lib_files():
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"] + LIB,
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [f for f in out if f.endswith(EXT) and "/tests/" not in f and "/benchmarks/" not in f
            and os.path.exists(os.path.join(ROOT, f))]


def functions(files):
    cxx = [f for f in files if not f.endswith(".py")]
    py = [f for f in files if f.endswith(".py")]
    rows = []
    for lang, fs, kinds in (("C++", cxx, "--kinds-C++=f"), ("Python", py, "--kinds-Python=fm")):
        if not fs:
            continue
        out = subprocess.run(["ctags", "--langmap=C++:+.cu.cuh", "-x", kinds, "--fields=+ne",
                              "--_xformat=%N\t%n\t%e\t%F"] + fs, cwd=ROOT, capture_output=True,
                             text=True).stdout
        for line in out.splitlines():
            name, start, end, path = line.split("\t")
            if not end:
                continue
            rows.append((int(end) - int(start) + 1, name, path, int(start)))
    # Lambdas (__anon...) and nested functions count inside their enclosing function: keep only
    # outermost spans per file.
    best = []
    by_file = defaultdict(list)
    for r in rows:
        by_file[r[2]].append(r)
    for path, rs in by_file.items():
        rs.sort(key=lambda r: (r[3], -r[0]))
        end = -1
        for n, name, p, s in rs:
            if s > end:
                best.append((n, name, p, s))
                end = s + n - 1
    best.sort(reverse=True)
    return best


def virtuals(files):
    counts = {}
    for f in files:
        if not f.endswith((".hpp", ".cuh", ".h", ".cu", ".cpp")):
            continue
        text = open(os.path.join(ROOT, f), encoding="utf-8", errors="replace").read()
        for m in re.finditer(r"\b(class|struct)\s+(\w+)[^;{]*\{", text):
            depth, i = 1, m.end()
            while depth and i < len(text):
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
            body = text[m.end():i]
            n = len(re.findall(r"\bvirtual\b", body))
            if n:
                counts[f"{m.group(2)} ({f})"] = max(n, counts.get(f"{m.group(2)} ({f})", 0))
    return sorted(counts.items(), key=lambda kv: -kv[1])


def reaching_up(files):
    bad = []
    for f in files:
        if f.endswith(".py"):
            continue
        top = f.split("/")[0]
        for i, line in enumerate(open(os.path.join(ROOT, f), encoding="utf-8", errors="replace"), 1):
            m = re.match(r'\s*#\s*include\s+"(\w+)/', line)
            inc = m.group(1) if m else None
            if inc in LAYER and inc != top and LAYER[inc] >= LAYER[top]:
                bad.append(f"{f}:{i}: {line.strip()}")
    return bad


def main():
    top = int(sys.argv[sys.argv.index("--top") + 1]) if "--top" in sys.argv else 15
    files = lib_files()
    fn = functions(files)
    lines = sorted(((sum(1 for _ in open(os.path.join(ROOT, f), errors="replace")), f)
                    for f in files), reverse=True)
    total = sum(n for n, _ in lines)
    print(f"library lines: {total} in {len(files)} files")
    for lim in (100, 150, 200):
        print(f"functions over {lim} lines: {sum(1 for r in fn if r[0] > lim)}")
    print(f"longest {top}:")
    for n, name, p, s in fn[:top]:
        print(f"  {n:5d}  {name}  {p}:{s}")
    big = [(n, f) for n, f in lines if n > 800]
    print(f"files over 800 lines: {len(big)}")
    for n, f in big:
        print(f"  {n:5d}  {f}")
    v = virtuals(files)
    print("virtual methods, largest interfaces:")
    for k, n in v[:5]:
        print(f"  {n:3d}  {k}")
    up = reaching_up(files)
    print(f"includes reaching up a layer: {len(up)}")
    for u in up:
        print("  " + u)


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# The binaries' RUNPATH/RPATH holds no empty entry: the dynamic loader reads one (a leading or
# trailing ':' or '::') as the current directory, so a library planted where the command is started
# would be loaded before the system's. Usage: run_path.sh FILE... (exit 77 without readelf).
command -v readelf >/dev/null || { echo "readelf not found: skipped"; exit 77; }
rc=0
for f in "$@"; do
  p=$(readelf -d "$f" | sed -n 's/.*Library r[un]*path: \[\(.*\)\]/\1/p')
  echo "$f: ${p:-(none)}"
  case ":$p:" in
    *::*) [ -n "$p" ] && { echo "  empty entry (the current directory) in the run path of $f"; rc=1; } ;;
  esac
done
exit $rc

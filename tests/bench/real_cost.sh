#!/usr/bin/env bash
# tests/bench/real_cost.sh - what HEAPCHECK=normal costs on real programs:
# python3 (PYTHONMALLOC=malloc, so every object goes through malloc), sqlite3
# and perl, each preloaded with libheapcheck.so without HEAPCHECK (the
# allocator alone) and with HEAPCHECK=normal (every allocation's stack
# recorded, final check at exit), run back to back as a pair, REPS pairs.
# Prints a markdown table of the median wall and CPU (user+sys) times and
# their ratio.  The workloads resemble tests/xval/real_programs.sh's.
# Usage: tests/bench/real_cost.sh [--reps N] [--lib PATH]
set -u
REPS=5
LIB=""
while [ $# -gt 0 ]; do
  case $1 in
    --reps) REPS=$2; shift 2 ;;
    --lib) LIB=$2; shift 2 ;;
    *) sed -n '2,10p' "$0"; exit 2 ;;
  esac
done
root=$(cd "$(dirname "$0")/../.." && pwd)
LIB=${LIB:-$root/build/libheapcheck.so}
[ -f "$LIB" ] || { echo "no $LIB" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/hc_rcost.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
PY='import json, re, collections
table = {"k%d" % i: {"n": i, "sq": i * i, "s": "v" * (i % 7)} for i in range(20000)}
text = json.dumps(table)
again = json.loads(text)
count = collections.Counter(re.findall(r"v+", text))
print(len(text), len(again), count.most_common(3), sum(i * i for i in range(100000)))'
PL='my %h; $h{$_} = $_ * 2 for 1 .. 100000;
my $s = 0; $s += $_ for values %h;
my @w = map { join "", map { chr(97 + ($_ * 13) % 26) } 1 .. ($_ % 7 + 1) } 1 .. 20000;
my %c; $c{$_}++ for @w;
print "$s ", scalar(keys %c), "\n";
my $t = "abc" x 10000; (my $u = $t) =~ s/b/BB/g; print length($u), "\n";'
SQ="CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL, grp INTEGER);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 10000)
  INSERT INTO t SELECT i, 'name' || i, i * 1.5, i % 17 FROM c;
CREATE INDEX t_grp ON t(grp);
SELECT count(*), sum(v), max(name) FROM t;
SELECT grp, count(*), round(avg(v), 2) FROM t GROUP BY grp ORDER BY grp;"
# one NAME MODE -> "wall cpu" seconds (GNU time's %e and %U+%S)
one() {
  local name=$1 mode=$2 out=$work/time.$$
  local -a env=(LD_PRELOAD="$LIB")
  [ "$mode" = normal ] && env+=(HEAPCHECK=normal HEAP_CHECK_DUMP_DIRECTORY="$work")
  rm -f "$work/db.sqlite"
  case $name in
    python3) (cd "$work" && env "${env[@]}" PYTHONMALLOC=malloc /usr/bin/time -f '%e %U %S' -o "$out" python3 -c "$PY" >/dev/null 2>&1) ;;
    perl) (cd "$work" && env "${env[@]}" /usr/bin/time -f '%e %U %S' -o "$out" perl -e "$PL" >/dev/null 2>&1) ;;
    sqlite3) (cd "$work" && env "${env[@]}" /usr/bin/time -f '%e %U %S' -o "$out" sqlite3 db.sqlite "$SQ" >/dev/null 2>&1) ;;
  esac
  awk '{ printf "%s %.2f\n", $1, $2 + $3 }' "$out"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "| program | allocator only: wall | HEAPCHECK=normal: wall | wall ratio | allocator only: CPU | HEAPCHECK=normal: CPU | CPU ratio |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for name in python3 sqlite3 perl; do
  : >"$work/plain"; : >"$work/normal"
  for _ in $(seq "$REPS"); do
    one "$name" plain >>"$work/plain"
    one "$name" normal >>"$work/normal"
  done
  pw=$(cut -d' ' -f1 "$work/plain" | median); nw=$(cut -d' ' -f1 "$work/normal" | median)
  pc=$(cut -d' ' -f2 "$work/plain" | median); nc=$(cut -d' ' -f2 "$work/normal" | median)
  awk -v n="$name" -v pw="$pw" -v nw="$nw" -v pc="$pc" -v nc="$nc" 'BEGIN {
    printf "| %s | %.2f s | %.2f s | %.2fx | %.2f s | %.2f s | %.2fx |\n", n, pw, nw, (pw > 0 ? nw / pw : 0), pc, nc, (pc > 0 ? nc / pc : 0) }'
done

#!/usr/bin/env bash
# tests/bench/real_cost.sh - what HEAPCHECK=normal costs on real programs.
# Each program runs preloaded with libheapcheck.so without HEAPCHECK (the
# allocator alone) and with HEAPCHECK=normal (every allocation's stack
# recorded, final check at exit); optionally also with HEAPCHECK=normal and
# an older library (--base, for before/after), LeakSanitizer (--lsan: gcc's
# liblsan.so.0 preloaded, its defaults) and valgrind (--valgrind:
# --leak-check=full, one run each: it is slow).  The configurations of one
# program run interleaved, REPS rounds; the table gives median CPU time
# (user + sys, from runstat) and its ratio to the allocator-only run, then
# median wall times.  Exit statuses are not checked: a leak check that
# fails a program (gcc's `as` and driver leak) still did the program's work;
# a run killed by a signal (status >= 128) shows as "crashed".
# --peers runs the allocator beside the others instead (glibc, jemalloc,
# tcmalloc_minimal and mimalloc preloaded, as tests/bench/run.sh finds them;
# a missing one is left out with a message), ratios against glibc; add
# --check to keep the HEAPCHECK=normal column too.
# Programs and workloads (all real programs of the distribution):
#   python3  /usr/bin/python3 (PYTHON=...), PYTHONMALLOC=malloc: json, re and
#            Counter on 20 000 dict entries, a 100 000-term sum
#   perl     hashes of 100 000 keys, 20 000 words counted, a regex substitution
#   sqlite3  a 100 000-row table, an index, two aggregate queries
#   tclsh    a 100 000-key dict of lists, lsort, join and a regexp
#   gcc      gcc -O2 -c symbolizer/dwarf_line.c (cc1, as and the driver)
#   node     200 000 objects through JSON.stringify/parse
#   g++      g++ -O1 -c of a file using <regex>, <map>, <string> (cc1plus;
#            not in the default set: --only "g++")
# Usage: tests/bench/real_cost.sh [--reps N] [--lib PATH] [--base PATH]
#          [--lsan] [--valgrind] [--peers [--check]] [--only "python3 perl ..."]
set -u
REPS=5
LIB=""
BASE=""
LSAN=0
VG=0
PEERS=0
CHECK=0
ONLY="python3 perl sqlite3 tclsh gcc node"
while [ $# -gt 0 ]; do
  case $1 in
    --reps) REPS=$2; shift 2 ;;
    --lib) LIB=$2; shift 2 ;;
    --base) BASE=$2; shift 2 ;;
    --lsan) LSAN=1; shift ;;
    --valgrind) VG=1; shift ;;
    --peers) PEERS=1; shift ;;
    --check) CHECK=1; shift ;;
    --only) ONLY=$2; shift 2 ;;
    *) sed -n '2,27p' "$0"; exit 2 ;;
  esac
done
root=$(cd "$(dirname "$0")/../.." && pwd)
LIB=${LIB:-$root/build-bench/libheapcheck.so}
[ -f "$LIB" ] || { echo "no $LIB" >&2; exit 2; }
[ -z "$BASE" ] || [ -f "$BASE" ] || { echo "no $BASE" >&2; exit 2; }
# The programs run in a scratch directory: a relative LD_PRELOAD path would
# not load there, and every configuration would silently measure glibc.
LIB=$(realpath "$LIB"); [ -z "$BASE" ] || BASE=$(realpath "$BASE")
RUNSTAT=""
for d in build-bench build; do [ -x "$root/$d/tests/bench/runstat" ] && RUNSTAT=$root/$d/tests/bench/runstat && break; done
[ -n "$RUNSTAT" ] || { echo "no runstat (build tests/bench first)" >&2; exit 2; }
LSAN_LIB=$(ls /usr/lib/*/liblsan.so.0 2>/dev/null | head -1)
[ "$LSAN" = 0 ] || [ -n "$LSAN_LIB" ] || { echo "no liblsan.so.0" >&2; exit 2; }
PYTHON=${PYTHON:-/usr/bin/python3}
declare -A PEER_LIB=()
if [ "$PEERS" = 1 ]; then
  HEAPCHECK_LIB=$LIB
  BENCH_NO_INSTALL=1
  . "$root/tests/bench/lib.sh"
  for a in jemalloc tcmalloc mimalloc; do
    if l=$(allocator_lib $a); then PEER_LIB[$a]=$l; else echo "no $a library: left out" >&2; fi
  done
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/hc_rcost.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
cat >"$work/w.py" <<'EOF'
import json, re, collections
table = {"k%d" % i: {"n": i, "sq": i * i, "s": "v" * (i % 7)} for i in range(20000)}
text = json.dumps(table)
again = json.loads(text)
count = collections.Counter(re.findall(r"v+", text))
print(len(text), len(again), count.most_common(3), sum(i * i for i in range(100000)))
EOF
cat >"$work/w.pl" <<'EOF'
my %h; $h{$_} = $_ * 2 for 1 .. 100000;
my $s = 0; $s += $_ for values %h;
my @w = map { join "", map { chr(97 + ($_ * 13) % 26) } 1 .. ($_ % 7 + 1) } 1 .. 20000;
my %c; $c{$_}++ for @w;
print "$s ", scalar(keys %c), "\n";
my $t = "abc" x 10000; (my $u = $t) =~ s/b/BB/g; print length($u), "\n";
EOF
cat >"$work/w.sql" <<'EOF'
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL, grp INTEGER);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 100000)
  INSERT INTO t SELECT i, 'name' || i, i * 1.5, i % 17 FROM c;
CREATE INDEX t_grp ON t(grp);
SELECT count(*), sum(v), max(name) FROM t;
SELECT grp, count(*), round(avg(v), 2) FROM t GROUP BY grp ORDER BY grp;
EOF
cat >"$work/w.tcl" <<'EOF'
set d [dict create]
for {set i 0} {$i < 100000} {incr i} { dict set d k$i [list $i [expr {$i * $i}] [string repeat v [expr {$i % 7}]]] }
set s 0
dict for {k v} $d { incr s [lindex $v 0] }
set l [lsort [dict keys $d]]
set j [join $l ,]
puts "$s [llength $l] [string length $j] [llength [regexp -all -inline {k1[0-9]+} $j]]"
EOF
cat >"$work/w.cc" <<'EOF'
#include <iostream>
#include <map>
#include <regex>
#include <string>
#include <vector>
int main() {
  std::map<std::string, std::vector<int>> m;
  std::regex re("([a-z]+)=([0-9]+)");
  for (std::string line; std::getline(std::cin, line);)
    for (std::sregex_iterator i(line.begin(), line.end(), re), e; i != e; ++i) m[(*i)[1]].push_back(std::stoi((*i)[2]));
  for (auto &kv : m) std::cout << kv.first << ' ' << kv.second.size() << '\n';
}
EOF
JS='let a = []; for (let i = 0; i < 200000; i++) a.push({k: "v" + i, n: i});
const s = JSON.stringify(a); console.log(JSON.parse(s).length, s.length);'
# cmd NAME: the program's command line (words in the array CMD)
cmd() {
  case $1 in
    python3) CMD=("$PYTHON" "$work/w.py") ;;
    perl) CMD=(perl "$work/w.pl") ;;
    sqlite3) CMD=(sh -c "rm -f '$work/db.sqlite'; exec sqlite3 '$work/db.sqlite' <'$work/w.sql'") ;;
    tclsh) CMD=(tclsh "$work/w.tcl") ;;
    gcc) CMD=(gcc -O2 -I"$root/base" -I"$root/stacks" -I"$root/allocator" -I"$root/symbolizer"
              -c "$root/symbolizer/dwarf_line.c" -o "$work/x.o") ;;
    node) CMD=(node -e "$JS") ;;
    g++) CMD=(g++ -O1 -c "$work/w.cc" -o "$work/w.o") ;;
  esac
}
# one NAME CONFIG -> "wall cpu" seconds
one() {
  local name=$1 conf=$2 out=$work/stat
  local -a env=(-e PYTHONMALLOC=malloc -e HEAP_CHECK_DUMP_DIRECTORY="$work")
  local -a pre=()
  cmd "$name"
  case $conf in
    plain) env+=(-e LD_PRELOAD="$LIB") ;;
    normal) env+=(-e LD_PRELOAD="$LIB" -e HEAPCHECK=normal) ;;
    base) env+=(-e LD_PRELOAD="$BASE" -e HEAPCHECK=normal) ;;
    lsan) env+=(-e LD_PRELOAD="$LSAN_LIB") ;;
    valgrind) pre=(valgrind -q --leak-check=full --trace-children=yes) ;;
    glibc) ;;
    *) env+=(-e LD_PRELOAD="${PEER_LIB[$conf]}") ;;
  esac
  (cd "$work" && "$RUNSTAT" -o "$out" -t 600 "${env[@]}" -- "${pre[@]}" "${CMD[@]}" >/dev/null 2>&1)
  awk '{ printf "%s %s %s\n", $1, $4, $3 }' "$out"
}
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print 0; else print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
confs="plain normal" ref=plain
if [ "$PEERS" = 1 ]; then
  confs=glibc ref=glibc
  for a in jemalloc tcmalloc mimalloc; do [ -n "${PEER_LIB[$a]:-}" ] && confs="$confs $a"; done
  confs="$confs plain"
  [ "$CHECK" = 1 ] && confs="$confs normal"
fi
[ -n "$BASE" ] && confs="$confs base"
[ "$LSAN" = 1 ] && confs="$confs lsan"
[ "$VG" = 1 ] && confs="$confs valgrind"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%H:%M) UTC" >&2
for name in $ONLY; do
  for c in $confs; do : >"$work/$name.$c"; done
  for r in $(seq "$REPS"); do
    for c in $confs; do
      [ "$c" = valgrind ] && [ "$r" -gt 1 ] && continue
      one "$name" "$c" >>"$work/$name.$c"
    done
  done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%H:%M) UTC" >&2
title() {
  case $1 in plain) [ "$PEERS" = 1 ] && echo heapcheck || echo "allocator only" ;; glibc | jemalloc | tcmalloc | mimalloc) echo "$1" ;; normal) echo "HEAPCHECK=normal" ;; base) echo "HEAPCHECK=normal, --base" ;;
    lsan) echo "LeakSanitizer" ;; valgrind) echo "valgrind (1 run)" ;; esac
}
for col in 2 1; do
  [ "$col" = 2 ] && echo "CPU (user + sys), median of $REPS:" || echo "wall, median of $REPS:"
  hdr="| program |"; sep="| --- |"
  for c in $confs; do hdr="$hdr $(title "$c") |"; sep="$sep ---: |"; done
  echo "$hdr"; echo "$sep"
  for name in $ONLY; do
    p=$(cut -d' ' -f"$col" "$work/$name.$ref" | median)
    line="| $name |"
    for c in $confs; do
      v=$(cut -d' ' -f"$col" "$work/$name.$c" | median)
      st=$(awk '$3 >= 128 { s = $3 } END { print s + 0 }' "$work/$name.$c")
      if [ "$st" != 0 ]; then line="$line crashed (status $st) |"; continue; fi
      if [ "$c" = "$ref" ]; then line="$line $(printf '%.3f s' "$v") |"
      else line="$line $(awk -v v="$v" -v p="$p" 'BEGIN { printf "%.3f s (%.2fx)", v, (p > 0 ? v / p : 0) }') |"; fi
    done
    echo "$line"
  done
  echo
done

#!/usr/bin/env bash
# real_programs.sh - real, uninstrumented programs preloaded with heapcheck
# must keep their output.
#
# For each of python3 (PYTHONMALLOC=malloc), perl, sort, sqlite3, bash and
# git it runs a small workload twice in a scratch directory: plainly, and
# with LD_PRELOAD=$HC_LIB HEAPCHECK=normal.  A program passes when
#   - the plain run exits 0;
#   - both runs print the same stdout (and leave the same result files);
#   - the heapcheck run's exit status equals the plain one, or is 1 and
#     stderr holds a leak report ("SUMMARY: heapcheck: ...");
#   - stderr shows the checker was active and ran its check (a leak report
#     or "No leaks found for check "_main_"").
# A program that is not installed prints SKIP (and does not fail).
#
# Tool mode (not part of the test: valgrind makes it slow):
#   real_programs.sh --valgrind [NAME...]
# also runs each workload's main command under valgrind --leak-check=full
# and prints heapcheck's SUMMARY next to valgrind's "definitely lost" +
# "indirectly lost" (see docs/validation.md).  Children are not traced by
# valgrind; heapcheck checks every process, so only the main process's
# report (the last SUMMARY/no-leak line, the parent exits last) is compared.
#
# Usage: real_programs.sh [--valgrind] [NAME...]   NAME in: python3 perl sort sqlite3 bash git
# Environment: HC_LIB (libheapcheck.so; meson test sets it), RP_KEEP=1 keeps
# the scratch directory.  Ends with "N passed, N failed, N skipped".
set -u

lib=${HC_LIB:-}
if [ -z "$lib" ]; then
  root=$(cd "$(dirname "$0")/../.." && pwd)
  for d in "$root/build-xval" "$root/build"; do
    [ -f "$d/libheapcheck.so" ] && { lib=$d/libheapcheck.so; break; }
  done
fi
[ -n "$lib" ] && [ -f "$lib" ] || { echo "real_programs.sh: set HC_LIB" >&2; exit 2; }
valgrind_mode=0
if [ "${1:-}" = --valgrind ]; then valgrind_mode=1; shift; fi
ulimit -c 0 2>/dev/null
scratch=$(mktemp -d "${TMPDIR:-/tmp}/hc_real.XXXXXX") || exit 2
[ "${RP_KEEP:-0}" = 1 ] || trap 'rm -rf "$scratch"' EXIT
passed=0
failed=0
skipped=0

# Prefer the system's binaries (a version-manager shim would add a shell
# process of its own to every run).
find_prog() {
  local p
  for p in "/usr/bin/$1" "/bin/$1"; do
    [ -x "$p" ] && { echo "$p"; return 0; }
  done
  command -v "$1" 2>/dev/null
}

# ---- workloads: setup_NAME prepares files in $1, cmd_NAME sets the CMD array ----
setup_python3() { :; }
cmd_python3() {
  CMD=("$PROG" -c '
import json, re, collections
d = {str(i): [i, i * i, str(i) * 3] for i in range(20000)}
s = json.dumps(d, sort_keys=True)
back = json.loads(s)
words = re.findall(r"[a-z]+", " ".join(chr(97 + (i * 7) % 26) * (i % 5 + 1) for i in range(30000)))
c = collections.Counter(words)
print(len(s), len(back), sum(v[1] for v in back.values()) % 1000003)
print(sorted(c.items())[:5], len(c))
print(sum(x * x for x in range(100000)))')
}
setup_perl() { :; }
cmd_perl() {
  CMD=("$PROG" -e '
my %h; $h{$_} = $_ * 2 for 1 .. 100000;
my $s = 0; $s += $_ for values %h;
my @w = map { join "", map { chr(97 + ($_ * 13) % 26) } 1 .. ($_ % 7 + 1) } 1 .. 20000;
my %c; $c{$_}++ for @w;
print "$s ", scalar(keys %c), "\n";
print join(",", (sort { $a <=> $b } map { ($_ * 7919) % 1009 } 1 .. 2000)[0 .. 9]), "\n";
my $t = "abc" x 10000; (my $u = $t) =~ s/b/BB/g; print length($u), "\n";')
}
setup_sort() {
  # 200k pseudo-random lines, made by awk (no dependence on a random source)
  awk 'BEGIN { x = 12345; for (i = 0; i < 200000; i++) { x = (x * 1103515245 + 12345) % 2147483648;
       printf "%010d line %d %s\n", x, i, substr("abcdefghijklmnopqrstuvwxyz", i % 26 + 1, i % 9 + 1) } }' \
    >"$1/lines.txt"
}
cmd_sort() { CMD=("$PROG" -k3,3 -k1,1n lines.txt); }
setup_sqlite3() { :; }
cmd_sqlite3() {
  CMD=("$PROG" db.sqlite "
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v REAL, grp INTEGER);
WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 10000)
  INSERT INTO t SELECT i, 'name' || i, i * 1.5, i % 17 FROM c;
CREATE INDEX t_grp ON t(grp);
SELECT count(*), sum(v), max(name) FROM t;
SELECT grp, count(*), round(avg(v), 2) FROM t GROUP BY grp ORDER BY grp;
SELECT name FROM t WHERE grp = 3 AND id > 9900 ORDER BY id;
SELECT a.grp, count(*) FROM t a JOIN t b ON a.id = b.id + 1 AND a.grp = b.grp + 1 GROUP BY a.grp ORDER BY a.grp LIMIT 5;")
}
setup_bash() { :; }
cmd_bash() {
  CMD=("$PROG" -c '
declare -A h; s=0; str=""
for ((i = 0; i < 20000; i++)); do s=$((s + i * i)); a[i]=$i; h[k$i]=$((i % 13)); done
for ((i = 0; i < 2000; i++)); do str+="x$i"; done
f() { local x=$1; echo $((x * 2)); }
r=$(f 21)
echo "$s ${#a[@]} ${#h[@]} ${#str} $r ${h[k12345]}"
printf "%s\n" "${a[@]:100:5}"')
}
setup_git() {
  (cd "$1" && "$PROG" init -q repo && cd repo &&
   "$PROG" config user.email t@example.invalid && "$PROG" config user.name tester &&
   for i in 1 2 3 4 5; do
     seq 1 $((i * 200)) >"f$i.txt"; "$PROG" add "f$i.txt"
     GIT_AUTHOR_DATE="2020-01-0${i}T00:00:00Z" GIT_COMMITTER_DATE="2020-01-0${i}T00:00:00Z" \
       "$PROG" commit -q -m "commit $i"
   done) >/dev/null 2>&1
}
cmd_git() { CMD=("$PROG" -C repo --no-pager log --stat --format='%H %s'); }

# run_prog NAME: sets up, runs plain and with heapcheck, compares.
run_prog() {
  local name=$1
  PROG=$(find_prog "$name")
  if [ -z "$PROG" ]; then
    echo "SKIP $name: not installed"
    skipped=$((skipped + 1))
    return
  fi
  local d=$scratch/$name
  mkdir -p "$d/plain" "$d/hc" "$d/dump"
  "setup_$name" "$d/plain"
  "setup_$name" "$d/hc"
  "cmd_$name"
  local -a common=(env -u HEAPCHECK -u LD_PRELOAD GIT_PAGER=cat PAGER=cat LC_ALL=C PYTHONMALLOC=malloc
                   HOME="$d" GIT_CONFIG_NOSYSTEM=1)
  (cd "$d/plain" && "${common[@]}" "${CMD[@]}" >"$d/plain.out" 2>"$d/plain.err" </dev/null)
  local rc_plain=$?
  (cd "$d/hc" && "${common[@]}" LD_PRELOAD="$lib" HEAPCHECK=normal HEAP_CHECK_DUMP_DIRECTORY="$d/dump" \
     "${CMD[@]}" >"$d/hc.out" 2>"$d/hc.err" </dev/null)
  local rc_hc=$?
  local why=""
  [ "$rc_plain" = 0 ] || why="$why plain run exited $rc_plain;"
  cmp -s "$d/plain.out" "$d/hc.out" || why="$why stdout differs;"
  if [ "$name" = sqlite3 ]; then
    # the database file each run built must hold the same rows
    local q="SELECT count(*), sum(v) FROM t;"
    [ "$(cd "$d/plain" && "$PROG" db.sqlite "$q")" = "$(cd "$d/hc" && "$PROG" db.sqlite "$q")" ] ||
      why="$why database differs;"
  fi
  local leaks=0
  grep -q '^SUMMARY: heapcheck: ' "$d/hc.err" && leaks=1
  if [ "$rc_hc" != "$rc_plain" ] && ! { [ "$rc_hc" = 1 ] && [ "$leaks" = 1 ]; }; then
    why="$why exit status $rc_hc with heapcheck, $rc_plain without;"
  fi
  grep -q 'heap leak checker is active' "$d/hc.err" || why="$why checker not active;"
  grep -qE '^SUMMARY: heapcheck: |^No leaks found for check "_main_"' "$d/hc.err" || why="$why no check ran;"
  local summary
  summary=$(grep -E '^SUMMARY: heapcheck: |^No leaks found for check "_main_"' "$d/hc.err" | tail -1)
  if [ -z "$why" ]; then
    echo "PASS $name (exit $rc_hc; $summary)"
    passed=$((passed + 1))
  else
    echo "FAIL $name:$why"
    echo "---- command: ${CMD[*]}"
    echo "---- stdout diff (plain vs heapcheck), first 20 lines"
    diff "$d/plain.out" "$d/hc.out" | head -20
    echo "---- heapcheck stderr, last 40 lines"
    tail -40 "$d/hc.err"
    echo "----"
    failed=$((failed + 1))
  fi
  if [ "$valgrind_mode" = 1 ]; then
    compare_valgrind "$name" "${common[@]}"
  fi
}

# compare_valgrind NAME ENV...: heapcheck's main-process totals vs valgrind's
# on the same command (CMD).
compare_valgrind() {
  local name=$1
  shift
  local d=$scratch/$name
  command -v valgrind >/dev/null || { echo "  valgrind: not installed"; return; }
  rm -rf "$d/vg"; mkdir -p "$d/vg"; "setup_$name" "$d/vg"
  rm -f "$d"/vg.*.log
  (cd "$d/vg" && "$@" valgrind --leak-check=full --num-callers=30 --log-file="$d/vg.%p.log" "${CMD[@]}" \
     >"$d/vg.out" 2>"$d/vg.err" </dev/null)
  # The main process's log: the one whose parent is none of the logged processes
  # (forked children, e.g. bash's command substitutions, have logs of their own).
  local main_log="" lf pp
  for lf in "$d"/vg.*.log; do
    pp=$(sed -n 's/^==[0-9]*== Parent PID: \([0-9]*\)$/\1/p' "$lf" | head -1)
    [ -f "$d/vg.$pp.log" ] || { main_log=$lf; break; }
  done
  [ -n "$main_log" ] || { echo "  $name: no valgrind log"; return; }
  cp "$main_log" "$d/vg.log"
  local vg hc poss
  vg=$(tr -d , <"$d/vg.log" | awk '/definitely lost:|indirectly lost:/ {b+=$(NF-4); o+=$(NF-1)} END {printf "%d/%d", b, o}')
  poss=$(tr -d , <"$d/vg.log" | awk '/possibly lost:/ {printf "%d/%d", $(NF-4), $(NF-1)}')
  hc=$(grep -E '^SUMMARY: heapcheck: |^No leaks found for check "_main_"' "$d/hc.err" | tail -1 |
       sed -n 's/^SUMMARY: heapcheck: \([0-9]*\) bytes leaked in \([0-9]*\) allocations/\1\/\2/p; s/^No leaks.*/0\/0/p')
  local same=DIFFERENT
  [ "$vg" = "$hc" ] && same=same
  cmp -s "$d/plain.out" "$d/vg.out" || same="$same (valgrind run's stdout differs)"
  echo "  $name: heapcheck $hc, valgrind definitely+indirectly $vg (possibly lost ${poss:-0/0}): $same"
  echo "  logs: $d/hc.err $d/vg.log"
}

names=("$@")
[ ${#names[@]} -gt 0 ] || names=(python3 perl sort sqlite3 bash git)
for n in "${names[@]}"; do
  case $n in
    python3 | perl | sort | sqlite3 | bash | git) run_prog "$n" ;;
    *) echo "FAIL $n: unknown program"; failed=$((failed + 1)) ;;
  esac
done
[ "$valgrind_mode" = 1 ] && [ "${RP_KEEP:-0}" != 1 ] && echo "(RP_KEEP=1 keeps the logs)"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]

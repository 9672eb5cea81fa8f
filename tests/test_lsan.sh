#!/bin/sh
# test_lsan.sh - LeakSanitizer's interface and LSAN_OPTIONS (checker/lsan.c).
#
# Usage: test_lsan.sh PROG HOOKS_PROG SOURCE DTLS_MODULE
#   PROG, HOOKS_PROG: tests/lsan/lsan_prog.c linked with -lheapcheck, the
#   second with -DLSAN_HOOKS (it defines __lsan_default_options,
#   __lsan_default_suppressions and __lsan_is_turned_off);
#   SOURCE: that file, built here again with `clang -fsanitize=leak` (or gcc's)
#   when LeakSanitizer works on this machine; DTLS_MODULE:
#   tests/roots_tls_module.c built as a plain shared object (a __thread slot
#   the dtls cases dlopen).
#
# Every case states the expected exit status, leak totals (one "bytes
# objects" pair per report) and marker lines; heapcheck's run must match
# them, and so must LeakSanitizer's run of the same source when it is
# available (so the recorded expectations are LeakSanitizer's verdicts).
# Without LeakSanitizer (or when ptrace is refused, as in some sandboxes)
# only heapcheck is compared with the recorded expectations, and the test
# says so.

. "$(dirname "$0")/expect.sh"

prog=${1:?usage: test_lsan.sh PROG HOOKS_PROG SOURCE}
hooks=${2:?}
src=${3:?}
TEST_DTLS_MODULE=${4:?}
export TEST_DTLS_MODULE
src=$(cd "$(dirname "$src")" && pwd -P)/$(basename "$src") # one spelling in both builds' debug info
expect_private_env hc_lsan
unset LSAN_OPTIONS ASAN_OPTIONS TEST_LSAN_TURNED_OFF

# ---- LeakSanitizer, if it works here ----
lsan_prog=
lsan_hooks=
for cc in clang gcc; do
  command -v $cc >/dev/null 2>&1 || continue
  printf '#include <stdlib.h>\nvoid *volatile p;\nint main(void){p = malloc(9); p = 0; return 0;}\n' >"$dump/probe.c"
  $cc -fsanitize=leak -g "$dump/probe.c" -o "$dump/probe" 2>/dev/null || continue
  "$dump/probe" >/dev/null 2>&1
  [ $? = 23 ] || continue
  $cc -fsanitize=leak -g -O0 -pthread "$src" -o "$dump/lsan_prog" 2>/dev/null || continue
  $cc -fsanitize=leak -g -O0 -pthread -DLSAN_HOOKS "$src" -o "$dump/lsan_hooks" 2>/dev/null || continue
  lsan_prog=$dump/lsan_prog
  lsan_hooks=$dump/lsan_hooks
  echo "comparing with LeakSanitizer ($cc -fsanitize=leak)"
  break
done
[ -n "$lsan_prog" ] || echo "LeakSanitizer is not usable here: comparing with the recorded expectations only"

# The leak totals of every report in $1 (text): "bytes objects" pairs.
totals() {
  printf '%s\n' "$1" | sed -nE 's/^SUMMARY: [A-Za-z]+: ([0-9]+) bytes? leaked in ([0-9]+) allocations?.*/\1 \2/p; s/^SUMMARY: [A-Za-z]+: ([0-9]+) byte\(s\) leaked in ([0-9]+) allocation\(s\).*/\1 \2/p' |
    tr '\n' ' ' | sed 's/ $//'
}
# The program's own marker lines (stdout).
markers() { printf '%s\n' "$1" | grep -E '^[a-z]+( [a-z]+)*(=[0-9]+)?$|^after |^continued$' | tr '\n' ';'; }

# check OPTS ENV CASE RC TOTALS MARKERS: runs heapcheck's program (and
# LeakSanitizer's) with LSAN_OPTIONS=OPTS (unset when OPTS is "-") and the
# extra environment ENV ("" for none; VAR=value words), and compares; an
# optional 7th argument is the status LeakSanitizer exits with where it
# differs, an 8th its totals and markers ("TOTALS|MARKERS") where they differ.
check() {
  _o=$1 _e=$2 _case=$3 _rc=$4 _tot=$5 _mk=$6 _lsan_rc=${7:-$4} # 7th: LeakSanitizer's status where it differs
  _lsan_tot=$_tot _lsan_mk=$_mk
  if [ -n "${8:-}" ]; then _lsan_tot=${8%%|*} _lsan_mk=${8#*|}; fi
  for _which in heapcheck lsan; do
    _bin=$prog
    [ -n "${HOOKS:-}" ] && _bin=$hooks
    if [ $_which = lsan ]; then
      [ -n "$lsan_prog" ] || continue
      _bin=$lsan_prog
      [ -n "${HOOKS:-}" ] && _bin=$lsan_hooks
    fi
    cur="$_which: LSAN_OPTIONS=$_o $_e $_case"
    # shellcheck disable=SC2086 # _e is a list of assignments
    if [ "$_o" = - ]; then out=$(env $_e "$_bin" "$_case" 2>&1); else out=$(env LSAN_OPTIONS="$_o" $_e "$_bin" "$_case" 2>&1); fi
    rc=$?
    _wt=$_tot _wm=$_mk
    if [ $_which = lsan ]; then expect_rc "$_lsan_rc"; _wt=$_lsan_tot _wm=$_lsan_mk; else expect_rc "$_rc"; fi
    checks=$((checks + 1))
    [ "$(totals "$out")" = "$_wt" ] || fail "leak totals '$(totals "$out")', expected '$_wt'"
    checks=$((checks + 1))
    [ "$(markers "$out")" = "$_wm" ] || fail "markers '$(markers "$out")', expected '$_wm'"
    [ $_which = heapcheck ] && hc_out=$out
    [ $_which = lsan ] && lsan_out=$out
  done
  out=$hc_out
  cur="heapcheck: LSAN_OPTIONS=$_o $_e $_case"
}
lsan_out=

# ---- the functions, with LSan's defaults (LSAN_OPTIONS set, empty) ----
profiles() { ls /tmp 2>/dev/null | grep -c '^lsan_prog\.[0-9]*\._main_-end\.heap$'; }
before_n=$(profiles)
check "" "HEAP_CHECK_DUMP_DIRECTORY=" leak 23 "7 1" ""
has "Leak of 7 bytes in 1 objects allocated from:"
has_re "leak_a .*lsan_prog.c:[0-9]+"
lacks "Perftools heap leak checker is active"   # quiet, as LSan
lacks "pprof"                                   # no leak profile file by default
checks=$((checks + 1)); [ "$(profiles)" = "$before_n" ] || fail "a leak profile was written to /tmp"
check "" "" leak 23 "7 1" ""                    # with HEAP_CHECK_DUMP_DIRECTORY: the file and the hint
[ -n "$(ls "$dump" | grep '\.heap$')" ] || fail "no leak profile in HEAP_CHECK_DUMP_DIRECTORY"
check "" "" clean 0 "" ""
checks=$((checks + 1)); [ -z "$out" ] || fail "a clean run printed something"
check "" "" two 23 "120 3" ""
count_re "^(Indirect )?[Ll]eak of " 3
check "" "" recoverable 23 "10 1 10 1" "recoverable=1;continued;"
check "" "" recoverable_clean 0 "" "recoverable=0;"
check "" "" final 23 "20 1" ""
check "" "" final_clean 0 "" "after final check;after second final check;"
check "" "" disable 23 "32 1" ""
has_re "leak_b "
check "" "" enable_unmatched 23 "" ""
has "unmatched call to __lsan_enable()"
check "" "" ignore 23 "42 1" ""
check "" "" root_region 0 "50 1" "registered leaked=0;unregistered leaked=1;"
check "" "" unregister_bad 23 "" ""
has "has not been registered"
check "" "" global 0 "" "global leaked=0;"
check "" "" stack 23 "72 1" "stack leaked=0;"
check "" "" registers 23 "48 1" "registers leaked=0;"
check "" "" tls 0 "" "tls leaked=0;"
check "" "" unaligned 23 "24 1 24 1" "unaligned leaked=1;"
# A failing program that leaks: heapcheck keeps its status (3) and reports
# the leak; LeakSanitizer's exitcode replaces the status (23) - the one
# documented difference in exit status.
check "" "" fail_leak 3 "9 1" "" 23
check "" "" fail_clean 3 "" ""                  # no leak: the program's own status
check "exitcode=0" "" fail_leak 3 "9 1" ""

# ---- options ----
check "exitcode=5" "" leak 5 "7 1" ""
check "exitcode=0" "" leak 0 "7 1" ""
lacks "Exiting with error code"
check "detect_leaks=0" "" leak 0 "" ""
check "leak_check_at_exit=0" "" leak 0 "" ""
check "leak_check_at_exit=0" "" final 23 "20 1" ""
check "use_globals=0" "" global 23 "60 1 60 1" "global leaked=1;"
check "use_stacks=0" "" stack 23 "72 1 72 1" "stack leaked=1;"
check "use_registers=0" "" registers 23 "48 1 48 1" "registers leaked=1;"
check "use_tls=0" "" tls 0 "64 1" "tls leaked=1;"
check "use_stacks=0" "" tls 0 "" "tls leaked=0;"           # TLS is a root of its own
check "use_registers=0:use_tls=0" "" global 0 "" "global leaked=0;"
check "use_unaligned=1" "" unaligned 0 "" "unaligned leaked=0;"
check "use_root_regions=0" "" root_region 23 "50 1 50 1 50 1" "registered leaked=1;unregistered leaked=1;"
check "use_ld_allocations=0" "" clean 0 "" ""
# Dynamic TLS (a dlopen'ed module's __thread slot, ld.so's malloc'd block on
# the thread's DTV) is TLS: with use_tls=1 the DTV and the blocks are roots,
# also where no rule for loader allocations keeps them (use_ld_allocations=0;
# main's DTV comes from ld.so's start-up allocator, reached from no other
# root).  With use_tls=0 main's block (8 bytes) and the 1111 bytes in it are
# reported; the second thread's DTV is pthread_create's (a root, as LSan
# ignores what pthread_create allocates), so its 2222 are not.  clang 14's
# LSan reports nothing with use_tls=0: its built-in `leak:*tls_get_addr*`
# suppression turns the block, and all it points to, into roots.
dtls_base=report_objects=1:use_stacks=0:use_registers=0:use_ld_allocations=0
for c in dtls dtls_thread; do
  check "$dtls_base:use_tls=1" "" $c 0 "" "dtls leaked=0;"
  check "$dtls_base:use_tls=0" "" $c 0 "1119 2" "dtls leaked=1;" 0 "|dtls leaked=0;"
  has_re "^0x[0-9a-f]+ \(1111 bytes\)$"
  lacks "(2222 bytes)"
  check "" "" $c 0 "" "dtls leaked=0;"
done
# Joined threads' DTVs stay allocated in glibc's stack cache, made by
# pthread_create (LSan ignores what pthread_create allocates).
check "use_ld_allocations=0" "" joined 0 "" ""
check "use_ld_allocations=0:use_tls=0:use_stacks=0:use_registers=0" "" joined 0 "" ""
# max_allocation_size_mb: beyond it NULL and ENOMEM (allocator_may_return_null=1,
# one warning per failure) or a report and LSan's exit status.
check "allocator_may_return_null=1:max_allocation_size_mb=16" "" too_big 0 "" \
  "realloc null=1;enomem=1;kept=1;malloc null=1;calloc null=1;limit null=0;"
has_re "failed to allocate 0x1000001 bytes"
count_re "failed to allocate 0x" 3
check "allocator_may_return_null=1" "" too_big 0 "" "realloc null=0;enomem=0;kept=0;malloc null=0;calloc null=0;limit null=0;"
check "" "" alloc_hooks 0 "" \
  "slot=1;owned=1;size=4242;mallocs=1;frees=1;owned in free=1;size in free=4242;"
check "max_allocation_size_mb=16" "" too_big 23 "" ""
has_re "requested allocation size 0x1000001 .*exceeds maximum supported size of 0x1000000"
printf 'leak:leak_for_supp\n' >"$dump/supp file.txt"
check "suppressions='$dump/supp file.txt'" "" supp 0 "" ""
has "Suppressions used:"
has_re "^ +1 +33 leak_for_supp$"
check "suppressions=\"$dump/supp file.txt\",print_suppressions=0" "" supp 0 "" ""
lacks "Suppressions used:"
check "max_leaks=1" "" two 23 "120 3" ""
count_re "^(Indirect )?[Ll]eak of " 1
[ -n "$lsan_out" ] && { out=$lsan_out; count_re "^(Direct|Indirect) leak of " 1; out=$hc_out; }
check "report_objects=1" "" two 23 "120 3" ""
count_re "^0x[0-9a-f]+ \((100|10) bytes\)$" 3
[ -n "$lsan_out" ] && { out=$lsan_out; count_re "^0x[0-9a-f]+ \((100|10) bytes\)$" 3; out=$hc_out; }
# Two frames as LSan counts them (its malloc's, then leak_b): the two leak_b
# leaks share the shortened stack and merge into one record.
check "malloc_context_size=2" "" two 23 "120 3" ""
count_re "^(Indirect )?[Ll]eak of " 2
count_re "^	@ " 2
has "Leak of 20 bytes in 2 objects allocated from:"
[ -n "$lsan_out" ] && { out=$lsan_out; count_re "^(Direct|Indirect) leak of " 2; count_re "^    #1 " 2; out=$hc_out; }
srcdir=$(cd "$(dirname "$src")" && pwd -P)/
check "strip_path_prefix=$srcdir" "" leak 23 "7 1" ""
has_re " leak_a lsan_prog.c:[0-9]+ "
lacks "$srcdir"
[ -n "$lsan_out" ] && { out=$lsan_out; has_re " lsan_prog.c:[0-9]+"; lacks "$srcdir"; out=$hc_out; }
# log_path: the report goes to <log_path>.<pid>, nothing to stderr.
for _which in heapcheck lsan; do
  _bin=$prog
  if [ $_which = lsan ]; then [ -n "$lsan_prog" ] || continue; _bin=$lsan_prog; fi
  mkdir -p "$dump/log_$_which"
  cur="$_which: LSAN_OPTIONS=log_path=... leak"
  out=$(LSAN_OPTIONS="log_path=$dump/log_$_which/leaks" "$_bin" leak 2>&1)
  rc=$?
  expect_rc 23
  checks=$((checks + 1)); [ -z "$out" ] || fail "output on stderr with log_path"
  _f=$(ls "$dump/log_$_which")
  checks=$((checks + 1))
  case $_f in leaks.[0-9]*) ;; *) fail "log file '$_f', expected leaks.<pid>" ;; esac
  out=$(cat "$dump/log_$_which/$_f")
  checks=$((checks + 1)); [ "$(totals "$out")" = "7 1" ] || fail "log totals '$(totals "$out")'"
done
# tries (LSan 20's debugging option, PR llvm-project#112037, tests flag_tries
# and flag_retries): every whole-program check runs N times, each with its
# report.  clang 14's LSan has no such flag (ignored, silently): its totals
# are recorded as the 8th argument.
check "tries=3" "" recoverable 23 "10 1 10 1 10 1 10 1 10 1 10 1" "recoverable=1;continued;" 23 \
  "10 1 10 1|recoverable=1;continued;"
check "tries=2" "" clean 0 "" ""
checks=$((checks + 1)); [ -z "$out" ] || fail "a clean run with tries=2 printed something"
# retries: the flag's name before that PR renamed it (flag_retries' RUN line).
check "retries=3" "" recoverable 23 "10 1 10 1 10 1 10 1 10 1 10 1" "recoverable=1;continued;" 23 \
  "10 1 10 1|recoverable=1;continued;"
# log_threads: the threads each check scanned, in clang 14's lines (two
# threads: main and the one holding the TLS pointer).
check "log_threads=1" "" tls 0 "" "tls leaked=0;"
count_re "^==[0-9]+==Processing thread [0-9]+\.$" 2
count_re "^==[0-9]+==Stack at 0x[0-9a-f]+-0x[0-9a-f]+ \(SP = 0x[0-9a-f]+\)\.$" 2
count_re "^==[0-9]+==TLS at 0x[0-9a-f]+-0x[0-9a-f]+\.$" 2
[ -n "$lsan_out" ] && { out=$lsan_out; count_re "^==[0-9]+==Processing thread [0-9]+\.$" 2; count_re "^==[0-9]+==TLS at " 2; out=$hc_out; }
check "log_threads=1:use_stacks=0:use_tls=0" "" tls 0 "64 1" "tls leaked=1;"
count_re "^==[0-9]+==Processing thread [0-9]+\.$" 2
lacks "Stack at"
lacks "TLS at"
[ -n "$lsan_out" ] && { out=$lsan_out; count_re "^==[0-9]+==Processing thread [0-9]+\.$" 2; lacks "Stack at"; lacks "TLS at"; out=$hc_out; }
check "verbosity=1" "" leak 23 "7 1" ""
has "timing:"
check "help=1" "" clean 0 "" ""
has "Available flags"
for o in detect_leaks leak_check_at_exit exitcode suppressions print_suppressions log_path report_objects \
  max_leaks use_globals use_stacks use_registers use_tls use_ld_allocations use_root_regions use_unaligned \
  malloc_context_size strip_path_prefix verbosity max_allocation_size_mb allocator_may_return_null tries retries log_threads help; do
  has_re "^	$o$"
done

# ---- syntax and bad input (heapcheck only: LSan accepts or dies differently) ----
lsan_keep=$lsan_prog
lsan_prog=
check "exitcode=7 max_leaks=1,report_objects=0:use_globals=1" "" leak 7 "7 1" ""   # every separator
check "fast_unwind_on_malloc=0:exitcode=4" "" leak 4 "7 1" ""
has "heapcheck: warning: LSAN_OPTIONS: unsupported option fast_unwind_on_malloc (ignored)"
count_re "warning" 1
check "" "TEST_OWNERSHIP_EXTRA=1" alloc_hooks 0 "" \
  "slot=1;owned=1;size=4242;interior owned=0;global owned=0;mallocs=1;frees=1;owned in free=1;size in free=4242;freed owned=0;"
check "exitcode=abc" "" leak 23 "7 1" ""
has "LSAN_OPTIONS: exitcode=abc is not a number in [0, 255]; using the default 23"
check "exitcode=5 exitcode=300" "" leak 23 "7 1" ""    # out of range: the key's default, not the earlier value
has "LSAN_OPTIONS: exitcode=300 is not a number in [0, 255]; using the default 23"
check "use_stacks=maybe" "" leak 23 "7 1" ""
has "LSAN_OPTIONS: use_stacks=maybe is not a boolean (0/1, no/yes, false/true); using the default 1"
check "tries=0" "" leak 23 "7 1" ""                 # one run: the default
has "LSAN_OPTIONS: tries=0 is not a number in [1, 1000]; using the default 1"
check "tries=x" "" leak 23 "7 1" ""
has "LSAN_OPTIONS: tries=x is not a number in [1, 1000]; using the default 1"
check "suppressions='unterminated" "" leak 23 "7 1" ""
has "unterminated quoted value of suppressions"
check "exitcode" "" leak 23 "7 1" ""
has "expected name=value"
# HEAPCHECK decides the mode; LSAN_OPTIONS adjusts it.
check "exitcode=9" "HEAPCHECK=normal" leak 9 "7 1" ""
has "Perftools heap leak checker is active"
check "detect_leaks=0" "HEAPCHECK=normal" leak 1 "7 1" ""
has "detect_leaks=0 ignored: HEAPCHECK=normal decides"
# Unset LSAN_OPTIONS and HEAPCHECK: an allocator, no checker.
check - "" leak 0 "" ""
checks=$((checks + 1)); [ -z "$out" ] || fail "an unchecked run printed something"
check - "" enable_unmatched 0 "" "after unmatched enable;"
lsan_prog=$lsan_keep

# ---- the program's hooks ----
HOOKS=1
check - "" leak 42 "7 1" ""                   # __lsan_default_options: exitcode=42
check - "" supp 0 "" ""                       # __lsan_default_suppressions
has "Suppressions used:"
check - "TEST_LSAN_TURNED_OFF=1" leak 0 "" ""  # __lsan_is_turned_off
check - "TEST_LSAN_TURNED_OFF=1" recoverable 0 "" "recoverable=0;continued;"
check "exitcode=7" "" leak 7 "7 1" ""          # LSAN_OPTIONS comes after the defaults
# tries: leaks count only when every run found some.  __lsan_is_turned_off
# is asked at every run; with TEST_LSAN_TURNED_OFF=2 the second run is off:
# one report, and the status stays 0.  (clang 14's LSan: one run, one
# question, status 42.)
check "tries=2" "" leak 42 "7 1 7 1" "" 42 "7 1|"
check "tries=2" "TEST_LSAN_TURNED_OFF=2" leak 0 "7 1" "" 42
check "tries=3" "TEST_LSAN_TURNED_OFF=2" leak 0 "7 1 7 1" "" 42 "7 1|"
HOOKS=

finish test_lsan

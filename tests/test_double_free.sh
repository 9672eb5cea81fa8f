#!/bin/sh
# test_double_free.sh FIXTURE [NOFP_FIXTURE] - checker mode's report of a double or invalid
# free (checker/mem_errors.c, allocator/free_history.c): the second free's
# stack, the first free (its whole stack; its caller alone with
# HEAPCHECK_FREE_STACKS=0) and the allocation, read from the real report of
# tests/double_free_fixture.c; then abort (HEAPCHECK) or LeakSanitizer's exit
# status 23 (LSAN_OPTIONS detect_double_free=1), or the program goes on
# (detect_double_free=0, nothing freed twice).
set -u
fx=$1
nofp=${2:-}
fail=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hc_dfree.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset HEAPCHECK HEAPPROFILE HEAPCHECK_REPORT LSAN_OPTIONS HEAPCHECK_FREE_STACKS HEAPCHECK_FREE_HISTORY
bad() { echo "FAIL: $*"; fail=1; }

# run NAME WANT_STATUS ENV... -- CASE: runs the fixture, checks the status
run() {
  name=$1 want=$2
  shift 2
  envs=
  while [ "$1" != -- ]; do envs="$envs $1"; shift; done
  shift
  env $envs "$fx" "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  if [ "$rc" -ne "$want" ]; then
    bad "$name: exit status $rc, want $want; stderr: $(head -c 600 "$tmp/err")"
    return 1
  fi
  return 0
}
# has NAME REGEX: a line of the report matches
has() {
  grep -Eq "$2" "$tmp/err" || bad "$1: no line matches /$2/ in: $(head -c 1500 "$tmp/err")"
}
# after NAME HEADER REGEX [K]: the line after HEADER (the K-th after it) matches REGEX
after() {
  line=$(grep -A"${4:-1}" -F "$2" "$tmp/err" | sed -n "$((${4:-1} + 1))p")
  printf '%s\n' "$line" | grep -Eq "$3" || bad "$1: after \"$2\" (+${4:-1}): \"$line\" does not match /$3/"
}

for c in small large; do
  n="normal $c"
  if run "$n" 134 HEAPCHECK=normal -- $c; then
    has "$n" '^heapcheck: free\(\): double free of 0x[0-9a-f]+; called from 0x'
    after "$n" 'The second free occurred here:' '#0 free '
    has "$n" '#1 0x[0-9a-f]+ second_free .*double_free_fixture.c:'
    # The first free's whole stack by default: first_free, then main.
    after "$n" 'The first free occurred here:' '#0 0x[0-9a-f]+ first_free .*double_free_fixture.c:'
    after "$n" 'The first free occurred here:' '#1 0x[0-9a-f]+ main ' 2
    after "$n" 'The memory was allocated here:' '#0 0x[0-9a-f]+ make_block .*double_free_fixture.c:'
    has "$n" '^SUMMARY: heapcheck: double-free$'
  fi
done

# HEAPCHECK_FREE_STACKS=0: the first free's caller alone.
n="normal small, HEAPCHECK_FREE_STACKS=0"
if run "$n" 134 HEAPCHECK=normal HEAPCHECK_FREE_STACKS=0 -- small; then
  after "$n" 'The first free occurred here (its caller; HEAPCHECK_FREE_STACKS=0):' '#0 0x[0-9a-f]+ first_free '
  after "$n" 'The first free occurred here' 'The memory was allocated here:' 2
fi

# Code without frame pointers: a free's stack would be a DWARF walk (+33 %
# on python3's checked run), so by default the caller alone, said; the
# whole stack when asked for.
if [ -n "$nofp" ]; then
  n="nofp small"
  if env HEAPCHECK=normal "$nofp" small >"$tmp/out" 2>"$tmp/err"; [ $? -eq 134 ]; then
    after "$n" 'The first free occurred here (its caller: its stack was not walked; HEAPCHECK_FREE_STACKS=1' \
      '#0 0x[0-9a-f]+ first_free '
    after "$n" 'The memory was allocated here:' '#0 0x[0-9a-f]+ make_block .*double_free_fixture.c:'
  else
    bad "$n: exit status, want 134: $(head -c 600 "$tmp/err")"
  fi
  n="nofp small, HEAPCHECK_FREE_STACKS=1"
  if env HEAPCHECK=normal HEAPCHECK_FREE_STACKS=1 "$nofp" small >"$tmp/out" 2>"$tmp/err"; [ $? -eq 134 ]; then
    after "$n" 'The first free occurred here:' '#0 0x[0-9a-f]+ first_free .*double_free_fixture.c:'
    after "$n" 'The first free occurred here:' '#1 0x[0-9a-f]+ main ' 2
  else
    bad "$n: exit status, want 134: $(head -c 600 "$tmp/err")"
  fi
fi

n="normal realloc"
if run "$n" 134 HEAPCHECK=normal -- realloc; then
  has "$n" '^heapcheck: realloc\(\): invalid pointer 0x[0-9a-f]+ \(already freed\); called from 0x'
  has "$n" '#1 0x[0-9a-f]+ grow'
  after "$n" 'The first free occurred here:' 'first_free'
  after "$n" 'The first free occurred here:' '#1 0x[0-9a-f]+ main ' 2
  after "$n" 'The memory was allocated here:' 'make_block'
fi

# The first free through path_b, from where path_a's frees started too:
# its own stack, not the last one taken there.
n="normal paths"
if run "$n" 134 HEAPCHECK=normal -- paths; then
  after "$n" 'The first free occurred here:' '#0 0x[0-9a-f]+ first_free '
  after "$n" 'The first free occurred here:' '#1 0x[0-9a-f]+ path_b ' 2
fi

# No descriptor left for the symbolizer to open the executable with: the
# loaded image's dynamic symbols name the exported function.
n="normal nofile"
if run "$n" 134 HEAPCHECK=normal -- nofile; then
  has "$n" '#1 0x[0-9a-f]+ df_exported_free \(.*double_free_fixture\+0x'
  after "$n" 'The first free occurred here:' '#0 0x[0-9a-f]+ df_exported_free \('
fi

n="normal interior"
if run "$n" 134 HEAPCHECK=normal -- interior; then
  has "$n" '^heapcheck: free\(\): invalid pointer 0x[0-9a-f]+ \(not the start of a heapcheck object\)'
  has "$n" '^0x[0-9a-f]+ is 16 bytes inside a block of 64 bytes, allocated here:$'
  after "$n" 'bytes, allocated here:' 'make_block'
  has "$n" '^SUMMARY: heapcheck: bad-free$'
fi

# Eight threads free one block: one frees it, the first double free is
# reported (exactly one report), the process ends.
n="normal race"
if run "$n" 134 HEAPCHECK=normal -- race; then
  [ "$(grep -c '^SUMMARY: heapcheck: double-free$' "$tmp/err")" = 1 ] || bad "$n: not exactly one report"
  after "$n" 'The first free occurred here:' '#0 0x[0-9a-f]+ racer '
fi

# A thread with a 16 KiB stack: the report runs on the library's own stack
# (it died of SIGSEGV on the thread's, with no line printed).
n="normal smallstack"
if run "$n" 134 HEAPCHECK=normal -- smallstack; then
  has "$n" '#1 0x[0-9a-f]+ second_free '
  after "$n" 'The first free occurred here:' 'first_free'
  after "$n" 'The first free occurred here:' '#1 0x[0-9a-f]+ small_stack_thread ' 2
  has "$n" '^SUMMARY: heapcheck: double-free$'
fi

# No table: the report says so.
n="normal small, HEAPCHECK_FREE_HISTORY=0"
if run "$n" 134 HEAPCHECK=normal HEAPCHECK_FREE_HISTORY=0 -- small; then
  has "$n" 'the table of recent frees no longer holds it'
fi

# LeakSanitizer's options: detect_double_free=1 reports and exits 23 (no
# signal; with detect_leaks=0 the records are kept for this report alone);
# detect_double_free=0 lets the double free pass and the program ends.
for o in detect_double_free=1 detect_leaks=0:detect_double_free=1; do
  n="LSAN_OPTIONS=$o small"
  if run "$n" 23 LSAN_OPTIONS=$o -- small; then
    after "$n" 'The first free occurred here:' 'first_free'
    after "$n" 'The memory was allocated here:' 'make_block'
  fi
  n="LSAN_OPTIONS=$o race"
  run "$n" 23 LSAN_OPTIONS=$o -- race
done
# (Racing frees only in checker mode, where one exchange takes the record:
# the plain allocator's mark is tested and set by two instructions.)
for o in detect_double_free=0 detect_leaks=0:detect_double_free=0; do
  cases="small large"
  [ $o = detect_double_free=0 ] && cases="$cases race"
  for c in $cases; do
    n="LSAN_OPTIONS=$o $c"
    if run "$n" 0 LSAN_OPTIONS=$o -- $c; then
      grep -q '^completed$' "$tmp/out" || bad "$n: did not complete"
      ! grep -q 'double free' "$tmp/err" || bad "$n: reported: $(head -c 300 "$tmp/err")"
    fi
  done
done
n="ok"
run "$n" 0 HEAPCHECK=normal -- ok

[ $fail = 0 ] && echo "all double-free report cases pass"
exit $fail

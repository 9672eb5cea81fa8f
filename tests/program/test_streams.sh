#!/bin/sh
# test_streams.sh - the program's descriptors and signals are its own
# (issue 9 point 6).  Usage: test_streams.sh STREAMS_FIXTURE BROKENPIPE
# Environment: HC_LIB = the built libheapcheck.so.
#
#  - fds 0-2 closed at start: the data files the program opens on them get
#    only its data, and the leak status is still 1;
#  - after close_range(3, ~0U) and a data file on every other descriptor,
#    the report reaches the original stderr and not the data file;
#  - daemon(): $(prog) returns while the daemon still runs (the kept copy of
#    the caller's pipe is released);
#  - the log file closed and removed by the program: the report reaches
#    stderr with a warning (it went nowhere);
#  - fd 2 pointed to /dev/null before the end: a piped stderr still gets
#    the final report (as a file does);
#  - a broken-pipe stderr: no SIGPIPE death at the first malloc nor at a
#    report, and SIGPIPE's disposition, mask and pending state untouched;
#  - the kept copy is close-on-exec and numbered high (under RLIMIT_NOFILE).
prefix=hc_streams
. "$(dirname "$0")/common.sh"
fx=${1:?usage: test_streams.sh STREAMS_FIXTURE BROKENPIPE}
bp=${2:?usage: test_streams.sh STREAMS_FIXTURE BROKENPIPE}

file_is() {  # file_is FILE TEXT: the file holds exactly TEXT and a newline
  checks=$((checks + 1))
  [ "$(cat "$1" 2>/dev/null)" = "$2" ] || fail "$1 holds '$(head -c 300 "$1" 2>/dev/null)', expected '$2'"
}

# ---- fds 0-2 closed at start ----
for mode in normal strict; do
  mkdir -p "$dump/cs.$mode"
  cur="closed-start ($mode)"
  env LD_PRELOAD="$lib" HEAPCHECK=$mode "$fx" closed-start "$dump/cs.$mode" <&- >&- 2>&-
  rc=$?
  out=
  expect_rc 1
  for i in 0 1 2; do file_is "$dump/cs.$mode/data.$i" DATA; done
done
# With a log file the report is still written (there).
mkdir -p "$dump/cs.log"
cur="closed-start with HEAPCHECK_LOG_PATH"
env LD_PRELOAD="$lib" HEAPCHECK=normal HEAPCHECK_LOG_PATH="$dump/cs.log/report" "$fx" closed-start "$dump/cs.log" <&- >&- 2>&-
rc=$?
out=$(cat "$dump/cs.log"/report.* 2>/dev/null)
expect_rc 1
has "Leak of 64 bytes in 1 objects"
for i in 0 1 2; do file_is "$dump/cs.log/data.$i" DATA; done

# ---- close_range(3, ~0U), then the program's data on every descriptor ----
mkdir -p "$dump/cr"
run env LD_PRELOAD="$lib" HEAPCHECK=normal "$fx" close-range "$dump/cr"
expect_rc 1
has "close-range: done"
has "Leak of 64 bytes in 1 objects"
has "SUMMARY: heapcheck: 64 bytes leaked in 1 allocations"
file_is "$dump/cr/data" DATA

# ---- daemon(): the caller's pipe is not held by the daemon ----
mkdir -p "$dump/dm"
cur="\$(daemon)"
out=$(env LD_PRELOAD="$lib" HEAPCHECK=normal "$fx" daemon "$dump/dm" 2>&1)
rc=$?
expect_rc 0
has "daemon: going to the background"
checks=$((checks + 1))
i=0
while [ ! -e "$dump/dm/started" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
[ -e "$dump/dm/started" ] || fail "the daemon never started"
checks=$((checks + 1))
[ ! -e "$dump/dm/exited" ] || fail "\$(...) returned only after the daemon exited: the daemon held the caller's pipe"
: >"$dump/dm/release"
i=0
while [ ! -e "$dump/dm/exited" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done

# ---- the log file closed and removed: the report goes to stderr, with a warning ----
mkdir -p "$dump/lg"
cur="log file gone"
out=$(env LD_PRELOAD="$lib" HEAPCHECK=normal HEAPCHECK_LOG_PATH="$dump/lg/report" "$fx" log-gone "$dump/lg" 2>&1)
rc=$?
expect_rc 1
has "log-gone: done"
has "cannot open the log file $dump/lg/report."
has "Leak of 64 bytes in 1 objects"

# ---- fd 2 pointed to /dev/null, then the final check: a piped stderr gets the report ----
for mode in normal strict; do
  cur="redirect ($mode), stderr a pipe"
  out=$(env LD_PRELOAD="$lib" HEAPCHECK=$mode "$fx" redirect 2>&1)
  rc=$?
  expect_rc 1
  has "redirect: done"
  has "Leak of 64 bytes in 1 objects"
  has "SUMMARY: heapcheck: 64 bytes leaked in 1 allocations"
done

# ---- a broken-pipe stderr ----
for m in default blocked pending; do
  run "$bp" env LD_PRELOAD="$lib" HEAPCHECK=normal "$fx" sigpipe $m
  expect_rc 1 # the scoped check's leak is still there at exit: leak status, no death by SIGPIPE
  has "sigpipe $m: untouched"
  lacks "killed by signal"
done
# Without the checker too (allocator messages go to fd 2 as well).
run "$bp" env LD_PRELOAD="$lib" HEAPCHECK=local "$fx" sigpipe default
lacks "killed by signal"

# ---- the kept copy: close-on-exec, high, under the soft limit ----
cur="kept descriptor"
out=$(env LD_PRELOAD="$lib" HEAPCHECK=local sh -c 'ls -l /proc/$$/fd' 2>&1)
has_re "(99[0-9]|1000) -> "
out=$(env LD_PRELOAD="$lib" HEAPCHECK=local sh -c 'ulimit -n 64; exec sh -c "ls -l /proc/\$\$/fd"' 2>&1)
lacks_re " (99[0-9]|1000) -> "
finish test_streams

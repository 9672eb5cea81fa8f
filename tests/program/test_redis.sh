#!/bin/sh
# test_redis.sh - redis-server under HEAPCHECK=normal (issue 9 point 5).
#
# redis sizes its strings with malloc_usable_size; with sizes that realloc
# did not keep, it refused its own command-line configuration.  This starts
# redis-server (Debian package redis-server, tools/install-deps.sh) on
# 127.0.0.1 only, in a private directory, with --save '' (no files), checked
# by heapcheck, answers a bounded redis-benchmark (2000 requests a test) and
# is stopped with SIGTERM at the end (killed if it does not stop).
# Exit 77 (skipped) when redis-server or redis-benchmark is missing.
# Environment: HC_LIB = the built libheapcheck.so.
for p in redis-server redis-benchmark timeout; do
  command -v $p >/dev/null 2>&1 || { echo "$p not installed: skipped"; exit 77; }
done
prefix=hc_redis
. "$(dirname "$0")/common.sh"
pid=
cleanup() {
  [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
  rm -rf "$dump"
}
trap cleanup EXIT

# start PORT: redis-server in the background; waits (bounded) until it is
# ready or has exited; ready=1 when it accepts connections.
start() {
  port=$1
  : >"$dump/log"
  (cd "$dump" && exec env LD_PRELOAD="$lib" HEAPCHECK=normal timeout 300 redis-server --port "$port" \
     --bind 127.0.0.1 --save '' --appendonly no --dir "$dump" --daemonize no >"$dump/log" 2>&1) &
  pid=$!
  ready=0
  i=0
  while [ $i -lt 300 ]; do
    grep -q "Ready to accept connections" "$dump/log" && { ready=1; return; }
    kill -0 "$pid" 2>/dev/null || return
    sleep 0.1
    i=$((i + 1))
  done
}

base=$((20000 + $$ % 20000))
for try in 0 1 2 3 4; do
  start $((base + try * 7))
  [ "$ready" = 1 ] && break
  wait "$pid" 2>/dev/null
  pid=
  grep -q "Address already in use" "$dump/log" || break
done
cur="redis-server --port $port under HEAPCHECK=normal"
out=$(cat "$dump/log")
checks=$((checks + 1))
[ "$ready" = 1 ] || fail "redis-server did not become ready"
lacks "FATAL CONFIG FILE ERROR"
has "Configuration loaded"

if [ "$ready" = 1 ]; then
  cur="redis-benchmark -h 127.0.0.1 -p $port -n 2000 -q"
  timeout 240 redis-benchmark -h 127.0.0.1 -p "$port" -n 2000 -q >"$dump/bench" 2>&1
  rc=$?
  out=$(tr '\r' '\n' <"$dump/bench") # progress lines end in \r
  expect_rc 0
  has_re "^ *PING_INLINE: .*[0-9.]+ requests per second"
  has_re "^ *SET: .*[0-9.]+ requests per second"
  has_re "^ *GET: .*[0-9.]+ requests per second"
  has_re "^ *LRANGE_600 .*[0-9.]+ requests per second"
  kill -TERM "$pid"
  i=0
  while kill -0 "$pid" 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
  wait "$pid"
  rc=$?
  pid=
  cur="redis-server after SIGTERM"
  out=$(cat "$dump/log")
  expect_rc 0
  has "ready to exit"
  has "No leaks found"
fi
finish test_redis

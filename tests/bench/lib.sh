# tests/bench/lib.sh - helpers shared by run.sh, callgrind_pair.sh and run_checker.sh.
#
# Source it (bash); it defines functions and these variables:
#   BENCH_DIR  this directory          ROOT   the source tree
#   BUILD      the build dir (default $ROOT/build-bench; callers may set it first)
#   LIBDIR     /usr/lib/<multiarch>    HEAPCHECK_LIB  $BUILD/libheapcheck.so
# Nothing here asserts a timing; failures are reported as "n/a"/"fail" by the callers.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$BENCH_DIR/../.." && pwd)
: "${BUILD:=$ROOT/build-bench}"
: "${CC:=cc}"
MULTIARCH=$(gcc -print-multiarch 2>/dev/null || true)
[ -n "$MULTIARCH" ] || MULTIARCH=x86_64-linux-gnu
LIBDIR=/usr/lib/$MULTIARCH
HEAPCHECK_LIB=$BUILD/libheapcheck.so
BENCH_APT_UPDATED=${BENCH_APT_UPDATED:-0}

# The peers' run-time libraries are ours to run, never to link against.
BENCH_ALL_ALLOCATORS="glibc jemalloc tcmalloc mimalloc heapcheck"
# Variants: heapcheck's library run with a setting (allocator_env), accepted
# wherever an allocator name is:
#   heapcheck-nosample  HEAPCHECK_SAMPLE_PARAMETER=0 (no sampling at all)
#   heapcheck-normal    HEAPCHECK=normal (every allocation's stack recorded)
#   heapcheck-sample8x  HEAPCHECK_SAMPLE_PARAMETER=65536: 8 times the default
#                       sampling rate, so sampling's cost stands out of the
#                       noise (cost at the default rate ~ (ratio - 1) / 8)
#   heapcheck-alt       the library named by BENCH_ALT_LIB (another build or
#                       branch, compared in the same interleaved run)
BENCH_VARIANTS="heapcheck-nosample heapcheck-normal heapcheck-sample8x heapcheck-alt"

log() { echo "[bench] $*" >&2; }

# The allocator workloads (tests/bench/bench_<name>.c), and the arguments that
# give about a tenth of each one's default work (run.sh --quick).
BENCH_ALL_WORKLOADS="pairs larson prodcons random_live realloc large malloc_large falseshare xmalloc xfree xfree4 churn server"
# bench_prog WORKLOAD: the program a workload runs (bench_<name>, except
# malloc_large: bench_large with the arguments of bench_args).
bench_prog() {
  case $1 in
    malloc_large) echo bench_large ;;
    xfree4) echo bench_xfree ;;
    *) echo "bench_$1" ;;
  esac
}
# bench_args WORKLOAD: arguments every run of it gets (before --quick's).
bench_args() {
  case $1 in
    malloc_large) echo "-s 20 -m 64 -o 8 -z 1" ;;
    xfree4) echo "-t 4" ;;
  esac
}
bench_quick_args() {
  case $1 in
    malloc_large) echo "-n 200" ;;
    xfree|xfree4) echo "-n 200000" ;;
    churn) echo "-r 10" ;;
    server) echo "-n 5000" ;;
    pairs) echo "-n 2000000" ;;
    larson) echo "-r 12" ;;
    prodcons) echo "-n 1000000" ;;
    random_live) echo "-s 4000 -n 100000" ;;
    realloc) echo "-n 400000" ;;
    large) echo "-n 400" ;;
    falseshare) echo "-n 10" ;;
    xmalloc) echo "-n 100" ;;
  esac
}

# bench_workloads "w1,w2" SCRIPT: the workloads to run (all when empty);
# exits with a message naming SCRIPT on an unknown one.
bench_workloads() {
  local list=${1//,/ } w
  list=${list:-$BENCH_ALL_WORKLOADS}
  for w in $list; do
    case " $BENCH_ALL_WORKLOADS " in *" $w "*) ;; *) echo "$2: unknown workload $w" >&2; exit 2 ;; esac
  done
  echo "$list"
}

# pkg_lib PACKAGE FILENAME: the path of FILENAME, looked up in the package's
# file list when it is not at the usual place (multiarch dirs move).
pkg_lib() {
  local pkg=$1 name=$2 p
  if [ -e "$LIBDIR/$name" ]; then echo "$LIBDIR/$name"; return 0; fi
  p=$(dpkg -L "$pkg" 2>/dev/null | grep -m1 "/$name\$" || true)
  [ -n "$p" ] && [ -e "$p" ] && { echo "$p"; return 0; }
  return 1
}

# allocator_lib NAME: prints the library to preload ("" for glibc); fails when
# the allocator is not available.
allocator_lib() {
  case $1 in
    glibc) echo "" ;;
    jemalloc) pkg_lib libjemalloc2 libjemalloc.so.2 ;;
    tcmalloc) pkg_lib libtcmalloc-minimal4 libtcmalloc_minimal.so.4 ;;
    mimalloc) pkg_lib libmimalloc2.0 libmimalloc.so.2 ;;
    heapcheck|heapcheck-nosample|heapcheck-normal|heapcheck-sample8x) [ -e "$HEAPCHECK_LIB" ] && echo "$HEAPCHECK_LIB" ;;
    heapcheck-alt) [ -n "${BENCH_ALT_LIB:-}" ] && [ -e "$BENCH_ALT_LIB" ] && realpath "$BENCH_ALT_LIB" ;;
    *) return 1 ;;
  esac
}

# allocator_env NAME: the NAME=VALUE settings a variant runs with (none for
# the plain allocators).
allocator_env() {
  case $1 in
    heapcheck-nosample) echo "HEAPCHECK_SAMPLE_PARAMETER=0" ;;
    heapcheck-normal) echo "HEAPCHECK=normal" ;;
    heapcheck-sample8x) echo "HEAPCHECK_SAMPLE_PARAMETER=65536" ;;
  esac
}

# apt_install PKG...: one apt-get update per script run, then install.
# Only as root and unless BENCH_NO_INSTALL=1.  Never fatal.
apt_install() {
  [ "${BENCH_NO_INSTALL:-0}" = 1 ] && { log "not installing $* (--no-install)"; return 1; }
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    log "cannot install $* (not root or no apt-get)"; return 1
  fi
  if [ "$BENCH_APT_UPDATED" = 0 ]; then
    log "apt-get update"
    apt-get update >/dev/null 2>&1 || log "apt-get update failed"
    BENCH_APT_UPDATED=1
  fi
  log "apt-get install -y $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >/dev/null 2>&1 || { log "apt-get install $* failed"; return 1; }
}

# ensure_peers [valgrind]: installs the peer allocators (and valgrind when
# asked) when any of them is missing.
ensure_peers() {
  local want=() a
  allocator_lib jemalloc >/dev/null || want+=(libjemalloc2)
  allocator_lib tcmalloc >/dev/null || want+=(libtcmalloc-minimal4)
  allocator_lib mimalloc >/dev/null || want+=(libmimalloc2.0)
  for a in "$@"; do
    case $a in
      valgrind) command -v valgrind >/dev/null || want+=(valgrind) ;;
      clang) command -v clang >/dev/null || want+=(clang libclang-rt-dev) ;;
    esac
  done
  [ ${#want[@]} -eq 0 ] || apt_install "${want[@]}" || true
}

# build_project: meson setup (release) + ninja in $BUILD.  Never fatal: when
# the tree does not build, the benchmark programs are compiled directly and
# heapcheck is reported n/a.  Sets BENCH_BUILD_OK=1 when ninja succeeded.
build_project() {
  BENCH_BUILD_OK=0
  if [ "${BENCH_NO_BUILD:-0}" = 1 ]; then log "skipping the project build (--no-build)"; return 0; fi
  if ! command -v meson >/dev/null || ! command -v ninja >/dev/null; then
    apt_install meson ninja-build || true
  fi
  if ! command -v meson >/dev/null || ! command -v ninja >/dev/null; then
    log "meson/ninja unavailable: heapcheck will be n/a"; return 0
  fi
  mkdir -p "$BUILD"
  local blog="$BUILD/bench-build.log"
  : >"$blog"
  if [ ! -f "$BUILD/build.ninja" ]; then
    # A half-configured dir (failed setup) cannot be set up again in place.
    if [ -d "$BUILD/meson-private" ]; then
      rm -rf "$BUILD/meson-private" "$BUILD/meson-info" "$BUILD/meson-logs"
    fi
    log "meson setup $BUILD --buildtype=release"
    if ! meson setup "$BUILD" "$ROOT" --buildtype=release >>"$blog" 2>&1; then
      log "meson setup failed (see $blog): heapcheck will be n/a"; return 0
    fi
  fi
  log "ninja -C $BUILD"
  if ninja -C "$BUILD" >>"$blog" 2>&1; then
    BENCH_BUILD_OK=1
  else
    # Someone's file may be broken: still try the library and our programs.
    log "full build failed (see $blog); building the library and benchmarks alone"
    local t
    for t in $(ninja -C "$BUILD" -t targets all 2>/dev/null | sed -n 's/^\(libheapcheck\.so[^:]*\|tests\/bench\/[a-z_]*\): .*/\1/p'); do
      ninja -C "$BUILD" "$t" >>"$blog" 2>&1 || true
    done
  fi
  [ -e "$HEAPCHECK_LIB" ] || log "no $HEAPCHECK_LIB: heapcheck will be n/a"
  return 0
}

# bench_newer BIN SRC: BIN exists and is newer than SRC and than the header
# every program includes (bench_common.h).
bench_newer() {
  [ -x "$1" ] && [ "$1" -nt "$2" ] && [ "$1" -nt "$BENCH_DIR/bench_common.h" ]
}

# bench_bin NAME [EXTRA_CFLAGS...]: path of tests/bench/NAME built by meson
# when that is up to date, else compiled directly with $CC into
# $BUILD/bench-direct.  Prints the path; fails when it cannot compile.
bench_bin() {
  local name=$1; shift
  local src="$BENCH_DIR/$name.c" m="$BUILD/tests/bench/$name"
  if bench_newer "$m" "$src"; then echo "$m"; return 0; fi
  local d="$BUILD/bench-direct" out
  out="$d/$name"
  mkdir -p "$d"
  if ! bench_newer "$out" "$src"; then
    $CC -std=gnu11 -O2 -pthread -Wall -Wextra "$@" -o "$out" "$src" >&2 || return 1
  fi
  echo "$out"
}

# median and max of numbers on stdin (mawk has no asort).
stat_median() { sort -g | awk '{v[NR]=$1} END{ if (NR==0) exit 1; if (NR%2) print v[(NR+1)/2]; else printf "%.4f\n", (v[NR/2]+v[NR/2+1])/2 }'; }
stat_max() { sort -g | tail -1; }

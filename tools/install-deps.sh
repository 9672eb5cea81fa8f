#!/bin/sh
# Installs what building heapcheck and running its whole test suite need on
# Debian 12 (as root, or with sudo available).  Packages already present are
# left alone; apt-get runs only when something is missing.
set -u
pkgs="meson ninja-build pkg-config gcc g++ clang binutils python3 perl git sqlite3 bash coreutils
      google-perftools valgrind redis-server redis-tools cmake make chromium golang-go
      golang-github-google-pprof-dev bpftrace strace gdb tcc"
missing=""
for p in $pkgs; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq && $SUDO apt-get install -y -qq $missing >/dev/null

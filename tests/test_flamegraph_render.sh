#!/bin/sh
# test_flamegraph_render.sh - the flame graph SVG renders in a browser and its
# script works: headless Chromium takes two screenshots of the leak flame
# graph of examples/report_formats, one plain (every frame's rectangle shows
# its colour) and one loaded with ?z=legacy_buffer&s=legacy_buffer (the frame
# is zoomed to the full width and highlighted by the search, its ancestors
# dimmed).  check_report_formats.py reads the PNGs (no imaging library).
#
# usage: test_flamegraph_render.sh REPORT_FORMATS
# Prints SKIP and exits 77 only when chromium is not installed (Debian
# package chromium, installed by tools/install-deps.sh).
set -u
prog=$1
here=$(cd "$(dirname "$0")" && pwd)
browser=
for b in chromium chromium-browser google-chrome; do
  command -v "$b" >/dev/null 2>&1 && { browser=$b; break; }
done
if [ -z "$browser" ]; then
  echo "SKIP: chromium not installed"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/hc_fgrender.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset HEAPCHECK HEAPCHECK_REPORT HEAPPROFILE LD_PRELOAD
HEAPCHECK=normal HEAP_CHECK_DUMP_DIRECTORY=$tmp HEAPCHECK_REPORT="svg:$tmp/leaks.svg" "$prog" >"$tmp/out" 2>&1
if [ ! -s "$tmp/leaks.svg" ]; then
  cat "$tmp/out"
  echo "FAIL: no flame graph written"
  exit 1
fi
shot() { # shot PNG QUERY
  timeout 120 "$browser" --headless --no-sandbox --disable-gpu --no-first-run --disable-extensions \
    --user-data-dir="$tmp/profile" --window-size=1200,300 --screenshot="$1" "file://$tmp/leaks.svg$2" \
    >"$tmp/browser.log" 2>&1
  [ -s "$1" ] || { cat "$tmp/browser.log"; echo "FAIL: $browser wrote no screenshot $1"; exit 1; }
}
shot "$tmp/plain.png" ""
shot "$tmp/zoomed.png" "?z=legacy_buffer&s=legacy_buffer"
if python3 "$here/check_report_formats.py" render "$tmp/leaks.svg" "$tmp/plain.png" "$tmp/zoomed.png" legacy_buffer; then
  echo "PASS"
  exit 0
fi
trap - EXIT
echo "files kept in $tmp"
exit 1

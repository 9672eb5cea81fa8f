#!/bin/sh
# test_security.sh FIXTURE - issue 4, point 8:
#  1. leak-profile files are created with O_EXCL|O_NOFOLLOW: a symlink planted
#     where the file goes is replaced, its target never written;
#  2. a setuid program ignores HEAPCHECK and HEAPPROFILE: no report, exit
#     status 0 despite the leak, no file written (needs root to make the
#     setuid copy; skipped otherwise).
set -u
fx=$1
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { if eval "$1"; then echo "ok: $2"; else echo "FAIL: $2"; fail=1; fi; }

# 1. symlink in the dump directory
mkdir "$tmp/dump"
echo keep >"$tmp/dump/target"
HEAPCHECK=normal HEAP_CHECK_DUMP_DIRECTORY="$tmp/dump" "$fx" "$tmp/dump" >"$tmp/out1" 2>"$tmp/err1"
rc=$?
check '[ $rc -eq 1 ]' "leaking fixture exits 1 (got $rc)"
check 'grep -q "SUMMARY: heapcheck: 100 bytes leaked in 1 allocations" "$tmp/err1"' "the leak is reported"
check '[ "$(cat "$tmp/dump/target")" = keep ]' "the symlink target was not written"
prof=$(ls "$tmp/dump" | grep '_main_-end.heap$' || true)
check '[ -n "$prof" ] && [ -f "$tmp/dump/$prof" ] && [ ! -L "$tmp/dump/$prof" ]' "the profile is a regular file, not the symlink"
check 'grep -q "^heap profile:" "$tmp/dump/$prof"' "the profile has its header"

# 2. setuid
if [ "$(id -u)" -ne 0 ] || ! id nobody >/dev/null 2>&1; then
  echo "SKIP: setuid part needs root and a 'nobody' user"
else
  mkdir "$tmp/suid" "$tmp/suid/dump" && chmod 755 "$tmp" "$tmp/suid" && chmod 777 "$tmp/suid/dump"
  cp "$fx" "$tmp/suid/fx" && chown nobody "$tmp/suid/fx" && chmod 4755 "$tmp/suid/fx"
  if mount | grep -q " $(df --output=target "$tmp" | tail -1) .*nosuid"; then
    echo "SKIP: $tmp is on a nosuid mount"
  else
    HEAPCHECK=normal HEAPPROFILE="$tmp/suid/dump/hp" HEAP_CHECK_DUMP_DIRECTORY="$tmp/suid/dump" \
      "$tmp/suid/fx" >"$tmp/out2" 2>"$tmp/err2"
    rc=$?
    check 'grep -q "euid=65534" "$tmp/out2"' "the copy really runs setuid ($(cat "$tmp/out2"))"
    check '[ $rc -eq 0 ]' "setuid: HEAPCHECK ignored, exit status 0 (got $rc)"
    check '! grep -q "heapcheck\|Leak check\|Perftools" "$tmp/err2"' "setuid: no checker output"
    check '[ -z "$(ls "$tmp/suid/dump")" ]' "setuid: no file written"
    # the same copy without setuid does check (so the test can fail)
    chmod 755 "$tmp/suid/fx"
    HEAPCHECK=normal HEAP_CHECK_DUMP_DIRECTORY="$tmp/suid/dump" "$tmp/suid/fx" >/dev/null 2>"$tmp/err3"
    check '[ $? -eq 1 ] && grep -q SUMMARY "$tmp/err3"' "without setuid the same binary reports the leak"
  fi
fi
[ $fail -eq 0 ] && echo "PASS" || echo "FAIL"
exit $fail

#!/bin/sh
# test_tcc_stacks.sh - allocation stacks through a program whose module range
# glibc reports as its code segment only, and through code generated at run
# time: tcc (Debian 12's /usr/bin/tcc, built without frame pointers).
#
# Usage: test_tcc_stacks.sh   (HC_LIB = libheapcheck.so; skipped, 77, without tcc)
#
# glibc 2.36's _dl_find_object gives tcc's executable as [its code segment),
# where no ELF header is: every tcc frame used to end the DWARF walk, so tcc's
# own leaks had one frame (valgrind: tcc, tcc's main, libc's start).  A
# program run by `tcc -run` calls malloc from code in no module (valgrind
# walks it by its frame pointer): its leak had one frame, the generated one.

. "$(dirname "$0")/expect.sh"

lib=${HC_LIB:?HC_LIB must name libheapcheck.so}
tcc=$(command -v tcc) || { echo "tcc is not installed: skipped"; exit 77; }
expect_private_env hc_tcc
tmp=$dump

run() { cur="$*"; out=$("$@" 2>&1); rc=$?; }

cat >"$tmp/list.c" <<'EOS'
#include <stdio.h>
#include <stdlib.h>
struct node { struct node *next; int v; };
static struct node *build(int n) {
  struct node *h = 0;
  for (int i = 0; i < n; i++) { struct node *x = malloc(sizeof *x); x->v = i; x->next = h; h = x; }
  return h;
}
int main(void) { struct node *h = build(10); h = 0; puts("built"); return 0; }
EOS

# The generated code's leak: its stack goes on through tcc (tcc_run, main)
# to libc's start, as valgrind's does.
run env HEAPCHECK=normal LD_PRELOAD="$lib" "$tcc" -run "$tmp/list.c"
expect_rc 1
has "built"
has "Leak of 16 bytes in 1 objects"
stack=$(printf '%s\n' "$out" | sed -n '/^Leak of 16 bytes/,/^$/p')
printf '%s\n' "$stack" | grep -q '__libc_start_call_main' ||
  { out=$stack; fail "the generated code's leak has no frame past the generated code"; }
checks=$((checks + 1))
n=$(printf '%s\n' "$stack" | grep -c "$(basename "$tcc")+0x")
[ "$n" -ge 2 ] || { out=$stack; fail "$n frames in tcc, expected 2 (tcc_run and main)"; }
checks=$((checks + 1))

# The totals: tcc keeps in a global the address of a block it freed while
# compiling, and an allocator that reuses it at once puts one of the
# program's nodes there, which the stale word then keeps alive with the rest
# of the list (32 bytes in 1 object instead of valgrind's and LSan's 32000 in
# 1000, session 15).  Checker mode's quarantine (HEAPCHECK_QUARANTINE, off
# by default) keeps freed blocks out of reuse: the whole list is reported.
sed 's/build(10)/build(1000)/' "$tmp/list.c" >"$tmp/list1000.c"
run env HEAPCHECK=normal HEAPCHECK_QUARANTINE=20M LD_PRELOAD="$lib" "$tcc" -run "$tmp/list1000.c"
expect_rc 1
has "built"
has "SUMMARY: heapcheck: 16000 bytes leaked in 1000 allocations"

# tcc's own allocations (tcc without arguments prints its usage and keeps
# its state): every record's stack reaches libc's start through tcc's main.
run env HEAPCHECK=normal HEAP_CHECK_MAX_LEAKS=0 LD_PRELOAD="$lib" "$tcc"
has "Tiny C Compiler"
if printf '%s\n' "$out" | grep -q '^Leak of'; then
  records=$(printf '%s\n' "$out" | grep -c '^Leak of')
  deep=$(printf '%s\n' "$out" | awk '/^(Leak|Indirect leak) of/ { inrec = /^Leak/; next } /^$/ { inrec = 0 } inrec && /__libc_start_call_main/ { n++ } END { print n + 0 }')
  checks=$((checks + 1))
  [ "$deep" = "$records" ] || fail "$deep of $records leak records reach libc's start"
fi

finish test_tcc_stacks

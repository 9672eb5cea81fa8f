#!/bin/sh
# test_static.sh - fully static executables (gcc -static ... libheapcheck.a)
# outside the leak checker's modes, which run_scenarios.sh covers: the
# default sampling (HEAPCHECK unset: every 512 KiB allocated walks a stack),
# every unwinder, a heap profile written at exit, and the whole-program
# check with a DWARF-walked stack.  Before the fix, every checker mode
# crashed in the first malloc (libc.a's _dl_find_object before its init).
# Where the program ended (exit's caller, found by unwinding from the
# at-exit check through .eh_frame): in a stripped executable (no symbol
# table) too, and the fallback when the walk cannot be done (no section
# headers, so no .eh_frame to read): the check scans from itself up, as
# before, and still completes.
#
# libc's start frames (main's caller up to argc) are found by the same walk
# and are not roots; the verbose note says which way they were found.
#
# Usage: test_static.sh MANY_OBJECTS_FULLSTATIC LEAK_LIST_FULLSTATIC
#          STALE_MAIN_PAD_FULLSTATIC_STRIPPED MAIN_STACK_EXIT_FULLSTATIC
#          STALE_THREAD_EXIT_FULLSTATIC STATIC_NOFP_LEAK STATIC_REALIGN_EXIT
#          [STATIC_CXX_LEAK]
. "$(dirname "$0")/expect.sh"
expect_private_env hc_static
many=$1
list=$2
pad_stripped=$3
stack_exit=$4
thread_exit=$5
nofp=$6
realign_exit=$7
cxx=${8:-}

run() { cur="$*"; out=$(env "$@" 2>&1); rc=$?; }

# Default sampling, no checker: the program's own status and output.
for u in auto fp dwarf; do
  run HEAPCHECK_UNWINDER=$u "$many"
  expect_rc 0
  lacks "heapcheck"
done
# Every allocation sampled, every unwinder.
for u in auto fp dwarf; do
  run HEAPCHECK_SAMPLE_PARAMETER=1 HEAPCHECK_UNWINDER=$u "$many"
  expect_rc 0
done
# A heap profile at exit.
run HEAPPROFILE="$dump/prof" HEAPCHECK_UNWINDER=dwarf "$many"
expect_rc 0
has "Starting tracking the heap"
if ls "$dump"/prof.*.heap >/dev/null 2>&1; then
  checks=$((checks + 1))
  grep -q "heap profile" "$dump"/prof.*.heap || fail "the profile has no header"
else
  fail "no profile written in $dump"
fi
# The checker with the DWARF unwinder: stacks reach main in the executable.
for m in normal strict; do
  run HEAPCHECK=$m HEAPCHECK_UNWINDER=dwarf "$list"
  expect_rc 1
  has "SUMMARY: heapcheck: 320 bytes leaked in 10 allocations"
  has_re "@ [0-9a-f]+ main .*leak_list.c:[0-9]+"
done
# Stripped: exit's extent comes from its FDE, not from a symbol; main's
# dead frame (the only pointer to the 100-byte block) is not a root.
# main returned: the walk reaches _start without meeting main, and libc's
# start frames begin at exit's caller.
for m in normal strict; do
  run HEAPCHECK=$m PERFTOOLS_VERBOSE=1 "$pad_stripped"
  expect_rc 1
  has "SUMMARY: heapcheck: 100 bytes leaked in 1 allocations"
  has_re "libc's start frames \[0x[0-9a-f]+, 0x[0-9a-f]+\) are not roots \(main returned\)"
done
# Another thread called exit: main is not on its stack and the walk ends at
# the thread's start, but the start frames are the main thread's: kept.
run HEAPCHECK=normal PERFTOOLS_VERBOSE=1 "$thread_exit"
expect_rc 1
has "SUMMARY: heapcheck: 228 bytes leaked in 5 allocations"
lacks "libc's start frames"
# No section headers (e_shoff, e_shnum, e_shstrndx zeroed in a copy): no
# .eh_frame to walk by; the check falls back to scanning from itself and
# says so.  main's live local keeps its block; the 77-byte control leaks.
noshdr="$dump/main_stack_exit_noshdr"
cp "$stack_exit" "$noshdr" && chmod +x "$noshdr" &&
  dd if=/dev/zero of="$noshdr" bs=1 seek=40 count=8 conv=notrunc 2>/dev/null &&
  dd if=/dev/zero of="$noshdr" bs=1 seek=60 count=4 conv=notrunc 2>/dev/null || fail "cannot copy $stack_exit"
# clang's driver links -static executables with .eh_frame_hdr (a program
# header, not a section): then the walk needs no section header and works.
hdr=0
readelf -lW "$stack_exit" 2>/dev/null | grep -q GNU_EH_FRAME && hdr=1
for m in normal strict; do
  run HEAPCHECK=$m PERFTOOLS_VERBOSE=1 "$noshdr"
  expect_rc 1
  has "SUMMARY: heapcheck: 77 bytes leaked in 1 allocations"
  if [ "$hdr" = 0 ]; then has "exit's caller not found by unwinding"; else lacks "exit's caller not found"; fi
  run HEAPCHECK=$m PERFTOOLS_VERBOSE=1 "$stack_exit"
  expect_rc 1
  has "SUMMARY: heapcheck: 77 bytes leaked in 1 allocations"
  lacks "exit's caller not found"
  # main called exit: its caller's frame starts the start frames; main's
  # own frame, below, stays a root (the 77-byte control alone leaks).
  has_re "libc's start frames \[0x[0-9a-f]+, 0x[0-9a-f]+\) are not roots \(from main's caller\)"
done
# gcc -static links no .eh_frame_hdr: allocation stacks through code
# without frame pointers are walked by an index of .eh_frame (they ended at
# nofp_c, the first such frame).  The DWARF unwinder: auto walks by frame
# pointers from a caller that keeps them, here as in a dynamic program.
for m in normal strict; do
  run HEAPCHECK=$m HEAPCHECK_UNWINDER=dwarf "$nofp"
  expect_rc 1
  has_re "@ [0-9a-f]+ nofp_b "
  has_re "@ [0-9a-f]+ nofp_a "
  has_re "@ [0-9a-f]+ main .*static_nofp_leak.c:[0-9]+"
done
# exit() from a frame GCC realigns (CFA = *(rbp - N), registers saved at
# rbp + M: CFI expressions): main's caller is found by unwinding through it
# (before, that walk stopped there and the start frames stayed roots), and
# the allocation stack goes through it to main.
for u in auto dwarf; do
  run HEAPCHECK=normal HEAPCHECK_UNWINDER=$u PERFTOOLS_VERBOSE=1 "$realign_exit"
  expect_rc 1
  has "SUMMARY: heapcheck: 40 bytes leaked in 1 allocations"
  has_re "libc's start frames \[0x[0-9a-f]+, 0x[0-9a-f]+\) are not roots \(from main's caller\)"
  has_re "@ [0-9a-f]+ realigned_exit .*static_realign_exit.c:[0-9]+"
  has_re "@ [0-9a-f]+ main .*static_realign_exit.c:[0-9]+"
done
# A static C++ program: no __cxa_demangle to find and no loader to load
# libstdc++ with, so the names come from symbolizer/demangle.c (before it,
# this report printed _ZN6leakns6HolderIiE4grabEm and the like).
if [ -n "$cxx" ]; then
  for m in normal strict; do
    run HEAPCHECK=$m "$cxx"
    expect_rc 1
    has "SUMMARY: heapcheck: 176 bytes leaked in 5 allocations"
    has_re "@ [0-9a-f]+ leakns::Holder<int>::grab\(unsigned long\) .*static_cxx_leak.cc:[0-9]+"
    has_re "@ [0-9a-f]+ leakns::Holder<int>::operator\+=\(int\) "
    # The lambda's name is the compiler's: g++ mangles it Z4mainEUliE_ ({lambda(int)#1}),
    # clang++ as a local class, Z4mainE3$_0 ($_0); c++filt prints both so.
    lam='main::(\{lambda\(int\)#1\}|\$_0)'
    has_re "@ [0-9a-f]+ $lam::operator\(\)\(int\) const "
    has_re "@ [0-9a-f]+ void call_with<$lam>\($lam\) "
    lacks_re "@ [0-9a-f]+ _Z"
  done
fi
finish test_static

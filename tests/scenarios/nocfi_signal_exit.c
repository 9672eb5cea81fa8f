// EXPECT: bytes=0 objects=0
// EXPECT-UNCHECKED: a signal handler's _exit runs no check, found by the signal frame on the stack
// REF-VALGRIND: bytes=22 objects=1             valgrind checks at the last system call, in a handler too
/* nocfi_signal_exit.c - signal_underscore_exit built without unwind
 * tables or frame pointers (meson: scenarios_nocfi): a SIGUSR1 handler ends
 * the process with _exit(0) after main leaked 22 bytes.  The walk by
 * .eh_frame stops in the handler's frame (no FDE), so the stack is looked
 * at word by word: the signal frame's return address into glibc's
 * __restore_rt is there, and no check runs (the handler may have
 * interrupted malloc on this thread).  A scan that missed it would report
 * 22 bytes. */
/* The handler uses rbp as a plain register, as code built without frame
 * pointers may: no frame-pointer guess walks past its frame either. */
#define SC_HANDLER_PROLOGUE __asm__ volatile("movq $5, %%rbp" ::: "rbp", "memory")
#include "signal_underscore_exit.c"

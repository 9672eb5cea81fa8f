// EXPECT: bytes=77 objects=1
/* root_thread_sigblock.c - like root_thread_syscall, but the thread blocks
 * every signal first, so a signal-based stop cannot interrupt it: its stack
 * must still be scanned (conservatively).  Control: 77.
 * The program is root_thread_syscall.c with SC_BLOCK_ALL_SIGNALS = 1. */
#define SC_BLOCK_ALL_SIGNALS 1
#include "root_thread_syscall.c"

// EXPECT: bytes=50 objects=5
// EXPECT-STDOUT: scoped: 5 of 5 found their leak
/* mapping_thread_sigblock.c - mapping_thread.c with a thread that blocks
 * every signal: under a signal-based stop it keeps running (and changing
 * its mappings) while the checks read memory, which they must then do
 * through fault-proof copies.  5 checks (a signal-based stop waits
 * HEAP_CHECK_STOP_TIMEOUT_MS for the thread at each).  Control: 5 leaks of
 * 10 bytes. */
#define SC_BLOCK_ALL_SIGNALS 1
#define SC_CHECKS 5
#include "mapping_thread.c"

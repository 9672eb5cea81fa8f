// EXPECT: bytes=48 objects=1
// REF-LSAN: bytes=0 objects=0                  LSan scans libc's start frames, where the stale copies lie
/* stale_start_exit.c - stale_start_frames, but main ends by calling exit()
 * from a helper: main's frame stays live and is scanned, libc's start
 * frames above it (from main's caller up to argc), which hold the
 * constructor's stale copies, still are not. */
#define SC_END_BY_EXIT 1
#include "stale_start_frames.c"

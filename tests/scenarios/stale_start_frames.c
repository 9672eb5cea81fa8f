// EXPECT: bytes=48 objects=1
/* stale_start_frames.c - a constructor leaks a 48-byte block and leaves
 * copies of its address all over its own (dead) frame.  Constructors run
 * from __libc_start_main, below its frame: where __libc_start_call_main's
 * frame lies afterwards, whose unwritten slots (its cancellation buffer)
 * keep those copies until exit.  The block is leaked, as valgrind says (its
 * start frames lie elsewhere); the check does not scan libc's start frames
 * (from main's caller up to argc), where the copies are. */
#include "scenario.h"

static SC_NOINLINE void fill(void *volatile *w, size_t n, void *p) {
  for (size_t i = 0; i < n; i++) w[i] = p;
}

/* The words are the constructor's own: its frame starts right below its
 * caller's, so they reach up into the start frames also where constructors
 * run from __libc_start_main itself (a static link). */
__attribute__((constructor, noinline)) static void ctor(void) {
  void *volatile words[2048];
  void *p = malloc(48);
  fill(words, 2048, p);
  sc_sink = words[0];
  sc_sink = NULL;
}

#ifdef SC_END_BY_EXIT
static SC_NOINLINE void end_by_exit(void) { exit(0); }
#endif

int main(void) {
  sc_end();
#ifdef SC_END_BY_EXIT
  end_by_exit();
#endif
  return 0;
}

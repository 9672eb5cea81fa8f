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

static SC_NOINLINE void plant(void) {
  void *volatile words[2048];
  void *p = malloc(48);
  fill(words, 2048, p);
  sc_sink = words[0];
  sc_sink = NULL;
}

__attribute__((constructor)) static void ctor(void) { plant(); }

int main(void) {
  sc_end();
  return 0;
}

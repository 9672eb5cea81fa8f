// EXPECT: bytes=77 objects=1
// REF-VALGRIND: bytes=4141 objects=2
// COMPARE-POSSIBLE
// VALGRIND-ARGS: --run-libc-freeres=no
/* env_chunk_interior.c - the shape of the gcc driver's link step: a string
 * built at the start of a 4064-byte chunk's contents (16 bytes in, after a
 * chunk header, as an obstack lays out its first object) is handed to
 * putenv(), and the chunk pointer is dropped.  At exit only the environment
 * array points into the chunk, 16 bytes in: "possibly lost", not a leak.
 * Control: 77.
 * valgrind by default runs __libc_freeres before its check, which frees the
 * environment array: the chunk is then definitely lost (4064 + 77 = 4141).
 * With --run-libc-freeres=no (the program as it is at exit, what heapcheck
 * checks) valgrind agrees object by object: 77 lost, 4064 possibly lost. */
#include <stdio.h>
#include <string.h>

#include "scenario.h"

struct chunk_head { /* as an obstack chunk: limit and previous chunk */
  char *limit;
  struct chunk_head *prev;
};

static SC_NOINLINE void build(void) {
  struct chunk_head *c = malloc(4064);
  c->limit = (char *)c + 4064;
  c->prev = NULL;
  char *s = (char *)(c + 1); /* the first object: 16 bytes in */
  snprintf(s, 64, "SC_CHUNK_VAR=%s", "built-in-a-chunk");
  putenv(s);
}

int main(void) {
  build();
  sc_leak(77);
  sc_end();
  return 0;
}

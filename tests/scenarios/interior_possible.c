// EXPECT: bytes=77 objects=1
// EXPECT-ENV: HEAP_CHECK_MAX_POINTER_OFFSET=0 bytes=1177 objects=4
// COMPARE-POSSIBLE
/* interior_possible.c - "possibly lost" as valgrind defines it: blocks that
 * only chains with an interior pointer reach.  A 600-byte block is held
 * only through a pointer 300 bytes in, and holds the start of a 200-byte
 * child: both possibly lost (alive, not leaks).  A 400-byte block is held
 * both at its start and 100 bytes in: reachable.  A 300-byte block is held
 * only 8 bytes in (valgrind: possibly lost; heapcheck too).  Control: 77.
 * With HEAP_CHECK_MAX_POINTER_OFFSET=0 interior pointers do not count:
 * 600 + 200 + 300 + 77 leak. */
#include "scenario.h"

char *volatile mid_ptr, *volatile near_ptr;
void *volatile both_start;
char *volatile both_mid;

static SC_NOINLINE void build(void) {
  void **big = malloc(600);
  big[0] = malloc(200);
  mid_ptr = (char *)big + 300;
  char *b = malloc(400);
  both_start = b;
  both_mid = b + 100;
  near_ptr = (char *)malloc(300) + 8;
}

int main(void) {
  build();
  sc_leak(77);
  sc_end();
  return 0;
}

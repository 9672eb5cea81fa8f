// EXPECT: bytes=77 objects=1
// REF-LSAN: bytes=477 objects=2
/* mmap_root.c - the only pointer to a 400-byte object is in an anonymous
 * mmap region the program made: a root for heapcheck (memory the program
 * maps itself, like pymalloc's arenas) as for valgrind, which scans every
 * client mapping; LSan does not scan it and reports it.  Control: 77. */
#include <sys/mman.h>

#include "scenario.h"

void **volatile region;

static SC_NOINLINE void build(void) { region[100] = malloc(400); }

int main(void) {
  region = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) return 2;
  build();
  sc_leak(77);
  sc_end();
  return 0;
}

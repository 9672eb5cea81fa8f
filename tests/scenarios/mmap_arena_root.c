// EXPECT: bytes=377 objects=2
/* mmap_arena_root.c - memory the program maps itself is a root, as for
 * valgrind: like CPython's pymalloc arenas, an anonymous 1 MiB arena holds
 * the only pointers to three malloc'ed objects (200, 250 and 150 bytes), the
 * last of which points to a 40-byte child: all reachable.  A second arena,
 * unmapped by the program, held the only pointer to a 300-byte object:
 * leaked.  Control: 77.  Leaks: 300 + 77. */
#include <sys/mman.h>

#include "scenario.h"

void **volatile arena;

static SC_NOINLINE void fill(void **a) {
  a[10] = malloc(200);
  a[500] = malloc(250);
  void **parent = malloc(150);
  parent[0] = malloc(40);
  a[100000] = parent;
}

static SC_NOINLINE void lost_arena(void) {
  void **b = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (b == MAP_FAILED) abort();
  b[7] = malloc(300);
  munmap(b, 1 << 16);
}

int main(void) {
  arena = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (arena == MAP_FAILED) return 2;
  fill(arena);
  lost_arena();
  sc_leak(77);
  sc_end();
  return 0;
}

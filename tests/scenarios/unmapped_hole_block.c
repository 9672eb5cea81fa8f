// EXPECT: bytes=77 objects=2
// EXPECT-STDOUT: scoped: leaks
/* unmapped_hole_block.c - a reachable 256 KiB block (a large span) with two
 * pages munmap'ed in its middle, as a program that returns part of a buffer
 * to the system might do: the checker must skip the hole, not fault, and
 * scan the rest; the only pointers to a 500-byte and a 300-byte object lie
 * before and after the hole (both reachable).  A scoped check runs with the
 * hole in place (33 bytes leak in it).  Control: 44 at exit, 77 in all. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sc_scoped.h"

void *volatile big_block;

static SC_NOINLINE void build(size_t pg) {
  char *b = malloc(64 * pg);
  if (b == NULL) exit(2);
  memset(b, 0, 64 * pg);
  char *hole = (char *)(((uintptr_t)b + 20 * pg) & ~(uintptr_t)(pg - 1));
  *(void **)(hole - 64) = malloc(500);    /* before the hole */
  *(void **)(hole + 2 * pg + 8) = malloc(300); /* after it */
  if (munmap(hole, 2 * pg) != 0) exit(2);
  big_block = b;
}

int main(void) {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  build(pg);
  sc_scoped_leak("unmapped_hole", 33);
  sc_leak(44);
  sc_end();
  return 0;
}

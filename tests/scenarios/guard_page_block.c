// EXPECT: bytes=77 objects=2
// EXPECT-STDOUT: scoped: leaks
/* guard_page_block.c - the coroutine-stack pattern: a reachable 64 KiB
 * block from posix_memalign with a PROT_NONE guard page inside it
 * (mprotect).  The checker must skip the guard, not fault, and scan the rest
 * of the block: the only pointer to a 300-byte object lies after the guard
 * (reachable), one to a 500-byte object before it (reachable).  A scoped
 * check runs with the guard in place (33 bytes leak in it); the guard stays
 * until exit.  Control: 44 at exit, 77 in all. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sc_scoped.h"

void *volatile stack_block;

static SC_NOINLINE void build(size_t pg) {
  void *b = NULL;
  if (posix_memalign(&b, pg, 16 * pg) != 0) exit(2);
  memset(b, 0, 16 * pg);
  ((void **)b)[1] = malloc(500);                            /* before the guard */
  ((void **)((char *)b + 9 * pg))[7] = malloc(300);         /* after it */
  if (mprotect((char *)b + 4 * pg, pg, PROT_NONE) != 0) exit(2);
  stack_block = b;
}

int main(void) {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  build(pg);
  sc_scoped_leak("guard_page", 33);
  sc_leak(44);
  sc_end();
  return 0;
}

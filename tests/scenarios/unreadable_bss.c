// EXPECT: bytes=77 objects=2
// EXPECT-STDOUT: scoped: leaks
/* unreadable_bss.c - a PROT_NONE page in the middle of .bss (an mprotect'ed
 * guard inside a global array): the checker must skip it, not fault, and
 * still scan the pages after it, where the only pointer to a 200-byte object
 * is kept (reachable).  A scoped check (found with dlsym, as in
 * mmap_root_registered.c) runs over the same roots and finds its own 33-byte
 * leak; 44 more leak at exit.  Control: 77 in 2. */
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sc_scoped.h"

static char area[4 * 65536] __attribute__((aligned(65536)));

static SC_NOINLINE void build(void) {
  void **after = (void **)(area + 2 * 65536); /* two pages past the guard */
  after[3] = malloc(200);
}

int main(void) {
  long pg = sysconf(_SC_PAGESIZE);
  if (mprotect(area + 65536, (size_t)pg, PROT_NONE) != 0) return 2;
  build();
  sc_scoped_leak("guarded_bss", 33);
  sc_leak(44);
  sc_end();
  return 0;
}

// EXPECT: bytes=77 objects=1
// REF-LSAN: bytes=483 objects=5                LSan scans no mapping the program made itself: the four objects too
/* huge_reservation.c - a read-write reservation of a terabyte
 * (MAP_NORESERVE, almost all of it never touched) holds the only pointers to
 * four objects, on pages far apart: its first page, a page a third in, the
 * middle and its last word.  The checker scans the program's own mappings,
 * so all four are reachable; it must reach them without reading (or asking
 * about) every untouched page: page by page, a terabyte took 36 s of exit
 * check.  Where the address space is smaller (RLIMIT_AS), smaller
 * reservations are tried.  Control: 77. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "scenario.h"

static SC_NOINLINE void *reserve(size_t *len) {
  for (size_t gib = 1024; gib >= 1; gib /= 4) {
    void *p = mmap(NULL, gib << 30, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p != MAP_FAILED) {
      *len = gib << 30;
      return p;
    }
  }
  exit(2);
}

static SC_NOINLINE void fill(char *p, size_t len) {
  size_t offs[] = {0, (len / 3) & ~(size_t)7, len / 2, len - sizeof(void *)};
  for (int i = 0; i < 4; i++) *(void **)(p + offs[i]) = malloc(100 + (size_t)i);
}

int main(void) {
  size_t len = 0;
  char *p = reserve(&len);
  fill(p, len);
  sc_leak(77);
  p = NULL;
  sc_end();
  return 0;
}

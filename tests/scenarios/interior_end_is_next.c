// EXPECT: bytes=328781 objects=37
// REF-LSAN: bytes=69773 objects=4
/* interior_end_is_next.c - blocks kept only by pointers one past their ends,
 * as a buffer's end pointer (glibc's FILE keeps _IO_buf_end, a vector its end
 * of storage): 16 of 64 bytes, 16 of 4096 (a class's exact size) and 4 of
 * 64 KiB (whole pages), all leaked.  Allocated one after the other, each
 * block's end may be where the allocator put the next one: that address
 * must not keep the next block alive.  xmlstarlet's stdout buffer (4096
 * bytes) ended where libxslt's 4096-byte dictionary table began, which hid
 * the table and everything only it reached (docs/validation.md, session
 * 19).  Control: 77 (another size class). */
#include "scenario.h"

#define N_SMALL 16
#define N_LARGE 4

char *volatile ends[2 * N_SMALL + N_LARGE];

static SC_NOINLINE void build(void) {
  int k = 0;
  for (int i = 0; i < N_SMALL; i++) ends[k++] = (char *)malloc(64) + 64;
  for (int i = 0; i < N_SMALL; i++) ends[k++] = (char *)malloc(4096) + 4096;
  for (int i = 0; i < N_LARGE; i++) ends[k++] = (char *)malloc(65536) + 65536;
}

int main(void) {
  build();
  sc_leak(77);
  sc_end();
  return 0;
}

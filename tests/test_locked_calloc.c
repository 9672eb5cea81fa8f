/* test_locked_calloc.c - calloc's zeros when the pages of freed blocks
 * were locked.  The page heap takes memory it gave back (MADV_DONTNEED)
 * as zeros, and calloc skips its memset there; locked pages refuse
 * MADV_DONTNEED (EINVAL), so a run released with a locked page in it kept
 * its bytes and calloc handed them out (base/os.c, hci_os_release).
 *   1. a 4 MiB block filled, one page of it mlock()ed (a key buffer whose
 *      lock outlives it), freed, malloc_trim: 8 calloc(1, 4 MiB) read
 *      zeros;
 *   2. with mlockall(MCL_CURRENT | MCL_FUTURE) (skipped when the memlock
 *      limit refuses it): blocks of 1 MiB filled and freed, malloc_trim,
 *      then 64 calloc(1, 1 MiB) read zeros.
 * Exit 1 with a line per bad block. */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static size_t nonzero(const unsigned char *q, size_t n) {
  size_t nz = 0;
  for (size_t j = 0; j < n; j++) nz += q[j] != 0;
  return nz;
}

int main(void) {
  int bad = 0;
  enum { SZ = 4 << 20, MB = 1 << 20, N = 64 };
  char *p = malloc(SZ);
  if (!p) return 2;
  memset(p, 0xab, SZ);
  char *key = (char *)(((unsigned long)p + SZ / 2) & ~4095UL);
  if (mlock(key, 4096) != 0) {
    printf("mlock: %s: part 1 skipped\n", strerror(errno));
  } else {
    free(p);
    malloc_trim(0);
    for (int i = 0; i < 8; i++) {
      unsigned char *q = calloc(1, SZ);
      size_t nz = q ? nonzero(q, SZ) : 0;
      if (nz) printf("mlocked page: calloc(1, 4 MiB) #%d: %zu bytes not zero\n", i, nz), bad++;
      free(q);
      malloc_trim(0);
    }
    munlock(key, 4096);
  }
  if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
    printf("mlockall: %s: part 2 skipped\n", strerror(errno));
  } else {
    void *b[N];
    for (int i = 0; i < N; i++) {
      b[i] = malloc(MB);
      if (b[i]) memset(b[i], 0xcd, MB);
    }
    for (int i = 0; i < N; i++) free(b[i]);
    malloc_trim(0);
    for (int i = 0; i < N; i++) b[i] = calloc(1, MB);
    for (int i = 0; i < N; i++) {
      size_t nz = b[i] ? nonzero(b[i], MB) : 0;
      if (nz) printf("mlockall: calloc(1, 1 MiB) #%d: %zu bytes not zero\n", i, nz), bad++;
      free(b[i]);
    }
    munlockall();
  }
  printf("%d bad blocks\n", bad);
  return bad != 0;
}

/* test_sparse_rss.c - in checker mode (HEAPCHECK=normal, meson runs it so;
 * and without) a large block the program touches sparsely stays sparse:
 * checker mode clears freed and reused memory so that no block is given
 * out holding a stale pointer (docs/design.md, "Checker mode: no stale
 * pointers in reused blocks"), and that clearing must never make pages
 * resident that the program did not touch (fresh, given-back and
 * never-touched pages are zero already).  Each step reads VmRSS from
 * /proc/self/status and allows a few MiB for the allocator's metadata.
 * Fails when a large malloc, memalign, realloc or free writes the whole
 * block (a memset instead of hci_os_zero at the free: step 2 grows by 512
 * MiB), or when a calloc of pages the page heap had in use before writes
 * them all (a memset: step 7 grows by 512 MiB; adv30). */
#include <fcntl.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hc_check.h"

#define MIB (1L << 20)
#define SLACK (16 * MIB) /* metadata, page tables of the reservation, stack records */

/* VmRSS in bytes, read without allocating. */
static long rss(void) {
  char buf[4096];
  int fd = open("/proc/self/status", O_RDONLY);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  const char *v = strstr(buf, "VmRSS:");
  return v ? strtol(v + 6, NULL, 10) * 1024 : -1;
}

/* One byte in each of a few pages spread over the block. */
static void touch_sparse(char *p, size_t n) {
  if (!p) return; /* the failed allocation was CHECKed */
  for (size_t off = 0; off < n; off += n / 8) ((volatile char *)p)[off] = 1;
  ((volatile char *)p)[n - 1] = 1;
}

/* malloc(n), checked, touched in a few pages. */
static char *sparse_malloc(size_t n, const char *what) {
  char *p = malloc(n);
  CHECK(p != NULL, "%s", what);
  touch_sparse(p, n);
  return p;
}

#define STEP(what, before, limit)                                                            \
  do {                                                                                     \
    long now_ = rss();                                                                     \
    CHECK(now_ > 0 && now_ - (before) < (limit), "%s: VmRSS grew by %ld KiB (limit %ld)", \
          what, (now_ - (before)) / 1024, (long)(limit) / 1024);                           \
  } while (0)

int main(void) {
  const size_t big = 512 * MIB;
  long r0 = rss();
  CHECK(r0 > 0, "VmRSS read from /proc/self/status");

  /* 1. A fresh block touched in 9 pages. */
  char *p = sparse_malloc(big, "malloc(512 MiB)");
  STEP("malloc(512 MiB), 9 pages touched", r0, SLACK);

  /* 2. Its free clears only the resident pages. */
  free(p);
  STEP("free of the sparse block", r0, SLACK);

  /* 3. The page heap gives the same pages out again: not written. */
  p = sparse_malloc(big, "malloc(512 MiB) again");
  STEP("malloc(512 MiB) of freed pages, 9 touched", r0, SLACK);
  free(p);

  /* 4. The aligned entry points. */
  void *a = memalign(MIB, big / 2), *b = aligned_alloc(MIB, big / 2), *c = NULL;
  CHECK(posix_memalign(&c, 4096, big / 2) == 0, "posix_memalign(256 MiB)");
  CHECK(a && b && c, "memalign and aligned_alloc (256 MiB)");
  touch_sparse(a, big / 2);
  touch_sparse(b, big / 2);
  touch_sparse(c, big / 2);
  STEP("memalign, aligned_alloc, posix_memalign (3 x 256 MiB)", r0, SLACK);
  free(a);
  free(b);
  free(c);
  STEP("their frees", r0, SLACK);

  /* 5. realloc grows a sparse block: it moves, the copy writes 64 MiB (as
   * without the checker), the new tail is not written, and the old
   * block's free writes none of the pages the copy only read (mapped to
   * the zero page: resident for mincore; hci_os_zero). */
  p = sparse_malloc(64 * MIB, "malloc(64 MiB)");
  p = realloc(p, big);
  CHECK(p != NULL, "realloc to 512 MiB");
  touch_sparse(p, big);
  STEP("realloc 64 -> 512 MiB", r0, 64 * MIB + SLACK);
  free(p);

  /* 6. A block written whole, freed, then a sparse one: the written pages
   * stay resident as they would without the checker, and nothing more. */
  p = malloc(64 * MIB);
  CHECK(p != NULL, "malloc(64 MiB) written whole");
  memset(p, 7, 64 * MIB);
  long r7 = rss();
  free(p);
  STEP("free of a 64 MiB block written whole", r7, SLACK);
  p = sparse_malloc(big, "malloc(512 MiB) after it");
  STEP("malloc(512 MiB) after it", r7, SLACK);
  const char *mode = getenv("HEAPCHECK");
  if (mode && *mode) /* the plain allocator gives freed memory out as it is */
    CHECK(p[64 * MIB - 4096] == 0, "the freed block's pages read as zero when given out again");
  free(p);

  /* 7. calloc: a sparse table calloc'ed, freed and calloc'ed again (pages
   * the page heap kept committed, not known to be zero) is zero where
   * the first one was written, and stays sparse. */
  long r8 = rss();
  p = calloc(1, big);
  CHECK(p != NULL, "calloc(512 MiB)");
  touch_sparse(p, big);
  free(p);
  p = calloc(1, big);
  CHECK(p != NULL, "calloc(512 MiB) again");
  STEP("calloc(512 MiB) of freed pages", r8, SLACK);
  CHECK(p[0] == 0 && p[big / 8] == 0 && p[big - 1] == 0, "calloc's block reads as zero where the last one was written");
  touch_sparse(p, big);
  free(p);
  STEP("calloc(512 MiB) twice, 9 pages touched each time", r8, SLACK);

  printf("test_sparse_rss: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}

/* usable_size.c - a program that grows into malloc_usable_size, as redis'
 * sds strings and systemd's GREEDY_REALLOC do (issue 9 point 5).
 *
 * For blocks of many sizes (small classes, the largest classes, large
 * spans) it fills every byte malloc_usable_size reports, reallocs up and
 * down, and checks that every byte it was allowed to use survived.  It then
 * keeps a pointer in the last word of the usable size of a reachable block:
 * the checker must see it (the flood scans what the program may use).
 * Argument "exact": the usable size must equal the requested size (what
 * heapcheck reports in checker mode, like LeakSanitizer and valgrind).
 * Exit status 0 when every check held; each failure prints one line. */
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;
static void *volatile holder; /* a root: the block whose tail holds a pointer */

#define FAIL(...) (failures++, printf("FAIL: " __VA_ARGS__), putchar('\n'))

static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed + i * 7);
}

static size_t intact(const unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char)(seed + i * 7)) return i;
  return n;
}

static unsigned char *use_all(unsigned char *p, size_t asked, bool exact, unsigned seed, size_t *u) {
  *u = malloc_usable_size(p);
  if (*u < asked) FAIL("malloc_usable_size %zu < requested %zu", *u, asked);
  if (exact && *u != asked) FAIL("malloc_usable_size %zu != requested %zu in checker mode", *u, asked);
  fill(p, *u, seed);
  return p;
}

static void one_size(size_t n, bool exact, unsigned seed) {
  size_t u, k;
  unsigned char *p = use_all(malloc(n), n, exact, seed, &u);
  /* Grow: every usable byte must be copied. */
  size_t big = u * 2 + 100;
  unsigned char *q = realloc(p, big);
  if (!q) { FAIL("realloc(%zu) failed", big); return; }
  if ((k = intact(q, u, seed)) != u) FAIL("grow %zu -> %zu: byte %zu of %zu usable bytes lost", n, big, k, u);
  use_all(q, big, exact, seed + 1, &u);
  /* Grow a little (may stay in place), then shrink past half (moves). */
  size_t more = u + 1;
  p = realloc(q, more);
  if ((k = intact(p, u, seed + 1)) != u) FAIL("grow %zu -> %zu: byte %zu lost", u, more, k);
  use_all(p, more, exact, seed + 2, &u);
  size_t small = u / 3 + 1;
  q = realloc(p, small);
  if ((k = intact(q, small, seed + 2)) != small) FAIL("shrink %zu -> %zu: byte %zu lost", u, small, k);
  use_all(q, small, exact, seed + 3, &u);
  /* Shrink by just over half of the block: in place for heapcheck. */
  size_t half = u / 2 + u / 8 + 1;
  p = realloc(q, half);
  if ((k = intact(p, half, seed + 3)) != half) FAIL("shrink %zu -> %zu: byte %zu lost", u, half, k);
  use_all(p, half, exact, seed + 4, &u);
  free(p);
}

static size_t intact_byte(const unsigned char *p, size_t n, unsigned char v) {
  size_t i = 0;
  while (i < n && p[i] == v) i++;
  return i;
}

int main(int argc, char **argv) {
  bool exact = argc > 1 && strcmp(argv[1], "exact") == 0;
  static const size_t sizes[] = {1,     7,     16,    24,     100,    1000,   1500,    5000,   8192,
                                 20000, 70000, 140000, 200000, 262144, 300000, 1 << 20, 3000000};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) one_size(sizes[i], exact, (unsigned)i * 13);
  /* The largest class, shrunk in place to a little over half: its record
   * must keep the exact size (class size - size does not fit 15 bits). */
  size_t u;
  unsigned char *p = use_all(malloc(250000), 250000, exact, 5, &u);
  p = realloc(p, 140000);
  if (intact(p, 140000, 5) != 140000) FAIL("shrink 250000 -> 140000 lost data");
  use_all(p, 140000, exact, 6, &u);
  free(p);
  /* Growing into the usable size keeps the block where it is (glibc's
   * malloc documents it; a program that reallocs to malloc_usable_size
   * expects it): in checker mode too, where the usable size is the
   * requested one (realloc(p, 3) of a 3-byte block once moved it), and for
   * blocks the sampler took (they moved; about 400 of these 2000 are). */
  for (size_t n = 1; n < 300000; n += n < 600 ? 1 : 997) {
    void *a = malloc(n), *b = realloc(a, malloc_usable_size(a));
    if (b != a) FAIL("realloc(p, malloc_usable_size(p) = %zu) of a %zu-byte block moved it", malloc_usable_size(b), n);
    free(b);
  }
  for (int i = 0; i < 2000; i++) {
    void *a = malloc(100000), *b = realloc(a, malloc_usable_size(a));
    if (b != a) FAIL("realloc(p, malloc_usable_size(p) = %zu) of a 100000-byte block moved it", malloc_usable_size(b));
    free(b);
  }
  /* realloc to sizes no block can have fails and keeps the block, in
   * checker mode too (room_for(SIZE_MAX) wrapped to 0: the block "fitted"
   * and realloc cleared to the end of the address space). */
  static const size_t huge[] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 4096, SIZE_MAX / 2};
  for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
    for (size_t n = 1; n <= 300000; n *= 17) {
      unsigned char *a = malloc(n);
      memset(a, 0x5a, n);
      errno = 0;
      if (realloc(a, huge[i]) != NULL || errno != ENOMEM) FAIL("realloc(%zu-byte block, %zu) did not fail with ENOMEM", n, huge[i]);
      if (intact_byte(a, n, 0x5a) != n) FAIL("realloc(%zu-byte block, %zu) changed the block", n, huge[i]);
      free(a);
    }
  }
  /* A pointer in the last word of the usable size of a reachable block. */
  unsigned char *h = malloc(24);
  size_t hu = malloc_usable_size(h);
  void *leaf = malloc(40);
  memset(leaf, 1, 40);
  memcpy(h + ((hu - sizeof leaf) & ~(sizeof leaf - 1)), &leaf, sizeof leaf);
  holder = h;
  printf("usable_size: %d failure%s\n", failures, failures == 1 ? "" : "s");
  return failures ? 2 : 0;
}

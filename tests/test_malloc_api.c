/* test_malloc_api.c - glibc semantics of every function of the malloc family.
 *
 * Linked with the static library, so this executable's malloc family is
 * heapcheck's; owns() checks through the pagemap that pointers really come
 * from heapcheck.  Each check prints the failing expression; the test exits
 * 1 when any failed.  An alarm() watchdog turns a hang (e.g. on an absurd
 * size) into a failure. */
#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hc_internal.h"
#include "heapcheck.h"
#include "gperftools/malloc_extension_c.h"

/* Absurd sizes are the point of several checks below. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Walloc-size-larger-than="
#endif

/* glibc's internal names and cfree (no longer declared by the headers). */
extern void cfree(void *p);
extern void *__libc_malloc(size_t size);
extern void __libc_free(void *p);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);
extern int __posix_memalign(void **out, size_t align, size_t size);

#include "hc_check.h"

/* Hide values from the compiler: glibc declares memalign and aligned_alloc
 * with alloc_align, which would let it fold our alignment checks to true,
 * and clang rejects constant bad alignments at compile time. */
static uintptr_t addr(const void *p) {
  uintptr_t v = (uintptr_t)p;
  __asm__("" : "+r"(v));
  return v;
}
static size_t opaque(size_t x) {
  __asm__("" : "+r"(x));
  return x;
}

/* The pointer is the start of a live heapcheck object. */
static bool owns(const void *p) {
  hc_span_t *s = hci_pagemap_span((uintptr_t)p);
  if (!s) return false;
  if (s->state == HC_SPAN_LARGE) return s->start == (uintptr_t)p;
  return s->state == HC_SPAN_SMALL && ((uintptr_t)p - s->start) % hci_classes[s->cls].size == 0;
}

/* Fills [0, n) with a pattern derived from p and seed; check_fill verifies it. */
static void fill(void *p, size_t n, unsigned seed) {
  unsigned char *c = p;
  for (size_t i = 0; i < n; i++) c[i] = (unsigned char)(i * 7 + seed + (i >> 8));
}
static bool check_fill(const void *p, size_t n, unsigned seed) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++)
    if (c[i] != (unsigned char)(i * 7 + seed + (i >> 8))) return false;
  return true;
}
static bool all_zero(const void *p, size_t n) {
  const unsigned char *c = p;
  for (size_t i = 0; i < n; i++)
    if (c[i]) return false;
  return true;
}

static const size_t absurd[] = {SIZE_MAX, SIZE_MAX - 4095, SIZE_MAX / 2, (size_t)1 << 47, (size_t)1 << 62,
                                ((size_t)1 << 47) + 1};
#define NABSURD (sizeof absurd / sizeof absurd[0])

static void test_malloc_zero(void) {
  enum { N = 1000 };
  static void *v[N];
  for (int i = 0; i < N; i++) {
    v[i] = malloc(0);
    CHECK(v[i] != NULL, "malloc(0) returned NULL");
    CHECK(owns(v[i]), "malloc(0) pointer not from heapcheck");
  }
  /* unique: sort-free check through a hash of all pairs would be N^2; N is small */
  for (int i = 0; i < N; i++)
    for (int j = 0; j < i; j++)
      if (v[i] == v[j]) {
        CHECK(0, "malloc(0) returned %p twice", v[i]);
        i = N;
        break;
      }
  for (int i = 0; i < N; i++) free(v[i]);
  free(NULL);
  cfree(NULL);
}

static void test_absurd_sizes(void) {
  for (size_t i = 0; i < NABSURD; i++) {
    size_t n = absurd[i];
    errno = 0;
    CHECK(malloc(n) == NULL && errno == ENOMEM, "malloc(%#zx): errno %d", n, errno);
    errno = 0;
    CHECK(calloc(1, n) == NULL && errno == ENOMEM, "calloc(1, %#zx): errno %d", n, errno);
    errno = 0;
    CHECK(calloc(n, 1) == NULL && errno == ENOMEM, "calloc(%#zx, 1): errno %d", n, errno);
    errno = 0;
    CHECK(realloc(NULL, n) == NULL && errno == ENOMEM, "realloc(NULL, %#zx): errno %d", n, errno);
    errno = 0;
    CHECK(memalign(64, n) == NULL && errno == ENOMEM, "memalign(64, %#zx): errno %d", n, errno);
    errno = 0;
    CHECK(memalign(1 << 20, n) == NULL && errno == ENOMEM, "memalign(1M, %#zx): errno %d", n, errno);
    /* 2^63 is a power of two (glibc: ENOMEM); only above it is EINVAL */
    errno = 0;
    CHECK(memalign(opaque((size_t)1 << 63), n) == NULL && errno == ENOMEM, "memalign(2^63, %#zx): errno %d", n, errno);
    errno = 0;
    CHECK(aligned_alloc(4096, n) == NULL && errno == ENOMEM, "aligned_alloc(4096, %#zx): errno %d", n, errno);
    errno = 0;
    CHECK(valloc(n) == NULL && errno == ENOMEM, "valloc(%#zx): errno %d", n, errno);
    errno = 0;
    CHECK(pvalloc(n) == NULL && errno == ENOMEM, "pvalloc(%#zx): errno %d", n, errno);
    void *p = (void *)0x1234;
    CHECK(posix_memalign(&p, 64, n) == ENOMEM && p == (void *)0x1234, "posix_memalign(64, %#zx)", n);
    /* realloc failure keeps the old block intact (small and large) */
    size_t olds[] = {100, 5000, 300000};
    for (size_t k = 0; k < 3; k++) {
      char *o = malloc(olds[k]);
      fill(o, olds[k], 3);
      errno = 0;
      CHECK(realloc(o, n) == NULL && errno == ENOMEM, "realloc(%zu-byte block, %#zx)", olds[k], n);
      CHECK(check_fill(o, olds[k], 3), "realloc failure changed the old block");
      CHECK(owns(o) && malloc_usable_size(o) >= olds[k], "old block no longer live");
      errno = 0;
      CHECK(reallocarray(o, n, 1) == NULL && errno == ENOMEM, "reallocarray(o, %#zx, 1)", n);
      CHECK(check_fill(o, olds[k], 3), "reallocarray failure changed the old block");
      free(o);
    }
  }
  /* huge alignments */
  errno = 0;
  CHECK(memalign(opaque((size_t)1 << 62), 16) == NULL && errno == ENOMEM, "memalign(2^62, 16): errno %d", errno);
  errno = 0;
  CHECK(aligned_alloc(opaque((size_t)1 << 50), 16) == NULL && errno == ENOMEM, "aligned_alloc(2^50, 16): errno %d", errno);
}

static void test_calloc(void) {
  errno = 0;
  CHECK(calloc(SIZE_MAX / 2, 3) == NULL && errno == ENOMEM, "calloc overflow: errno %d", errno);
  errno = 0;
  CHECK(calloc((size_t)1 << 32, (size_t)1 << 32) == NULL && errno == ENOMEM, "calloc 2^32*2^32: errno %d", errno);
  errno = 0;
  CHECK(calloc(SIZE_MAX, SIZE_MAX) == NULL && errno == ENOMEM, "calloc max*max: errno %d", errno);
  void *z = calloc(0, 0);
  CHECK(z != NULL && owns(z), "calloc(0, 0)");
  free(z);
  /* recycled memory is zeroed: dirty, free, calloc the same size again */
  size_t sizes[] = {1, 8, 16, 17, 48, 100, 1000, 1024, 4000, 5000, 8192, 20000, 65536, 70000, 262144,
                    262145, 300000, 1 << 20, (3 << 20) + 5};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    size_t n = sizes[k];
    for (int rep = 0; rep < 20; rep++) {
      char *d = malloc(n);
      CHECK(d != NULL, "malloc(%zu)", n);
      memset(d, 0xab, malloc_usable_size(d));
      free(d);
      char *c = calloc(1, n);
      CHECK(c != NULL && owns(c), "calloc(1, %zu)", n);
      CHECK(all_zero(c, n), "calloc(1, %zu) not zeroed (rep %d, %s block)", n, rep, c == d ? "same" : "other");
      memset(c, 0xcd, n);
      free(c);
      c = calloc(n, 1);
      CHECK(c != NULL && all_zero(c, n), "calloc(%zu, 1) not zeroed", n);
      free(c);
    }
  }
  /* many live dirty objects freed together, then calloc'ed back */
  enum { M = 3000 };
  static char *v[M];
  for (int i = 0; i < M; i++) {
    v[i] = malloc(64);
    memset(v[i], 0xee, 64);
  }
  for (int i = 0; i < M; i++) free(v[i]);
  for (int i = 0; i < M; i++) {
    v[i] = calloc(8, 8);
    if (!all_zero(v[i], 64)) {
      CHECK(0, "calloc(8, 8) #%d not zeroed", i);
      break;
    }
  }
  for (int i = 0; i < M; i++) free(v[i]);
  /* large blocks after malloc_trim (released pages) and after reuse of dirty ones */
  for (int rep = 0; rep < 3; rep++) {
    size_t n = (size_t)(8 + rep) << 20;
    char *d = malloc(n);
    memset(d, 0x5a, n);
    free(d);
    if (rep == 1) malloc_trim(0);
    char *c = calloc(1, n);
    CHECK(c && all_zero(c, n), "calloc(%zu MiB) after %s not zeroed", n >> 20, rep == 1 ? "trim" : "free");
    memset(c, 0x77, n);
    free(c);
  }
  malloc_trim(0);
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    char *c = calloc(1, sizes[k]);
    CHECK(c && all_zero(c, sizes[k]), "calloc(1, %zu) after malloc_trim not zeroed", sizes[k]);
    free(c);
  }
}

static void test_reallocarray(void) {
  errno = 0;
  CHECK(reallocarray(NULL, SIZE_MAX, 2) == NULL && errno == ENOMEM, "reallocarray overflow: errno %d", errno);
  char *p = malloc(10);
  fill(p, 10, 1);
  errno = 0;
  CHECK(reallocarray(p, (size_t)1 << 33, (size_t)1 << 33) == NULL && errno == ENOMEM, "reallocarray(p) overflow");
  CHECK(check_fill(p, 10, 1), "reallocarray overflow touched the block");
  char *q = reallocarray(p, 100, 3);
  CHECK(q && owns(q) && malloc_usable_size(q) >= 300 && check_fill(q, 10, 1), "reallocarray growth");
  free(q);
  q = reallocarray(NULL, 7, 9);
  CHECK(q && owns(q) && malloc_usable_size(q) >= 63, "reallocarray(NULL)");
  free(q);
}

static void test_realloc(void) {
  /* realloc(NULL, n) */
  char *p = realloc(NULL, 77);
  CHECK(p && owns(p) && malloc_usable_size(p) >= 77, "realloc(NULL, 77)");
  free(p);
  /* realloc(p, 0) frees and returns NULL: small (the object is back at the
   * head of this thread's cache list) and large (its span is free) */
  for (int i = 0; i < 10; i++) {
    p = malloc(100);
    unsigned cls = hci_pagemap_class((uintptr_t)p); /* 0 when the sampler gave it a span of its own */
    void *r = realloc(p, 0);
    CHECK(r == NULL, "realloc(p, 0) returned %p", r);
    if (cls)
      CHECK(hci_tc->fl.lists[cls].head == p, "realloc(p, 0) did not free the block (not back in the thread cache)");
    else /* its one-page span went back to the page heap or to the stash of sample spans */
      CHECK(hci_pagemap_span((uintptr_t)p)->state == HC_SPAN_FREE ||
                hci_pagemap_span((uintptr_t)p)->state == HC_SPAN_STASHED,
            "realloc(sampled p, 0) did not free the block");
  }
  p = malloc(1 << 20);
  void *r;
  r = realloc(p, 0);
  CHECK(r == NULL, "realloc(large, 0) returned %p", r);
  hc_span_t *s = hci_pagemap_span((uintptr_t)p);
  CHECK(s && s->state == HC_SPAN_FREE, "realloc(large, 0) did not free the span (state %d)", s ? s->state : -1);
  /* growing and shrinking keeps contents, across classes and into large */
  size_t steps[] = {1, 15, 16, 24, 100, 129, 1000, 1025, 4097, 5000, 65536, 70000, 262144, 262145, 300000,
                    (1 << 20) + 3, 4 << 20, 300000, 70000, 5000, 1000, 100, 8, 1, 2 << 20, 16};
  size_t cur = 0;
  p = NULL;
  for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
    size_t n = steps[i];
    char *q = realloc(p, n);
    CHECK(q && owns(q) && malloc_usable_size(q) >= n, "realloc to %zu", n);
    if (!q) break;
    size_t keep = cur < n ? cur : n;
    CHECK(check_fill(q, keep, 9), "realloc from %zu to %zu lost contents", cur, n);
    fill(q, n, 9);
    memset(q + n, 0x11, malloc_usable_size(q) - n); /* usable tail is writable */
    p = q;
    cur = n;
  }
  free(p);
  /* A large block grows in place into free pages after it: find two
   * adjacent large blocks, free the second, grow the first across it;
   * once unsampled, once sampled (every allocation a sample: a sampled
   * block grows in place too and its span records the new size).  The
   * interval is set both times: HEAPCHECK_SAMPLE_PARAMETER=64 in the
   * environment sampled every 512 KiB block of the unsampled round. */
  for (int want_sampled = 0; want_sampled <= 1; want_sampled++) {
    enum { B = 512 << 10, TRIES = 64 }; /* above HC_MAX_SMALL: LARGE spans */
    size_t was_interval = hc_set_sample_interval(want_sampled ? 1 : 0);
    char *v[TRIES + 1];
    int n = 0, found = -1;
    v[n++] = malloc(B);
    while (n <= TRIES && found < 0) {
      v[n] = malloc(B);
      if (v[n] == v[n - 1] + B && hci_pagemap_span((uintptr_t)v[n - 1])->is_sampled == want_sampled) found = n - 1;
      n++;
    }
    if (want_sampled) hc_set_sample_interval(was_interval);
    CHECK(found >= 0, "no two adjacent %d-byte blocks in %d allocations", B, TRIES);
    if (found >= 0) {
      char *a = v[found];
      fill(a, B, 5);
      free(v[found + 1]);
      v[found + 1] = NULL;
      char *g = realloc(a, B + B / 2);
      CHECK(g == a, "realloc(%d -> %d) with free pages after the block moved it (%p -> %p)", B, B + B / 2,
            (void *)a, (void *)g);
      CHECK(g && check_fill(g, B, 5) && malloc_usable_size(g) >= (size_t)B + B / 2, "grown in place: contents");
      if (g) memset(g + B, 0x22, B / 2); /* the new part is ours */
      hc_span_t *gs = g ? hci_pagemap_span((uintptr_t)g + B + B / 2 - 1) : NULL;
      CHECK(gs && gs->start == (uintptr_t)g && gs->state == HC_SPAN_LARGE, "grown span's last page maps to it");
      CHECK(!gs || (gs->is_sampled == want_sampled && gs->req_size == (size_t)B + B / 2),
            "grown span (sampled %d): is_sampled %d, requested size %zu", want_sampled, gs ? gs->is_sampled : 0,
            gs ? gs->req_size : 0);
      v[found] = g;
    }
    for (int i = 0; i < n; i++) free(v[i]);
    if (!want_sampled) hc_set_sample_interval(was_interval); /* after the unsampled block's growth */
  }
  /* in-place shrink of the usable size stays valid */
  p = malloc(1000);
  fill(p, 1000, 4);
  char *q = realloc(p, 900);
  CHECK(q && check_fill(q, 900, 4), "shrink by 100");
  free(q);
}

/* A buffer grown a byte at a time (a string builder) moves at every other
 * size class, not at every one: realloc gives a growing small block a class
 * an eighth above the request.  From 1 KiB to 128 KiB the classes are an
 * eighth apart (56 of them); at most 36 moves, contents kept throughout. */
static void test_realloc_growth(void) {
  size_t n = 1024;
  unsigned char *p = malloc(n);
  CHECK(p != NULL, "malloc(1024)");
  if (!p) return;
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 7);
  int moves = 0;
  bool kept = true;
  for (; n < (size_t)128 << 10; n++) {
    unsigned char *q = realloc(p, n + 1);
    CHECK(q != NULL, "realloc to %zu", n + 1);
    if (!q) return;
    if (q != p) {
      moves++;
      for (size_t i = 0; i < n && kept; i += 61) kept = q[i] == (unsigned char)(i * 7);
    }
    q[n] = (unsigned char)(n * 7);
    p = q;
  }
  CHECK(kept, "realloc growth lost contents");
  CHECK(moves > 0 && moves <= 36, "a buffer grown from 1 KiB to 128 KiB moved %d times (at most 36)", moves);
  free(p);
}

/* A block of a one-object class (36 KiB and up) grows in place into the
 * free pages after its span and takes the new size's class (alloc.c's
 * realloc, hci_central_regrow); VerifyAllMemory agrees, and free takes it
 * back as a block of that class.  Checked when the pages after the span
 * are free (a 2 MiB block freed first makes a run the span comes from). */
static void test_realloc_one_object_class(void) {
  if (hci_record_all || hci_hooks_on) return; /* those keep the move */
  size_t was_interval = hc_set_sample_interval(0); /* a sampled block has a span of its own: it moves */
  free(malloc((size_t)2 << 20));
  size_t n = 200000, m = 240000;
  unsigned from = hci_size_class(n), to = hci_size_class(m);
  CHECK(hci_classes[from].objs == 1 && hci_classes[to].objs == 1, "classes %u, %u hold one object a span", from, to);
  unsigned char *p = malloc(n);
  hc_set_sample_interval(was_interval);
  CHECK(p != NULL && hci_pagemap_class((uintptr_t)p) == from, "malloc(%zu): a block of class %u", n, from);
  if (!p) return;
  for (size_t i = 0; i < n; i += 97) p[i] = (unsigned char)(i * 5);
  hc_span_t *s = hci_pagemap_span((uintptr_t)p);
  uintptr_t end = s->start + (s->npages << HC_PAGE_SHIFT);
  hc_span_t *after = hci_pagemap_span(end);
  bool room = after && after->state == HC_SPAN_FREE && after->start == end &&
              after->npages >= hci_classes[to].pages - s->npages;
  unsigned char *q = realloc(p, m);
  CHECK(q != NULL, "realloc(%zu -> %zu)", n, m);
  if (!q) return;
  bool kept = true;
  for (size_t i = 0; i < n && kept; i += 97) kept = q[i] == (unsigned char)(i * 5);
  CHECK(kept, "realloc %zu -> %zu lost contents", n, m);
  if (room) {
    CHECK(q == p, "realloc %zu -> %zu with free pages after the span moved the block", n, m);
    CHECK(hci_pagemap_class((uintptr_t)q) == to && malloc_usable_size(q) == hci_classes[to].size,
          "grown in place: class %u, usable %zu (want class %u, %u)", hci_pagemap_class((uintptr_t)q),
          malloc_usable_size(q), to, hci_classes[to].size);
    CHECK(hci_pagemap_span(end) == s && s->npages == hci_classes[to].pages, "the span took the pages after it");
  } else {
    fprintf(stderr, "test_realloc_one_object_class: no free pages after the span; in-place growth not checked\n");
  }
  memset(q + n, 1, m - n);
  CHECK(MallocExtension_VerifyAllMemory(), "VerifyAllMemory after an in-place growth");
  free(q);
  CHECK(MallocExtension_VerifyAllMemory(), "VerifyAllMemory after its free");
}

static void test_posix_memalign(void) {
  size_t bad[] = {0, 1, 2, 3, 4, 12, 24, 48, 100, 4095, sizeof(void *) / 2, SIZE_MAX};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    void *p = (void *)0x1234;
    errno = 0;
    int rc = posix_memalign(&p, bad[i], 16);
    CHECK(rc == EINVAL, "posix_memalign(align %zu) returned %d", bad[i], rc);
    CHECK(p == (void *)0x1234, "posix_memalign(align %zu) changed *p on error", bad[i]);
    CHECK(errno == 0, "posix_memalign(align %zu) set errno %d", bad[i], errno);
    p = (void *)0x1234;
    rc = __posix_memalign(&p, bad[i], 16);
    CHECK(rc == EINVAL && p == (void *)0x1234, "__posix_memalign(align %zu)", bad[i]);
  }
  for (size_t a = sizeof(void *); a <= (4 << 20); a <<= 1) {
    size_t sizes[] = {0, 1, a - 1, a, a + 1, 3 * a / 2, 100, 5000};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
      void *p = NULL;
      int rc = posix_memalign(&p, a, sizes[k]);
      CHECK(rc == 0 && p && addr(p) % a == 0 && owns(p), "posix_memalign(%zu, %zu) rc %d p %p", a, sizes[k],
            rc, p);
      if (!p) continue;
      CHECK(malloc_usable_size(p) >= sizes[k], "usable size");
      memset(p, 0x42, sizes[k]);
      if (k & 1) {
        void *q = realloc(p, sizes[k] + 64);
        CHECK(q && owns(q), "realloc of a posix_memalign block");
        p = q;
      }
      free(p);
    }
  }
  /* Every small size under the alignments malloc's fast path may serve
   * (the size rounded up, its class a multiple of the alignment), each
   * block kept until the next of its alignment so the lists are reused. */
  for (size_t a = 32; a <= 1024; a <<= 1) {
    void *keep = NULL;
    for (size_t n = 1; n <= 4096; n++) {
      void *p = NULL;
      int rc = posix_memalign(&p, a, n);
      CHECK(rc == 0 && p && addr(p) % a == 0 && malloc_usable_size(p) >= n, "posix_memalign(%zu, %zu): rc %d, %p", a,
            n, rc, p);
      free(keep);
      keep = p;
    }
    free(keep);
  }
  /* A block smaller than its (large) alignment, freed at once, a thousand
   * times: each round mapped another alignment's worth of address space
   * (2 GB for 2 MiB; ENOMEM under a 1 GiB RLIMIT_AS after ~500 rounds;
   * glibc none), the freed block never found again (page_heap.c,
   * aligned_fit).  Then again with every allocation sampled: a freed
   * sampled span of a page or a few went to the stash of spans kept for
   * the next sample (alloc.c, sampled_unlink), the aligned page with it,
   * and the next round mapped another alignment's worth (16 MiB a round
   * until the stash was full: 48 MiB once in CI with sampling's default
   * interval). */
  size_t aligns[] = {64 << 10, 2 << 20, 16 << 20, 64 << 10, 2 << 20, 16 << 20};
  size_t nalign = sizeof aligns / sizeof aligns[0];
  for (size_t i = 0; i < nalign; i++) {
    hc_stats_t s0, s1;
    size_t interval = 0;
    if (i >= nalign / 2) {
      interval = hc_set_sample_interval(1);
      free(malloc((size_t)8 << 20)); /* past the gap drawn before: from here every allocation is sampled */
      malloc_trim(0);                /* and the stash of sampled spans is empty */
    }
    hc_get_stats(&s0);
    for (int round = 0; round < 1000; round++) {
      void *p = NULL;
      int rc = posix_memalign(&p, aligns[i], 100);
      CHECK(rc == 0 && p && addr(p) % aligns[i] == 0, "posix_memalign(%zu, 100), round %d: rc %d", aligns[i], round, rc);
      if (p) memset(p, 1, 100);
      free(p);
    }
    hc_get_stats(&s1);
    if (i >= nalign / 2) hc_set_sample_interval(interval);
    size_t grew = s1.heap_mapped > s0.heap_mapped ? s1.heap_mapped - s0.heap_mapped : 0;
    CHECK(grew <= 2 * aligns[i] + ((size_t)8 << 20), "1000 rounds of posix_memalign(%zu, 100)%s mapped %zu more bytes",
          aligns[i], i >= nalign / 2 ? ", each sampled," : "", grew);
  }
}

static void test_aligned(void) {
  /* aligned_alloc: glibc >= 2.38 rejects non-powers of two with EINVAL */
  errno = 0;
  CHECK(aligned_alloc(opaque(3), 16) == NULL && errno == EINVAL, "aligned_alloc(3, 16): errno %d", errno);
  errno = 0;
  CHECK(aligned_alloc(opaque(0), 16) == NULL && errno == EINVAL, "aligned_alloc(0, 16): errno %d", errno);
  for (size_t a = 1; a <= (4 << 20); a <<= 1) {
    size_t sizes[] = {0, 1, 7, 100, a, a + 1, 2 * a + 5, 5000, 70000};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
      size_t n = sizes[k];
      for (int f = 0; f < 3; f++) {
        const char *name = f == 0 ? "aligned_alloc" : f == 1 ? "memalign" : "__libc_memalign";
        void *p = f == 0 ? aligned_alloc(a, n) : f == 1 ? memalign(a, n) : __libc_memalign(a, n);
        size_t want = a < 16 ? 16 : a; /* every block is at least 16-byte aligned */
        CHECK(p && addr(p) % want == 0 && owns(p), "%s(%zu, %zu) = %p", name, a, n, p);
        if (!p) continue;
        CHECK(malloc_usable_size(p) >= n, "%s(%zu, %zu): usable %zu", name, a, n, malloc_usable_size(p));
        memset(p, 0x24, malloc_usable_size(p));
        if (f == 1 && (k & 1)) {
          char *q = realloc(p, n / 2 + 1);
          CHECK(q && owns(q), "realloc of a memalign block");
          p = q;
        }
        free(p);
      }
    }
  }
  errno = 0;
  CHECK(memalign(opaque((size_t)1 << 63), 16) == NULL && errno == ENOMEM, "memalign(2^63, 16): errno %d", errno);
  errno = 0;
  CHECK(memalign(opaque(((size_t)1 << 63) + 1), 16) == NULL && errno == EINVAL, "memalign(2^63 + 1, 16): errno %d", errno);
  errno = 0;
  CHECK(memalign(opaque(((size_t)1 << 62) + 1), 16) == NULL && errno == ENOMEM, "memalign(2^62 + 1, 16): errno %d", errno);
  /* memalign rounds a non-power-of-two alignment up */
  struct { size_t align, want; } r[] = {{3, 16}, {24, 32}, {48, 64}, {100, 128}, {3000, 4096}, {5000, 8192},
                                         {40000, 65536}, {(1 << 20) + 1, 2 << 20}};
  for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
    void *p = memalign(r[i].align, 10);
    CHECK(p && addr(p) % r[i].want == 0, "memalign(%zu, 10) = %p, want %zu-aligned", r[i].align, p, r[i].want);
    free(p);
  }
  /* valloc / pvalloc: page (4096) aligned; pvalloc rounds the size up */
  size_t vs[] = {0, 1, 100, 4095, 4096, 4097, 10000, 1 << 20};
  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) {
    void *p = valloc(vs[i]);
    CHECK(p && addr(p) % 4096 == 0 && owns(p) && malloc_usable_size(p) >= vs[i], "valloc(%zu) = %p", vs[i], p);
    free(p);
    p = __libc_valloc(vs[i]);
    CHECK(p && addr(p) % 4096 == 0 && owns(p), "__libc_valloc(%zu) = %p", vs[i], p);
    free(p);
    p = pvalloc(vs[i]);
    size_t want = vs[i] ? (vs[i] + 4095) & ~(size_t)4095 : 4096;
    CHECK(p && addr(p) % 4096 == 0 && owns(p), "pvalloc(%zu) = %p", vs[i], p);
    CHECK(p && malloc_usable_size(p) >= want, "pvalloc(%zu): usable %zu < %zu", vs[i], malloc_usable_size(p), want);
    if (p) memset(p, 1, want);
    free(p);
    p = __libc_pvalloc(vs[i]);
    CHECK(p && addr(p) % 4096 == 0 && malloc_usable_size(p) >= want, "__libc_pvalloc(%zu)", vs[i]);
    free(p);
  }
}

static void test_usable_size(void) {
  CHECK(malloc_usable_size(NULL) == 0, "malloc_usable_size(NULL)");
  for (size_t n = 0; n < 70000; n += (n < 2048 ? 1 : 97)) {
    char *p = malloc(n);
    size_t u = malloc_usable_size(p);
    CHECK(p && u >= n, "malloc(%zu): usable %zu", n, u);
    if (!p) continue;
    memset(p, 0x33, u); /* writable up to the usable size */
    if (n <= HC_MAX_SMALL) CHECK(u == hci_classes[hci_size_class(n)].size || u % HC_PAGE_SIZE == 0,
                                 "malloc(%zu): usable %zu is neither its class size nor page granular", n, u);
    free(p);
  }
  size_t big[] = {262145, 300001, 1 << 20, (1 << 20) + 1, 10 << 20};
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
    char *p = malloc(big[i]);
    size_t u = malloc_usable_size(p);
    CHECK(p && u >= big[i] && u - big[i] < HC_PAGE_SIZE, "malloc(%zu): usable %zu", big[i], u);
    if (p) memset(p, 0x44, u);
    free(p);
  }
}

/* Every pointer from every function is accepted by free, realloc and malloc_usable_size. */
static void *make(int f, size_t n) {
  void *p = NULL;
  switch (f) {
    case 0: return malloc(n);
    case 1: return calloc(1, n);
    case 2: return realloc(NULL, n);
    case 3: return reallocarray(NULL, n, 1);
    case 4: return posix_memalign(&p, 64, n) ? NULL : p;
    case 5: return aligned_alloc(256, n);
    case 6: return memalign(8192, n);
    case 7: return valloc(n);
    case 8: return pvalloc(n);
    case 9: return __libc_malloc(n);
    case 10: return __libc_calloc(n, 1);
    case 11: return __libc_realloc(NULL, n);
    case 12: return __libc_memalign(32, n);
    case 13: return __libc_valloc(n);
    case 14: return __libc_pvalloc(n);
    case 15: return __posix_memalign(&p, 128, n) ? NULL : p;
  }
  return NULL;
}

static void test_cross_functions(void) {
  size_t sizes[] = {0, 1, 24, 500, 5000, 100000, 262144, 600000};
  for (int f = 0; f < 16; f++)
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
      size_t n = sizes[k];
      for (int how = 0; how < 5; how++) {
        char *p = make(f, n);
        CHECK(p && owns(p), "function %d size %zu", f, n);
        if (!p) continue;
        size_t u = malloc_usable_size(p);
        CHECK(u >= n, "function %d size %zu: usable %zu", f, n, u);
        fill(p, n, 5);
        switch (how) {
          case 0: free(p); break;
          case 1: cfree(p); break;
          case 2: __libc_free(p); break;
          case 3: {
            char *q = realloc(p, n * 3 + 10);
            CHECK(q && owns(q) && check_fill(q, n, 5), "realloc of function %d's block", f);
            free(q);
            break;
          }
          case 4: {
            char *q = __libc_realloc(p, n / 2 + 1);
            CHECK(q && owns(q) && check_fill(q, n / 2 + 1 < n ? n / 2 + 1 : n, 5), "__libc_realloc shrink");
            q = realloc(q, 0);
            CHECK(q == NULL, "realloc(q, 0)");
            break;
          }
        }
      }
    }
  /* __libc_calloc zeroes, __libc_malloc is ours */
  char *c = __libc_calloc(100, 10);
  CHECK(c && owns(c) && all_zero(c, 1000), "__libc_calloc");
  __libc_free(c);
  errno = 0;
  CHECK(__libc_calloc(SIZE_MAX, 2) == NULL && errno == ENOMEM, "__libc_calloc overflow");
  errno = 0;
  CHECK(__libc_malloc(SIZE_MAX) == NULL && errno == ENOMEM, "__libc_malloc(SIZE_MAX)");
}

static void test_mallinfo_mallopt_trim(void) {
  struct mallinfo2 a = mallinfo2();
  const size_t n = 10 << 20;
  char *p = malloc(n);
  memset(p, 1, n);
  struct mallinfo2 b = mallinfo2();
  CHECK(b.uordblks >= a.uordblks + n, "mallinfo2.uordblks %zu -> %zu after malloc(10 MB)", a.uordblks, b.uordblks);
  CHECK(b.hblkhd >= a.hblkhd + n, "mallinfo2.hblkhd %zu -> %zu after malloc(10 MB)", a.hblkhd, b.hblkhd);
  CHECK(b.arena >= b.uordblks, "mallinfo2.arena %zu < uordblks %zu", b.arena, b.uordblks);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  struct mallinfo m1 = mallinfo(); /* deprecated but still exported and used */
#pragma GCC diagnostic pop
  CHECK((size_t)m1.uordblks >= n, "mallinfo.uordblks %d", m1.uordblks);
  free(p);
  struct mallinfo2 c = mallinfo2();
  CHECK(c.uordblks + n <= b.uordblks, "mallinfo2.uordblks %zu -> %zu after free", b.uordblks, c.uordblks);
  CHECK(c.fordblks >= n || c.arena > 0, "free bytes after free");

  CHECK(mallopt(M_MMAP_THRESHOLD, 1 << 20) == 1, "mallopt(M_MMAP_THRESHOLD)");
  /* glibc's answers for the fast-bin limit: up to 160 (80 * sizeof(size_t) / 4) on 64-bit */
  CHECK(mallopt(M_MXFAST, 64) == 1 && mallopt(M_MXFAST, 80 * (int)sizeof(size_t) / 4) == 1,
        "mallopt(M_MXFAST) within glibc's limit");
  CHECK(mallopt(M_MXFAST, 1000) == 0 && mallopt(M_MXFAST, -1) == 0, "mallopt(M_MXFAST) above glibc's limit: 0");
  CHECK(mallopt(M_ARENA_MAX, 2) == 1, "mallopt(M_ARENA_MAX)");
  CHECK(mallopt(M_TRIM_THRESHOLD, 0) == 1, "mallopt(M_TRIM_THRESHOLD)");

  /* malloc_trim(0) returns (committed) free memory to the OS.  The page
   * heap releases by itself only once committed free memory passes its
   * threshold (at least HC_RELEASE_MIN, hc_config.h), so whether freeing the
   * 40 MB released anything is predicted from the threshold: a trim first
   * leaves no committed free pages, the threshold only falls while blocks
   * are freed (less in use), and committed free memory only grows until a
   * release.  So if 40 MB <= the threshold after the frees, no free may have
   * released (the case with HC_RELEASE_MIN = 64 MiB); otherwise the last
   * free at the latest did, and what stays committed is at most the
   * threshold.  Then: after the
   * trim every free page is released, and no page is unmapped, so released
   * bytes grow by at least what was in use before the frees and is free
   * now. */
  enum { K = 40 };
  char *v[K];
  malloc_trim(0);
  for (int i = 0; i < K; i++) {
    v[i] = malloc(1 << 20);
    memset(v[i], 2, 1 << 20);
  }
  hc_stats_t sa, s0, s1;
  hc_get_stats(&sa);
  for (int i = 0; i < K; i++) free(v[i]);
  hc_get_stats(&s0);
  size_t thr = hci_ph_release_threshold();
  struct mallinfo2 d = mallinfo2();
  int rc = malloc_trim(0);
  struct mallinfo2 e = mallinfo2();
  hc_get_stats(&s1);
  size_t auto_rel = s0.heap_released > sa.heap_released ? s0.heap_released - sa.heap_released : 0;
  size_t trim_rel = s1.heap_released > s0.heap_released ? s1.heap_released - s0.heap_released : 0;
  printf("malloc_trim: %zu KB released while freeing 40 MB (threshold %zu MiB), %zu KB by malloc_trim(0) (rc %d)\n",
         auto_rel >> 10, thr >> 20, trim_rel >> 10, rc);
  CHECK(sa.page_heap_free == 0, "%zu committed free bytes after malloc_trim(0) and 40 MB of allocations",
        sa.page_heap_free);
  /* 1 when the trim released something: certainly when committed free pages were left */
  CHECK(rc == 1 || (rc == 0 && s0.page_heap_free == 0), "malloc_trim(0) returned %d with %zu committed free bytes",
        rc, s0.page_heap_free);
  if (((size_t)K << 20) <= thr) {
    CHECK(auto_rel == 0 && s0.page_heap_free >= ((size_t)K << 20),
          "freeing 40 MB (threshold %zu MiB) released %zu bytes automatically, left %zu committed free", thr >> 20,
          auto_rel, s0.page_heap_free);
    CHECK(rc == 1 && trim_rel >= ((size_t)K << 20), "malloc_trim(0) released %zu bytes (rc %d), want the 40 MB",
          trim_rel, rc);
  } else {
    CHECK(auto_rel > 0 && s0.page_heap_free <= thr,
          "freeing 40 MB (threshold %zu MiB) released %zu bytes automatically, left %zu committed free", thr >> 20,
          auto_rel, s0.page_heap_free);
  }
  CHECK(rc == 0 ? e.fordblks <= d.fordblks : e.fordblks < d.fordblks, "malloc_trim: free bytes %zu -> %zu",
        d.fordblks, e.fordblks);
  CHECK(s1.page_heap_free == 0, "malloc_trim(0) left %zu committed free bytes in the page heap", s1.page_heap_free);
  CHECK(s1.heap_mapped == sa.heap_mapped, "heap mapping changed during free/trim: %zu -> %zu", sa.heap_mapped,
        s1.heap_mapped);
  CHECK(s1.heap_released >= sa.heap_released + ((size_t)K << 20),
        "released bytes %zu before the frees, %zu after them (+%zu automatically), %zu after the trim (+%zu): "
        "want +%d MB in all",
        sa.heap_released, s0.heap_released, auto_rel, s1.heap_released, trim_rel, (int)K);
  CHECK(malloc_trim(0) == 0, "second malloc_trim(0) found memory to release");
  CHECK(malloc_trim(1 << 20) == 0, "malloc_trim(1M)");
}

static void test_malloc_stats(void) {
  char path[] = "/tmp/hc_malloc_stats_XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0, "mkstemp");
  if (fd < 0) return;
  unlink(path);
  /* At least one class in use: unsampled (a sampled object has a span of
   * its own; HEAPCHECK_SAMPLE_PARAMETER=64 in the environment sampled it). */
  size_t interval = hc_set_sample_interval(0);
  void *keep = malloc(48);
  hc_set_sample_interval(interval);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  malloc_stats();
  dup2(saved, 2);
  close(saved);
  static char buf[1 << 16];
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  close(fd);
  CHECK(n > 0, "malloc_stats wrote nothing to stderr");
  if (n <= 0) return;
  buf[n] = 0;
  CHECK(strstr(buf, "Bytes in use by application") != NULL, "no totals in malloc_stats output:\n%s", buf);
  CHECK(strstr(buf, "class") != NULL, "no class table in malloc_stats output:\n%s", buf);
  /* a class line for the 48-byte class */
  bool found = false;
  for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
    unsigned cls, size;
    if (sscanf(l, "class %u [ %u bytes ]", &cls, &size) == 2 && size == 48) found = true;
  }
  CHECK(found, "no line for the 48-byte class in malloc_stats output:\n%s", buf);
  free(keep);
}

static void test_errno_preserved(void) {
  size_t sizes[] = {0, 16, 1000, 100000, 300000, 5 << 20, 80 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    size_t n = sizes[i];
    errno = EBADF;
    void *p = malloc(n);
    CHECK(errno == EBADF, "malloc(%zu) changed errno to %d", n, errno);
    memset(p, 1, n);
    p = realloc(p, n + n / 2 + 1);
    CHECK(errno == EBADF, "realloc(%zu) changed errno to %d", n, errno);
    free(p); /* 80 MB: the page heap releases above its threshold (madvise) */
    CHECK(errno == EBADF, "free(%zu bytes) changed errno to %d", n, errno);
    p = calloc(1, n);
    CHECK(errno == EBADF, "calloc(%zu) changed errno to %d", n, errno);
    free(p);
    p = memalign(1 << 16, n);
    CHECK(errno == EBADF, "memalign(64K, %zu) changed errno to %d", n, errno);
    free(p);
    void *q;
    CHECK(posix_memalign(&q, 4096, n) == 0 && errno == EBADF, "posix_memalign changed errno to %d", errno);
    free(q);
    CHECK(errno == EBADF, "free changed errno to %d", errno);
  }
  errno = EBADF;
  free(NULL);
  malloc_trim(0);
  CHECK(errno == EBADF, "free(NULL)/malloc_trim changed errno to %d", errno);
  /* posix_memalign reports errors by return value; out of memory it also
   * leaves errno at ENOMEM, as glibc and musl do (glibc's own
   * tst-malloc-thread-fail tests errno after it), EINVAL leaves errno alone */
  void *q = (void *)0x1234;
  errno = EBADF;
  CHECK(posix_memalign(&q, 64, SIZE_MAX) == ENOMEM && q == (void *)0x1234 && errno == ENOMEM,
        "posix_memalign ENOMEM: *p %p errno %d", q, errno);
  errno = EBADF;
  CHECK(posix_memalign(&q, 24, 16) == EINVAL && q == (void *)0x1234 && errno == EBADF,
        "posix_memalign EINVAL: *p %p errno %d", q, errno);
}

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "FAIL: test_malloc_api timed out (hang in the allocator?)\n";
  write(2, msg, sizeof msg - 1);
  _exit(1);
}

int main(void) {
  signal(SIGALRM, on_alarm);
  alarm(240);
  setvbuf(stdout, NULL, _IONBF, 0);
  void *probe = malloc(1);
  CHECK(owns(probe), "malloc is not heapcheck's (pointer %p not in the pagemap)", probe);
  free(probe);
  test_malloc_zero();
  test_absurd_sizes();
  test_calloc();
  test_reallocarray();
  test_realloc();
  test_realloc_growth();
  test_realloc_one_object_class();
  test_posix_memalign();
  test_aligned();
  test_usable_size();
  test_cross_functions();
  test_mallinfo_mallopt_trim();
  test_malloc_stats();
  test_errno_preserved();
  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  printf("malloc API OK\n");
  return 0;
}

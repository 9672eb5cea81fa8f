/* test_vector_regs.c - an allocation leaves no heap address in a vector
 * register.
 *
 * A check scans a stopped thread's vector registers as roots (glibc's
 * memmove keeps data there), so an address the allocator left in one kept
 * its block reachable until the thread ran vector code again: a thread that
 * kept its only pointer to a block in TLS and then spun lost the leak
 * (test_lsan's tls case with use_tls=0, after pagemap.c's 16-byte stores of
 * a span's start).  The allocator is built with -mgeneral-regs-only
 * (meson.build, gpr_only_args); this test fills xmm0-15 with a pattern,
 * calls the allocator on each of its paths (new spans of every small class,
 * refills, frees, remote frees, large blocks, realloc, the aligned family,
 * a thread's first allocation), reads the registers back and fails when a
 * 64-bit lane holds an address inside a span.  Built itself with
 * -mgeneral-regs-only, so nothing of its own runs between the fill and the
 * read.  Run plain and under HEAPCHECK=normal (tests/meson.build).
 * x86-64 only (77 elsewhere). */
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_internal.h"

#if defined(__x86_64__)
static int failures, checks;
static __thread const char *who = "main";

static uint64_t fill_pattern = 0x5a5a5a5a5a5a5a5aull;

/* xmm0-15 := the pattern (both lanes).  No clobbers named: the test is
 * built with -mgeneral-regs-only, so the compiler keeps nothing there. */
static void fill(void) {
  uint64_t buf[2] = {fill_pattern, fill_pattern};
  __asm__ volatile("movdqu (%0), %%xmm0\n\tmovdqa %%xmm0, %%xmm1\n\tmovdqa %%xmm0, %%xmm2\n\t"
                   "movdqa %%xmm0, %%xmm3\n\tmovdqa %%xmm0, %%xmm4\n\tmovdqa %%xmm0, %%xmm5\n\t"
                   "movdqa %%xmm0, %%xmm6\n\tmovdqa %%xmm0, %%xmm7\n\tmovdqa %%xmm0, %%xmm8\n\t"
                   "movdqa %%xmm0, %%xmm9\n\tmovdqa %%xmm0, %%xmm10\n\tmovdqa %%xmm0, %%xmm11\n\t"
                   "movdqa %%xmm0, %%xmm12\n\tmovdqa %%xmm0, %%xmm13\n\tmovdqa %%xmm0, %%xmm14\n\t"
                   "movdqa %%xmm0, %%xmm15" ::"r"(buf)
                   : "memory");
}

static void dump(uint64_t out[32]) {
  __asm__ volatile("movdqu %%xmm0, 0(%0)\n\tmovdqu %%xmm1, 16(%0)\n\tmovdqu %%xmm2, 32(%0)\n\t"
                   "movdqu %%xmm3, 48(%0)\n\tmovdqu %%xmm4, 64(%0)\n\tmovdqu %%xmm5, 80(%0)\n\t"
                   "movdqu %%xmm6, 96(%0)\n\tmovdqu %%xmm7, 112(%0)\n\tmovdqu %%xmm8, 128(%0)\n\t"
                   "movdqu %%xmm9, 144(%0)\n\tmovdqu %%xmm10, 160(%0)\n\tmovdqu %%xmm11, 176(%0)\n\t"
                   "movdqu %%xmm12, 192(%0)\n\tmovdqu %%xmm13, 208(%0)\n\tmovdqu %%xmm14, 224(%0)\n\t"
                   "movdqu %%xmm15, 240(%0)" ::"r"(out)
                   : "memory");
}

/* The registers after a call: a lane inside a span is the allocator's. */
static void check(const char *what, size_t arg) {
  uint64_t r[32];
  dump(r);
  checks++;
  for (int i = 0; i < 32; i++) {
    if (r[i] == fill_pattern || r[i] < 4096) continue;
    if (hci_pagemap_span((uintptr_t)r[i])) {
      printf("FAIL %s(%zu) in %s: xmm%d lane %d holds heap address %#llx\n", what, arg, who, i / 2, i % 2,
             (unsigned long long)r[i]);
      failures++;
      return;
    }
  }
}

/* Each call between a fill and a check; the results kept in GPR-only code. */
#define AROUND(what, arg, call) \
  do {                          \
    fill();                     \
    call;                       \
    check(what, arg);           \
  } while (0)

static void *blocks[4096];

static void paths(void) {
  size_t sizes[] = {1, 16, 24, 48, 100, 200, 500, 1000, 1100, 3000, 5000, 9000, 20000, 40000, 100000,
                    300000, 1 << 20, 5 << 20};
  size_t nb = 0;
  /* Every class's first object (a new span: pagemap, carve), then enough
   * of each to refill and reach new pages (open_pages). */
  for (size_t s = 1; s <= 300000 && nb < 4096; s = s < 1024 ? s + 16 : s * 5 / 4) {
    void *p;
    AROUND("malloc", s, p = malloc(s));
    blocks[nb++] = p;
  }
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
    for (int j = 0; j < 40 && nb < 4096; j++) {
      void *p;
      AROUND("malloc", sizes[k], p = malloc(sizes[k]));
      blocks[nb++] = p;
    }
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    void *p;
    AROUND("calloc", sizes[k], p = calloc(1, sizes[k]));
    AROUND("realloc", sizes[k], p = realloc(p, sizes[k] * 2 + 1));
    AROUND("malloc_usable_size", sizes[k], (void)malloc_usable_size(p));
    AROUND("free", sizes[k], free(p));
    void *q = NULL;
    AROUND("posix_memalign", sizes[k], (void)posix_memalign(&q, 4096, sizes[k]));
    AROUND("free", sizes[k], free(q));
  }
  for (size_t i = 0; i < nb; i++) AROUND("free", i, free(blocks[i]));
}

/* A second thread: its first allocation (a cache of its own), its frees of
 * main's blocks (remote frees), and main's refills from its inbox. */
static void *other(void *arg) {
  (void)arg;
  who = "thread";
  void *p;
  AROUND("malloc (a thread's first)", 40, p = malloc(40));
  AROUND("free", 40, free(p));
  for (size_t i = 0; i < 2048 && blocks[i]; i++) AROUND("free (remote)", i, free(blocks[i]));
  paths();
  return NULL;
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  paths();
  for (size_t i = 0; i < 2048; i++) blocks[i] = malloc(48 + (i % 8) * 16);
  pthread_t t;
  if (pthread_create(&t, NULL, other, NULL) != 0) return 2;
  pthread_join(t, NULL);
  /* main's lists now take what the thread sent back (inboxes). */
  for (size_t i = 0; i < 2048; i++) AROUND("malloc (after remote frees)", i, blocks[i] = malloc(48 + (i % 8) * 16));
  for (size_t i = 0; i < 2048; i++) free(blocks[i]);
  printf("test_vector_regs: %d calls checked, %d failures\n", checks, failures);
  return failures ? 1 : 0;
}
#else
int main(void) {
  puts("test_vector_regs: x86-64 only");
  return 77;
}
#endif

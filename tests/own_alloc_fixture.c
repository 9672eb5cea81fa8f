/* own_alloc_fixture.c - a program that brings its own malloc family (as
 * Firefox's executable does with mozjemalloc), for test_own_allocator.sh.
 *
 * Built twice.  Without WRAP: a bump allocator in the executable defines
 * malloc, free, calloc, realloc and malloc_usable_size, not reallocarray
 * nor posix_memalign: glibc's reallocarray calls realloc (the program's),
 * and its blocks must never reach another allocator's free.  With WRAP
 * (from the first call: heapcheck asks the program's malloc at start-up):
 * malloc and free count and call __libc_malloc and __libc_free
 * (preloaded, heapcheck's), and 40 bytes leak: the blocks are heapcheck's,
 * which stays the allocator and checks them.  With WRAP_CTOR: a counting
 * wrapper that finds the next malloc with dlsym in its own constructor
 * (after heapcheck's) and serves the calls before it from a static buffer:
 * heapcheck's start-up probe got a buffer block and took the wrapper for an
 * allocator of its own (no check, libc's malloc; val29).  40 bytes leak.
 * Prints what it did; exit 0. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(WRAP) || defined(WRAP_CTOR)
static const int wrap = 1;
#else
static const int wrap = 0;
#endif
static long mallocs, frees;
static char *top, *end;

static void *bump(size_t n) {
  if (!top) {
    top = mmap(NULL, 64 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    end = top + (64 << 20);
  }
  n = (n + 15) & ~(size_t)15;
  if (top == MAP_FAILED || (size_t)(end - top) < n + 16) return NULL;
  size_t *h = (size_t *)top;
  h[0] = n;
  top += n + 16;
  return h + 2;
}

#ifdef WRAP_CTOR
#include <dlfcn.h>
static char early[1 << 16] __attribute__((aligned(16)));
static size_t early_used;
static void *(*next_malloc)(size_t);
static void (*next_free)(void *);
static void *(*next_realloc)(void *, size_t);
__attribute__((constructor)) static void find_next(void) {
  *(void **)&next_malloc = dlsym(RTLD_NEXT, "malloc");
  *(void **)&next_free = dlsym(RTLD_NEXT, "free");
  *(void **)&next_realloc = dlsym(RTLD_NEXT, "realloc");
}
static bool is_early(void *p) { return (char *)p >= early && (char *)p < early + sizeof early; }
static void *__libc_malloc(size_t n) {
  if (next_malloc) return next_malloc(n);
  size_t *h = (size_t *)(early + early_used);
  early_used += ((n + 15) & ~(size_t)15) + 16;
  if (early_used > sizeof early) return NULL;
  h[0] = n;
  return h + 2;
}
static void __libc_free(void *p) {
  if (p && !is_early(p)) next_free(p);
}
static void *__libc_calloc(size_t a, size_t b) {
  void *p = __libc_malloc(a * b);
  if (p) memset(p, 0, a * b);
  return p;
}
static void *__libc_realloc(void *p, size_t n) {
  if (p && !is_early(p)) return next_realloc(p, n);
  void *q = __libc_malloc(n);
  if (q && p) memcpy(q, p, ((size_t *)p)[-2] < n ? ((size_t *)p)[-2] : n);
  return q;
}
#else
extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
#endif

void *malloc(size_t n) {
  mallocs++;
  return wrap ? __libc_malloc(n) : bump(n);
}
void free(void *p) {
  if (p) frees++;
  if (wrap) __libc_free(p);
}
void *calloc(size_t a, size_t b) {
  if (wrap) return __libc_calloc(a, b);
  void *p = bump(a * b);
  if (p) memset(p, 0, a * b);
  return p;
}
#ifndef WRAP_CTOR
size_t malloc_usable_size(void *p) { return p ? ((size_t *)p)[-2] : 0; }
#endif
void *realloc(void *p, size_t n) {
  if (wrap) return __libc_realloc(p, n);
  void *q = bump(n);
  if (q && p) memcpy(q, p, ((size_t *)p)[-2] < n ? ((size_t *)p)[-2] : n);
  return q;
}

static void *volatile sink;

int main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  char *p = malloc(10);
  strcpy(p, "abc");
  p = reallocarray(p, 4, 10); /* glibc's: realloc, the program's */
  printf("%s: reallocarray kept \"%s\"\n", wrap ? "wrap" : "own", p);
  free(p);
  char *s = strdup("strdup'ed"); /* libc's, through malloc */
  printf("%s\n", s);
  free(s);
  if (wrap) sink = malloc(40); /* a leak of heapcheck's */
  sink = NULL;
  printf("mallocs %s, frees %s\n", mallocs >= 3 ? "counted" : "missed", frees >= 2 ? "counted" : "missed");
  return 0;
}

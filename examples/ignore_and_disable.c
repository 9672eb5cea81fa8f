/* ignore_and_disable.c - telling the checker about memory that only looks
 * leaked.
 *
 * A conservative checker finds an object live when some root (globals,
 * thread stacks and registers, TLS) holds a pointer to it, directly or
 * through other live objects.  Three common patterns break that, and each
 * has its annotation:
 *   1. hc_ignore_object(p): a cache whose pointer is kept encoded (here
 *      XOR-masked, like a tagged or compressed pointer);
 *   2. HC_DISABLE_SCOPE: a library's one-time initialisation that leaks on
 *      purpose; everything allocated by this thread in the scope is ignored;
 *   3. hc_register_root_region(): pointers kept in memory the checker does
 *      not scan by default, here a shared mapping (private anonymous
 *      mappings, like an allocator's arenas, are scanned already).
 * Ignored objects are roots: what they point to is live too.
 *
 * Build:  cc -g -fno-omit-frame-pointer ignore_and_disable.c -o ignore_and_disable -lheapcheck
 * Run:    HEAPCHECK=normal ./ignore_and_disable            no leaks; exit 0
 *         HEAPCHECK=normal ./ignore_and_disable --plain    the same program
 *                       without the annotations: three leaks reported; exit 1
 */
#include <heapcheck.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define MASK ((uintptr_t)0x5A5A5A5A5A5A5A5Aull)

static uintptr_t encoded_cache;  /* the cache pointer XOR MASK: no root sees it */
static void **arena;             /* a shared mapping: the checker does not scan it */
static int annotate = 1;

static void *volatile sink;

/* 1. A cache reachable only through an encoded pointer. */
__attribute__((noinline)) static void make_cache(void) {
  char *cache = malloc(2000);
  if (!cache) return;
  memset(cache, 0, 2000);
  char **entry = (char **)cache;
  entry[0] = strdup("cached entry");  /* live because the cache is ignored */
  if (annotate) hc_ignore_object(cache);
  encoded_cache = (uintptr_t)cache ^ MASK;
}

/* 2. Third-party code that allocates once and never frees. */
__attribute__((noinline)) static void legacy_library_init(void) {
  sink = malloc(100);
  sink = NULL;
}

/* 3. Heap objects referenced only from a shared mapping. */
__attribute__((noinline)) static void fill_arena(void) {
  arena = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (arena == MAP_FAILED) {
    arena = NULL;
    return;
  }
  if (annotate) hc_register_root_region(arena, 4096);
  for (int i = 0; i < 3; i++) arena[i] = calloc(1, 48);
}

/* Overwrites dead stack frames so no stale pointer copy keeps a leak alive
 * (a conservative checker cannot tell a dead copy from a live one). */
__attribute__((noinline)) static void scrub_stack(void) {
  volatile char buf[8192];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = 0;
}

/* Decodes the cache pointer in a frame of its own that scrub_stack() then
 * overwrites: main's registers and frame never hold it. */
__attribute__((noinline)) static void report(void) {
  char **cache = (char **)(encoded_cache ^ MASK);
  printf("ignore_and_disable: annotations %s; cache holds \"%s\"; arena %s\n", annotate ? "on" : "off",
         cache ? cache[0] : "?", arena ? "mapped" : "not mapped");
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--plain") == 0) annotate = 0;

  make_cache();
  if (annotate) {
    HC_DISABLE_SCOPE;  /* ends with the block */
    legacy_library_init();
  } else {
    legacy_library_init();
  }
  fill_arena();
  scrub_stack();
  report();
  scrub_stack();
  return 0;
}

/* test_dlopen.c - dlopen/dlclose a module 200 times while another thread allocates.
 *
 * The module (early_ctor_lib.so, path in argv[1]) allocates in its
 * constructor (including from a thread it starts and joins) and in its
 * destructor, which also verifies and frees the block its constructor kept.
 * Each round checks that the constructor ran and succeeded, that the kept
 * block is heapcheck's and intact, that dlclose ran the destructor (the
 * module really unloads), and frees the constructor thread's block from
 * here.  A second thread allocates, verifies and frees throughout.
 * Built linked with libheapcheck and without it (run under LD_PRELOAD). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapcheck.h"

#define ROUNDS 200

int hc_test_ctor_count; /* incremented by the module's constructor and destructor */
int hc_test_dtor_count;

#include "hc_check.h"

static atomic_int stop;
static atomic_long allocs;
static atomic_int worker_errors;

static void *worker(void *arg) {
  (void)arg;
  uint64_t rng = 88172645463325252ull;
  enum { K = 128 };
  unsigned char *v[K] = {0};
  size_t sz[K] = {0};
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    int k = (int)(rng % K);
    if (v[k]) {
      for (size_t i = 0; i < sz[k]; i += 61)
        if (v[k][i] != (unsigned char)(k + i)) {
          atomic_fetch_add(&worker_errors, 1);
          break;
        }
      free(v[k]);
    }
    sz[k] = (rng >> 8) % 100 < 97 ? 1 + (rng >> 16) % 3000 : (rng >> 16) % (400 << 10);
    v[k] = malloc(sz[k]);
    if (!v[k]) {
      atomic_fetch_add(&worker_errors, 1);
      continue;
    }
    for (size_t i = 0; i < sz[k]; i += 61) v[k][i] = (unsigned char)(k + i);
    atomic_fetch_add_explicit(&allocs, 1, memory_order_relaxed);
  }
  for (int k = 0; k < K; k++) free(v[k]);
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s path/to/early_ctor_lib.so [variant]\n", argv[0]);
    return 2;
  }
  const char *variant = argc > 2 ? argv[2] : "linked";
  void (*get_stats)(hc_stats_t *) = (void (*)(hc_stats_t *))dlsym(RTLD_DEFAULT, "hc_get_stats");
  Dl_info di_stats, di_malloc;
  CHECK(get_stats && dladdr((void *)get_stats, &di_stats) && dladdr(dlsym(RTLD_DEFAULT, "malloc"), &di_malloc) &&
            di_stats.dli_fbase == di_malloc.dli_fbase,
        "%s: malloc is not heapcheck's", variant);
  if (failures) return 1;
  pthread_t w;
  pthread_create(&w, NULL, worker, NULL);
  for (int round = 0; round < ROUNDS; round++) {
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    CHECK(h != NULL, "round %d: dlopen: %s", round, dlerror());
    if (!h) break;
    CHECK(hc_test_ctor_count == round + 1, "round %d: constructor ran %d times", round, hc_test_ctor_count);
    int *ok = dlsym(h, "early_lib_ctor_ok");
    int *step = dlsym(h, "early_lib_ctor_step");
    unsigned char **block = dlsym(h, "early_lib_block");
    void **tblock = dlsym(h, "early_lib_thread_block");
    CHECK(ok && *ok == 1, "round %d: the module's constructor failed at step %d", round, step ? *step : -1);
    if (block && *block) {
      unsigned char *b = *block;
      CHECK(b[0] == 0 && b[1] == 13 && b[12344] == (unsigned char)(12344 * 13), "round %d: kept block", round);
      CHECK(malloc_usable_size(b) >= 12345, "round %d: usable size %zu", round, malloc_usable_size(b));
    } else {
      CHECK(0, "round %d: no block kept by the constructor", round);
    }
    if (tblock && *tblock) { /* the constructor thread's block, freed by this thread */
      free(*tblock);
      *tblock = NULL;
    }
    CHECK(dlclose(h) == 0, "round %d: dlclose: %s", round, dlerror());
    CHECK(hc_test_dtor_count == round + 1, "round %d: destructor ran %d times (module not unloaded?)", round,
          hc_test_dtor_count);
  }
  atomic_store(&stop, 1);
  pthread_join(w, NULL);
  CHECK(atomic_load(&worker_errors) == 0, "%d errors in the allocating thread", atomic_load(&worker_errors));
  CHECK(atomic_load(&allocs) > 0, "the allocating thread never ran");
  hc_stats_t st;
  get_stats(&st);
  CHECK(st.in_use < (8u << 20), "%zu bytes still in use after everything was freed", st.in_use);
  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  printf("dlopen/dlclose x%d OK (%s; %ld allocations by the other thread)\n", ROUNDS, variant,
         (long)atomic_load(&allocs));
  return 0;
}

/* test_early_alloc.c - allocation before main: in a linked library's
 * constructor (with a thread), and in this executable's constructor(101).
 *
 * Built twice: linked with libheapcheck (the executable defines malloc and
 * exports it to early_ctor_lib.so, whose constructor runs before this
 * executable's constructors, heapcheck's included) and without it, run
 * under LD_PRELOAD=libheapcheck.so.  Both variants check that malloc is
 * heapcheck's (the module defining malloc also defines hc_get_stats), that
 * the library's constructor succeeded, and that the blocks allocated before
 * main are intact, counted by hc_get_stats and freeable. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapcheck.h"

extern void *early_lib_block;
extern void *early_lib_thread_block;
extern int early_lib_ctor_ok;
extern int early_lib_ctor_step;
int hc_test_ctor_count; /* incremented by early_ctor_lib's constructor */
int hc_test_dtor_count;

#include "hc_check.h"

static unsigned char *exe_block;
static int exe_ctor_ran;

__attribute__((constructor(101))) static void exe_ctor(void) {
  void *v[50];
  for (int i = 0; i < 50; i++) v[i] = malloc((size_t)i * 321 + 5);
  for (int i = 0; i < 50; i++) free(v[i]);
  exe_block = malloc(4321);
  if (exe_block) memset(exe_block, 0x42, 4321);
  exe_ctor_ran = 1;
}

int main(int argc, char **argv) {
  const char *variant = argc > 1 ? argv[1] : "linked";
  void (*get_stats)(hc_stats_t *) = (void (*)(hc_stats_t *))dlsym(RTLD_DEFAULT, "hc_get_stats");
  void *m = dlsym(RTLD_DEFAULT, "malloc");
  Dl_info di_stats, di_malloc;
  CHECK(get_stats != NULL, "%s: hc_get_stats not found: heapcheck is not in the process", variant);
  if (!get_stats) return 1;
  CHECK(dladdr((void *)get_stats, &di_stats) && dladdr(m, &di_malloc), "dladdr");
  CHECK(di_stats.dli_fbase == di_malloc.dli_fbase, "%s: malloc comes from %s, hc_get_stats from %s", variant,
        di_malloc.dli_fname, di_stats.dli_fname);
  printf("%s: malloc from %s\n", variant, di_malloc.dli_fname);

  CHECK(early_lib_ctor_ok == 1, "the library constructor failed at step %d", early_lib_ctor_step);
  CHECK(hc_test_ctor_count == 1, "library constructor ran %d times", hc_test_ctor_count);
  CHECK(exe_ctor_ran && exe_block, "executable constructor did not allocate");
  hc_stats_t st;
  get_stats(&st);
  CHECK(st.in_use >= 12345 + 777 + 4321, "in_use %zu does not count the blocks allocated before main", st.in_use);
  unsigned char *b = early_lib_block;
  if (b) {
    for (int i = 0; i < 12345; i++)
      if (b[i] != (unsigned char)(i * 13)) {
        CHECK(0, "library block corrupted at %d", i);
        break;
      }
    CHECK(malloc_usable_size(b) >= 12345, "library block usable size %zu", malloc_usable_size(b));
  }
  unsigned char *t = early_lib_thread_block;
  CHECK(t != NULL, "no block from the constructor's thread");
  if (t) {
    for (int i = 0; i < 777; i++)
      if (t[i] != 0x77) {
        CHECK(0, "thread block corrupted at %d", i);
        break;
      }
    /* freed here, by another thread than the one that allocated it */
    free(t);
    early_lib_thread_block = NULL;
  }
  if (exe_block) {
    for (int i = 0; i < 4321; i++)
      if (exe_block[i] != 0x42) {
        CHECK(0, "executable constructor's block corrupted at %d", i);
        break;
      }
    exe_block = realloc(exe_block, 100000);
    CHECK(exe_block && exe_block[4320] == 0x42, "realloc of a block allocated before main");
    free(exe_block);
  }
  /* early_lib_block is left for the library's destructor to check and free */
  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  printf("early allocation OK (%s)\n", variant);
  return 0;
}

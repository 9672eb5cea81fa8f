/* early_ctor_lib.c - a shared object that allocates in its constructor and
 * destructor (used by test_early_alloc, linked in, and by test_dlopen,
 * loaded and unloaded repeatedly).
 *
 * The constructor runs before the executable's constructors (so before
 * heapcheck's own constructor when heapcheck is linked into the executable):
 * it allocates and frees many sizes, checks calloc and realloc, creates a
 * thread that allocates, and keeps one block whose contents the program
 * verifies.  The destructor allocates again and frees the kept block if the
 * program has not taken it.  Counters in the program (weak references,
 * optional) count constructor and destructor runs.  No TLS, no stdio. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EARLY_BLOCK_SIZE 12345

void *early_lib_block;         /* kept from the constructor: pattern (i * 13) & 0xff */
void *early_lib_thread_block;  /* allocated by the constructor's thread, 777 bytes of 0x77 */
int early_lib_ctor_ok;         /* 1 when every check in the constructor passed */
int early_lib_ctor_step;       /* the first failing step, for the report */

extern int hc_test_ctor_count __attribute__((weak));
extern int hc_test_dtor_count __attribute__((weak));

static void *thread_main(void *arg) {
  (void)arg;
  void *v[64];
  for (int i = 0; i < 64; i++) {
    v[i] = malloc((size_t)i * 100 + 1);
    if (!v[i]) return NULL;
    memset(v[i], i, (size_t)i * 100 + 1);
  }
  for (int i = 0; i < 64; i++) free(v[i]);
  void *p = malloc(777);
  if (p) memset(p, 0x77, 777);
  return p;
}

static int churn(void) {
  void *v[200];
  for (int i = 0; i < 200; i++) {
    size_t n = i % 20 == 19 ? (size_t)i * 3000 : (size_t)i * 7 + 1;
    v[i] = malloc(n);
    if (!v[i]) return 1;
    memset(v[i], 0xab, n);
  }
  for (int i = 0; i < 200; i += 2) free(v[i]);
  for (int i = 1; i < 200; i += 2) free(v[i]);
  unsigned char *z = calloc(1000, 3);
  if (!z) return 2;
  for (int i = 0; i < 3000; i++)
    if (z[i]) return 3;
  unsigned char *r = realloc(z, 100000);
  if (!r) return 4;
  for (int i = 0; i < 3000; i++)
    if (r[i]) return 5;
  free(r);
  void *a = NULL;
  if (posix_memalign(&a, 4096, 5000) || ((uintptr_t)a & 4095)) return 6;
  free(a);
  return 0;
}

__attribute__((constructor)) static void early_ctor(void) {
  int step = churn();
  if (!step) {
    pthread_t t;
    void *res = NULL;
    if (pthread_create(&t, NULL, thread_main, NULL) != 0) step = 10;
    else if (pthread_join(t, &res) != 0 || !res) step = 11;
    early_lib_thread_block = res;
  }
  if (!step) {
    unsigned char *b = malloc(EARLY_BLOCK_SIZE);
    if (!b) step = 20;
    else
      for (int i = 0; i < EARLY_BLOCK_SIZE; i++) b[i] = (unsigned char)(i * 13);
    early_lib_block = b;
  }
  early_lib_ctor_step = step;
  early_lib_ctor_ok = step == 0;
  if (&hc_test_ctor_count) hc_test_ctor_count++;
}

__attribute__((destructor)) static void early_dtor(void) {
  churn();
  unsigned char *b = early_lib_block;
  if (b) {
    for (int i = 0; i < EARLY_BLOCK_SIZE; i++)
      if (b[i] != (unsigned char)(i * 13)) abort(); /* corrupted while we were loaded */
    free(b);
    early_lib_block = NULL;
  }
  free(early_lib_thread_block);
  early_lib_thread_block = NULL;
  if (&hc_test_dtor_count) hc_test_dtor_count++;
}

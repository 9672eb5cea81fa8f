/* test_ignore.c - what the API can make a root: hc_ignore_object (interior
 * pointers, twice, undone by hc_unignore_object, forgotten when the object
 * is freed), the Disabler (nesting, per thread, HC_DISABLE_SCOPE), root
 * regions (registered, unregistered, bad arguments) and cleanups' argument
 * checks.  Each case is a scoped check with exact totals.
 *
 * Usage: test_ignore   (HEAPCHECK=local or any mode); exit 0 = pass.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "heapcheck.h"
#include "scenarios/scenario.h"

#include "hc_check.h"

static NOINLINE void expect_end_(hc_check_t *c, ssize_t bytes, ssize_t objects) {
  hc_check_end(c, HC_CHECK_REPORT);
  ssize_t b = hc_check_bytes_leaked(c), o = hc_check_objects_leaked(c);
  CHECK(b == bytes && o == objects, "%s: %zd bytes in %zd objects, expected %zd in %zd", hc_check_name(c), b, o,
         bytes, objects);
  printf("%s %s: %zd bytes in %zd objects\n", b == bytes && o == objects ? "ok  " : "FAIL", hc_check_name(c), b, o);
  fflush(stdout);
}
/* The caller wipes the dead stack first: expect_end_'s own frame then holds no
 * stale copy of a pointer the scenario just dropped (its padding is never
 * written, and the at-entry scan covers it). */
#define expect_end(c, bytes, objects) (wipe_stack(), expect_end_((c), (bytes), (objects)))

/* Blocks reachable only through XOR-masked words. */
static unsigned long hidden[64];
static int nhidden;

static NOINLINE void *alloc_hidden(size_t n) {
  void *p = calloc(1, n);
  hidden[nhidden++] = (unsigned long)p ^ HIDE_MASK;
  return p;
}
static void *unhide(int i) { return (void *)(hidden[i] ^ HIDE_MASK); }
static void free_hidden(void) {
  while (nhidden) free(unhide(--nhidden));
}

static NOINLINE void ignore_and_free(size_t n) {
  void *p = malloc(n);
  hc_ignore_object(p);
  free(p);
}

static void ignore(void) {
  hc_check_t *c = hc_check_begin("ignore");
  alloc_hidden(77);
  CHECK(hc_ignore_object(unhide(0)) == 0, "ignore");
  CHECK(hc_ignore_object(unhide(0)) == 0, "ignore twice");
  expect_end(c, 0, 0);
  CHECK(hc_unignore_object(unhide(0)) == 0, "unignore");
  CHECK(hc_unignore_object(unhide(0)) == -1, "unignore twice");
  expect_end(c, 77, 1);
  hc_check_free(c);
  free_hidden();

  /* Interior pointers within the object; the ignored object is a root for what it points to. */
  c = hc_check_begin("ignore_interior");
  void **owner = alloc_hidden(100);
  store_ptr(owner, alloc_hidden(50));
  CHECK(hc_ignore_object((char *)owner + 10) == 0, "ignore interior");
  CHECK(hc_ignore_object((char *)owner + 100) == -1, "ignore past the end");
  expect_end(c, 0, 0);
  hc_check_free(c);
  free_hidden();

  /* Not heap objects. */
  int local = 0;
  CHECK(hc_ignore_object(&local) == -1, "ignore a stack address");
  CHECK(hc_ignore_object(NULL) == -1, "ignore NULL");
  CHECK(hc_unignore_object(&local) == -1, "unignore a stack address");

  /* Freeing forgets the flag: a new object at the same address is checked.
   * Out of line: a local here would keep the freed address - the new
   * object's - in this live frame at -O0, a root that hides it. */
  ignore_and_free(64);
  c = hc_check_begin("ignore_then_free");
  alloc_hidden(64);
  expect_end(c, 64, 1);
  hc_check_free(c);
  free_hidden();
}

static void *disabled_thread(void *arg) {
  (void)arg;
  alloc_hidden(300); /* another thread: not covered by main's Disabler */
  return NULL;
}

static void disabler(void) {
  hc_check_t *c = hc_check_begin("disabler");
  hc_disable_begin();
  alloc_hidden(32);
  hc_disable_begin();
  alloc_hidden(32);
  hc_disable_end();
  alloc_hidden(32);
  pthread_t t;
  pthread_create(&t, NULL, disabled_thread, NULL);
  pthread_join(t, NULL);
  hc_disable_end();
  alloc_hidden(40);
  expect_end(c, 340, 2);
  hc_check_free(c);
  free_hidden();

  c = hc_check_begin("disable_scope");
  {
    HC_DISABLE_SCOPE;
    alloc_hidden(16);
  }
  alloc_hidden(24);
  expect_end(c, 24, 1);
  hc_check_free(c);
  free_hidden();

  hc_disable_end(); /* unbalanced: an error message, no effect */
  c = hc_check_begin("after_unbalanced_end");
  alloc_hidden(8);
  expect_end(c, 8, 1);
  hc_check_free(c);
  free_hidden();
}

static void regions(void) {
  void **r = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK(r != MAP_FAILED, "mmap");
  hc_check_t *c = hc_check_begin("root_region");
  r[1000] = calloc(1, 600);
  CHECK(hc_register_root_region(r, 8192) == 0, "register");
  expect_end(c, 0, 0);
  CHECK(hc_unregister_root_region(r, 4096) == -1, "unregister with another size");
  CHECK(hc_unregister_root_region(r, 8192) == 0, "unregister");
  expect_end(c, 600, 1);
  free(r[1000]);
  /* A registered region that is later unmapped is skipped, not read. */
  CHECK(hc_register_root_region(r, 8192) == 0, "register again");
  munmap(r, 8192);
  expect_end(c, 0, 0);
  CHECK(hc_unregister_root_region(r, 8192) == 0, "unregister unmapped");
  hc_check_free(c);

  CHECK(hc_register_root_region(NULL, 10) == -1, "register NULL");
  CHECK(hc_register_root_region(r, 0) == -1, "register empty");
  CHECK(hc_register_root_region((void *)~(uintptr_t)0, 10) == -1, "register wrapping");
  CHECK(hc_register_cleanup(NULL) == -1, "cleanup NULL");
}

int main(void) {
  if (!hc_is_active()) {
    printf("FAIL: run with HEAPCHECK set (local is enough)\n");
    return 1;
  }
  ignore();
  disabler();
  regions();
  printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
  return failures != 0;
}

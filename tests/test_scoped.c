/* test_scoped.c - scoped checks (hc_check_begin/hc_check_end) on epochs:
 * exact totals, objects freed meanwhile do not offset new leaks, objects
 * from before the check are never reported, nesting and overlapping checks,
 * address reuse, leaks of other threads, many checks; and the inactive
 * checker (HEAPCHECK unset): every call is a no-op reporting no leaks.
 *
 * Usage: test_scoped            (run with HEAPCHECK=local or any mode, and
 *        without HEAPCHECK: the inactive checks); exit 0 = pass.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapcheck.h"
#include "scenarios/scenario.h"

#include "hc_check.h"

/* Ends c (again, if it ran before) and compares the totals. */
static NOINLINE void expect_end_(hc_check_t *c, ssize_t bytes, ssize_t objects) {
  int ok = hc_check_end(c, HC_CHECK_REPORT);
  ssize_t b = hc_check_bytes_leaked(c), o = hc_check_objects_leaked(c);
  CHECK(b == bytes && o == objects && ok == (objects == 0),
         "%s: %zd bytes in %zd objects (returned %d), expected %zd bytes in %zd objects", hc_check_name(c), b, o, ok,
         bytes, objects);
  printf("%s %s: %zd bytes in %zd objects\n", b == bytes && o == objects ? "ok  " : "FAIL", hc_check_name(c), b, o);
  fflush(stdout);
}
/* The caller wipes the dead stack first: expect_end_'s own frame then holds no
 * stale copy of a pointer the scenario just dropped (its padding is never
 * written, and the at-entry scan covers it). */
#define expect_end(c, bytes, objects) (wipe_stack(), expect_end_((c), (bytes), (objects)))

/* Leaked blocks are kept XOR-masked here, so they are unreachable but can be freed later. */
static unsigned long hidden[64];
static int nhidden;

static NOINLINE void leak(size_t n) {
  void *p = calloc(1, n);
  hidden[nhidden++] = (unsigned long)p ^ HIDE_MASK;
}

static void free_hidden(void) {
  while (nhidden) free((void *)(hidden[--nhidden] ^ HIDE_MASK));
}

static void *keep[16]; /* reachable blocks made before checks */

/* In helpers: a caller's callee-saved registers would keep stale copies. */
static NOINLINE void make_loop(void) {
  void **a = calloc(1, 16), **b = calloc(1, 16);
  store_ptr(a, b);
  store_ptr(b, a);
}

static void basic(void) {
  hc_check_t *c = hc_check_begin("trivial");
  expect_end(c, 0, 0);
  hc_check_free(c);

  c = hc_check_begin("simple");
  free(malloc(123));
  expect_end(c, 0, 0);
  hc_check_free(c);

  c = hc_check_begin("death_simple"); /* gperftools' DeathSimple: 100 ints + 300 bytes */
  leak(100 * sizeof(int));
  leak(300);
  expect_end(c, 700, 2);
  /* Ending again is a new check against the same start. */
  expect_end(c, 700, 2);
  hc_check_free(c);
  free_hidden();

  c = hc_check_begin("death_loop");
  make_loop();
  expect_end(c, 32, 2);
  hc_check_free(c);
}

static void epochs(void) {
  /* Objects freed meanwhile do not offset new leaks (gperftools' DeathInverse, CountLess/More). */
  keep[0] = malloc(1000);
  keep[1] = malloc(240);
  keep[2] = malloc(160);
  hc_check_t *c = hc_check_begin("death_inverse");
  free(keep[0]);
  leak(400);
  expect_end(c, 400, 1);
  hc_check_free(c);
  free_hidden();

  c = hc_check_begin("death_count_more");
  free(keep[1]);
  leak(200);
  leak(200);
  expect_end(c, 400, 2);
  hc_check_free(c);
  free_hidden();

  c = hc_check_begin("death_noleaks");
  free(keep[2]);
  expect_end(c, 0, 0);
  hc_check_free(c);

  /* Already unreachable before the check: not this check's leak. */
  leak(555);
  c = hc_check_begin("old_leak");
  expect_end(c, 0, 0);
  hc_check_free(c);
  free_hidden();

  /* An address freed and reused inside the check is judged by its new life. */
  leak(48);
  c = hc_check_begin("address_reuse");
  free_hidden();
  leak(48); /* most likely at the address just freed */
  expect_end(c, 48, 1);
  hc_check_free(c);
  free_hidden();
}

static void nesting(void) {
  hc_check_t *outer = hc_check_begin("outer");
  leak(11);
  hc_check_t *inner = hc_check_begin("inner");
  leak(22);
  expect_end(inner, 22, 1);
  expect_end(outer, 33, 2);
  hc_check_free(inner);
  hc_check_free(outer);
  free_hidden();

  /* Overlapping, not nested. */
  hc_check_t *c1 = hc_check_begin("overlap1");
  leak(100);
  hc_check_t *c2 = hc_check_begin("overlap2");
  leak(200);
  expect_end(c1, 300, 2);
  leak(400);
  expect_end(c2, 600, 2);
  hc_check_free(c1);
  hc_check_free(c2);
  free_hidden();
}

static void *thread_leak(void *arg) {
  (void)arg;
  leak(777);
  return NULL;
}

static void threads(void) {
  hc_check_t *c = hc_check_begin("other_thread");
  pthread_t t;
  pthread_create(&t, NULL, thread_leak, NULL);
  pthread_join(t, NULL);
  expect_end(c, 777, 1);
  hc_check_free(c);
  free_hidden();
}

static void many_checks(void) {
  /* 70000 begins wrap the 16-bit epoch: a fresh check is still exact. */
  for (int i = 0; i < 70000; i++) hc_check_free(hc_check_begin("x"));
  hc_check_t *c = hc_check_begin("after_wrap");
  leak(64);
  expect_end(c, 64, 1);
  hc_check_free(c);
  free_hidden();
  /* Without HC_CHECK_REPORT nothing is printed, the totals are still kept. */
  c = hc_check_begin("quiet");
  leak(32);
  wipe_stack();
  CHECK(hc_check_end(c, 0) == 0 && hc_check_bytes_leaked(c) == 32, "quiet check: %zd", hc_check_bytes_leaked(c));
  hc_check_free(c);
  free_hidden();
}

static void inactive(void) {
  CHECK(!hc_is_active(), "hc_is_active() without HEAPCHECK");
  hc_check_t *c = hc_check_begin("inactive");
  CHECK(c != NULL, "hc_check_begin returned NULL");
  CHECK(strcmp(hc_check_name(c), "inactive") == 0, "name %s", hc_check_name(c));
  leak(100);
  CHECK(hc_check_end(c, HC_CHECK_REPORT) == 1, "inactive check found leaks");
  CHECK(hc_check_bytes_leaked(c) == -1 && hc_check_objects_leaked(c) == -1, "inactive totals %zd",
         hc_check_bytes_leaked(c));
  hc_check_free(c);
  CHECK(hc_no_global_leaks() == 1, "inactive hc_no_global_leaks");
  CHECK(hc_global_bytes_leaked() == -1, "inactive global totals");
  CHECK(hc_ignore_object(&failures) == 0, "inactive ignore");
  CHECK(hc_register_root_region(keep, sizeof keep) == 0, "inactive root region");
  CHECK(hc_unregister_root_region(keep, sizeof keep) == 0, "inactive unregister");
  hc_disable_begin();
  hc_disable_end();
  hc_cancel_global_check();
  free_hidden();
}

int main(void) {
  if (!hc_is_active()) {
    inactive();
  } else {
    basic();
    epochs();
    nesting();
    threads();
    many_checks();
    CHECK(hc_check_end(NULL, 0) == 1, "hc_check_end(NULL)");
    hc_check_free(NULL);
    hc_cancel_global_check(); /* the leaks above were on purpose */
  }
  printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
  return failures != 0;
}

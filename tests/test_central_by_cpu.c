/* test_central_by_cpu.c - the central lists' choices by CPU, on two CPUs
 * (exit 77, skipped, with fewer or no rseq area).
 *
 * With two thread caches live: a refill takes the newest chain handed over
 * on its own CPU, else the oldest (central.c, pick_slot): chains_by_cpu.  A
 * chain handed over on a CPU where nobody refilled its class lately goes
 * back into its spans, not a slot, and a span it empties is carved again in
 * address order by the next refill (central.c, refilled_on): foreign_cpu.
 * With one: the CPU is not asked (central.c, chain_cpu), so a thread the
 * scheduler moves keeps every chain in the slots and takes the newest:
 * one_thread. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "central_check.h"

/* One thread cache live (or none): a chain handed over on a CPU that never
 * refilled its class goes into a slot, and a refill takes the newest chain
 * whatever CPU it was handed over on.  Before chain_cpu, the first went
 * back into its span (an empty span kept, no chain) and the second took
 * the chain of the refill's own CPU: a single thread's memory followed
 * where the scheduler ran it (malloc_large's peak RSS, docs/performance.md,
 * "Memory, eighth pass"). */
static void one_thread(const int *cpus) {
  unsigned c = hci_size_class(160);
  const hc_class_info_t *ci = &hci_classes[c];
  hc_central_t *ce = &hci_central[c];
  static void *v[MAXOBJ];
  CHECK(hci_tc_count() < 2, "%zu thread caches live, want at most one", hci_tc_count());
  CHECK(ce->nspans == 0 && ce->nchains == 0, "class %u is not untouched", c);
  hc_chain_t ch, a, b;
  CHECK(hci_central_remove_fresh(c, ci->batch, ci->objs, &ch, NULL), "class %u: remove_fresh", c); /* on cpus[0] */
  uint32_t n = take_chain(c, &ch, v, MAXOBJ);
  CHECK(n >= 4, "class %u: a new span gave %u objects", c, n);
  CHECK(pin(cpus[1]), "cannot move to cpu %d", cpus[1]);
  make_chain(v, n / 2, &a);
  hci_central_insert(c, &a);
  CHECK(ce->nchains == 1 && ce->nempty == 0,
        "one thread: a chain handed over on cpu %d, where the class was not refilled, went to its span (%u chains, "
        "%u empty spans)", cpus[1], ce->nchains, ce->nempty);
  CHECK(pin(cpus[0]), "cannot move back to cpu %d", cpus[0]);
  make_chain(v + n / 2, n - n / 2, &b);
  hci_central_insert(c, &b);
  CHECK(pin(cpus[1]), "cannot move to cpu %d", cpus[1]);
  hc_chain_t out;
  CHECK(hci_central_remove(c, n - n / 2, &out, NULL), "class %u: remove failed", c);
  CHECK(out.head == b.head, "one thread: a refill on cpu %d took the chain handed over there, not the newest", cpus[1]);
  take_chain(c, &out, v, MAXOBJ);
  CHECK(hci_central_remove(c, n / 2, &out, NULL) && out.head == a.head, "class %u: the second chain", c);
  take_chain(c, &out, v, MAXOBJ);
  CHECK(pin(cpus[0]), "cannot move back to cpu %d", cpus[0]);
  printf("by_cpu: one thread keeps its chains in the slots, newest first: %s\n", failures ? "no" : "yes");
}

/* A second thread with a cache of its own, alive until told to go. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int phase; /* 1: its cache is live; 2: it may exit */

static void *second(void *arg) {
  (void)arg;
  hci_tc_get();
  pthread_mutex_lock(&mu);
  phase = 1;
  pthread_cond_broadcast(&cv);
  while (phase != 2) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  return NULL;
}

/* A whole span of an untouched class, taken on one CPU and handed back on
 * another where nobody refilled the class: it goes into its span (not a
 * slot: a refill would take it on another CPU), which is then empty and
 * kept; the next refill, on the first CPU, carves the span again in
 * address order.  A chain handed back on the first CPU, which refills the
 * class, is kept in a slot. */
static void foreign_cpu(const int *cpus) {
  unsigned c = hci_size_class(96);
  const hc_class_info_t *ci = &hci_classes[c];
  hc_central_t *ce = &hci_central[c];
  static void *v[MAXOBJ];
  CHECK(ce->nspans == 0 && ce->nchains == 0, "class %u is not untouched", c);
  hc_chain_t ch;
  CHECK(hci_central_remove_fresh(c, ci->batch, ci->objs, &ch, NULL), "class %u: remove_fresh", c);
  uint32_t n = take_chain(c, &ch, v, MAXOBJ);
  CHECK(n == ci->objs, "class %u: a new span gave %u, want %u", c, n, ci->objs);
  for (uint32_t i = 0; i + 1 < n; i += 2) { /* another order than the carve's */
    void *t = v[i];
    v[i] = v[i + 1];
    v[i + 1] = t;
  }
  make_chain(v, n, &ch);
  CHECK(pin(cpus[1]), "cannot move to cpu %d", cpus[1]);
  hci_central_insert(c, &ch);
  CHECK(ce->nchains == 0 && ce->nempty == 1,
        "class %u: a chain handed over on cpu %d, where nobody refills the class, is in a slot (%u chains, %u "
        "empty spans)", c, cpus[1], ce->nchains, ce->nempty);
  CHECK(pin(cpus[0]), "cannot move back to cpu %d", cpus[0]);
  CHECK(hci_central_remove_fresh(c, ci->batch, ci->objs, &ch, NULL), "class %u: remove_fresh", c);
  check_carved_span(c, &ch, "refill after the foreign chain");
  n = take_chain(c, &ch, v, MAXOBJ);
  make_chain(v, n, &ch);
  hci_central_insert(c, &ch);
  CHECK(ce->nchains == 1, "class %u: a chain handed over on cpu %d, which refills the class, not in a slot", c,
        cpus[0]);
  printf("by_cpu: a chain handed over where nobody refills goes to its span, carved again: %s\n",
         failures ? "no" : "yes");
}

/* Three chains of class c: A handed over on one CPU, B and C on another.
 * A refill on the first CPU takes A (its CPU's newest, though C is newer),
 * the next one there B (no chain of its CPU left: the oldest), then C. */
static int chains_by_cpu(void) {
  cpu_set_t all;
  int cpus[2], n = 0;
  if (sched_getaffinity(0, sizeof all, &all) != 0) return 77;
  for (int i = 0; i < CPU_SETSIZE && n < 2; i++)
    if (CPU_ISSET(i, &all)) cpus[n++] = i;
  if (n < 2 || !pin(cpus[0])) {
    printf("by_cpu: needs two CPUs and the rseq area (%d CPUs, cpu %u): skipped\n", n, hci_os_cpu());
    return 77;
  }
  one_thread(cpus);
  /* The rest with two caches live: this thread's and a second one's. */
  hci_tc_get();
  pthread_t t;
  CHECK(pthread_create(&t, NULL, second, NULL) == 0, "pthread_create");
  pthread_mutex_lock(&mu);
  while (phase != 1) pthread_cond_wait(&cv, &mu);
  pthread_mutex_unlock(&mu);
  CHECK(hci_tc_count() >= 2, "%zu thread caches live, want two", hci_tc_count());
  unsigned c = hci_size_class(64);
  static void *v[3 * MAXOBJ / 4];
  size_t got = take_n(c, v, 2 * 8);
  CHECK(pin(cpus[1]), "cannot move to cpu %d", cpus[1]); /* both CPUs refill the class: chains go to slots */
  got += take_n(c, v + got, 8);
  CHECK(pin(cpus[0]), "cannot move back to cpu %d", cpus[0]);
  CHECK(got == 24, "class %u: took %zu objects, want 24", c, got);
  hc_chain_t ch[3];
  for (int k = 0; k < 3; k++) {
    make_chain(v + 8 * k, 8, &ch[k]);
    CHECK(k == 0 || pin(cpus[1]), "cannot move to cpu %d", cpus[1]);
    hci_central_insert(c, &ch[k]);
  }
  CHECK(hci_central[c].nchains == 3, "class %u: %u chains in the slots, want 3", c, hci_central[c].nchains);
  CHECK(pin(cpus[0]), "cannot move back to cpu %d", cpus[0]);
  static const int order[3] = {0, 1, 2};
  for (int k = 0; k < 3; k++) {
    hc_chain_t out;
    CHECK(hci_central_remove(c, 8, &out, NULL), "class %u: remove %d failed", c, k);
    int which = out.head == ch[0].head ? 0 : out.head == ch[1].head ? 1 : out.head == ch[2].head ? 2 : -1;
    CHECK(which == order[k], "refill %d on cpu %d took chain %c, want %c (A on cpu %d; B, C on cpu %d)", k, cpus[0],
          "?ABC"[which + 1], "ABC"[order[k]], cpus[0], cpus[1]);
    take_chain(c, &out, v, MAXOBJ / 4);
  }
  printf("by_cpu: chains taken in the order A, B, C: %s\n", failures ? "no" : "yes");
  foreign_cpu(cpus);
  pthread_mutex_lock(&mu);
  phase = 2;
  pthread_cond_broadcast(&cv);
  pthread_mutex_unlock(&mu);
  pthread_join(t, NULL);
  return failures ? 1 : 0;
}
int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  setvbuf(stderr, NULL, _IONBF, 0);
  printf("central lists by CPU\n");
  hci_ensure_init(); /* the allocator alone: no malloc of ours in this test */
  return chains_by_cpu();
}

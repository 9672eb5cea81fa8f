/* test_thread_cache.c - a per-thread cache's capacity policy, op by op.
 *
 * Policy (thread_cache.c): a cache's capacity per class starts at 0 and
 * grows by the class's batch at each refill and each overflow, up to the
 * class's limit (1 MiB of objects, at most 2048, at least a batch), while
 * cap_bytes = sum(cap[c] * size[c]) stays <= the cache's budget
 * (HC_TC_BUDGET_TOTAL / live caches, clamped to [HC_TC_BUDGET_MIN,
 * HC_TC_BUDGET_MAX]).  Each such step first refreshes the budget (it
 * shrinks as threads start); when the cache is over it, or the growth does
 * not fit, capacity is taken from other classes (lists given back when
 * they no longer fit) until an eighth of the budget is free beyond the
 * growth: capacity above a batch first, only that for a class at a batch
 * or more in a cache within its budget (test_thread_cache_steal.c); when
 * none can give, the growing class is halved (its list cut, keeping the
 * newest objects) until the cache is within the budget, and does not grow.  An overflowing list goes to central but for
 * its newest min(cap / 4, 16) objects.  A refill receives a chain from
 * central (a whole chain another thread gave back, or up to a batch from
 * the spans); a chain longer than the capacity makes the capacity grow to
 * hold it (up to the class's limit) when the budget has room for that
 * short of an eighth, without taking any from other classes; the list
 * keeps max(cap, batch) objects of it and the rest goes back to central
 * at once.  So a list is longer than its capacity only when that capacity
 * is below a batch, and a cache holds at most its budget plus one batch.
 *
 *  - policy: one thread's every malloc and free is checked against a model
 *    of the above (caps, list lengths, cap_bytes, budget), through slow
 *    start, stealing, a long chain received from another thread (kept
 *    whole when the budget has room, else cut and the rest back in
 *    central), and the budget shrinking under a class at its
 *    limit (every other class emptied first, then the class halved);
 *  - one-way: a thread that only frees a class keeps at most its bound.
 * The budget shared by caches, the registry, the flush at thread exit and
 * the fast-path switch are test_tc_registry.c's.
 *
 * With the argument "chain-bound" or "budget-shrink" it runs one of two
 * scenarios that broke these bounds before refills cut long chains and a
 * shrinking budget halved the growing class (see scenario()). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_inline.h"
#include "free_list.h"
#include "hc_internal.h"
#include "heapcheck.h"
#include "tc_check.h"

// ---- the policy, op by op ----

static uint32_t overflow_keep(uint32_t cap) { return cap / 4 > 16 ? 16 : cap / 4; }

/* The most capacity a one-way class keeps: HC_TC_ONEWAY_BYTES, at least a
 * batch, at most the limit. */
static uint32_t oneway_cap_model(unsigned c) {
  uint32_t n = (uint32_t)(HC_TC_ONEWAY_BYTES / hci_classes[c].size);
  if (n < hci_classes[c].batch) n = hci_classes[c].batch;
  return n < cap_limit_model(c) ? n : cap_limit_model(c);
}

/* Overflows in a row before a class is one-way, minus one: more for the
 * classes that one-way capacity would leave at a batch. */
static uint8_t oneway_runs_model(unsigned c) {
  return oneway_cap_model(c) > hci_classes[c].batch ? 1 : HC_TC_ONEWAY_RUNS;
}

typedef struct {
  uint32_t cap[HC_NUM_CLASSES], len[HC_NUM_CLASSES], lim[HC_NUM_CLASSES];
  uint8_t local_runs[HC_NUM_CLASSES]; /* overflows left before the class is one-way */
  size_t cap_bytes, budget;
} tc_state_t;

static void snap(const hc_tcache_t *tc, tc_state_t *s) {
  for (unsigned c = 0; c < HC_NUM_CLASSES; c++) {
    s->cap[c] = hc_tc_cap(&tc->fl, c);
    s->len[c] = hc_tc_len(&tc->fl.lists[c]);
    s->lim[c] = tc->fl.lists[c].start_lim ? tc->fl.lists[c].lim : 0; /* what the free fast path fills up to */
    s->local_runs[c] = tc->fl.local_runs[c];
  }
  s->cap_bytes = tc->fl.cap_bytes;
  s->budget = tc->fl.budget;
}

static struct {
  int refills, grows, overflows, releases, steals, steal_releases, at_limit, over_budget, self_shrinks, cuts, fits,
      oneway_cuts;
} ev;

static void model_set_cap(tc_state_t *m, unsigned c, uint32_t cap) {
  m->cap_bytes = m->cap_bytes - (size_t)m->cap[c] * hci_classes[c].size + (size_t)cap * hci_classes[c].size;
  m->cap[c] = cap;
  m->lim[c] = cap;
}

/* grow_cap(): the budget refreshed; + a batch below the limit when grow
 * (an overflow, or a refill of a class below a batch); over the budget,
 * the other class with the most whole KiB above its batch cut to half, not
 * below the batch; when none, and c is below its batch or the cache over
 * its budget (deep), the one with the most KiB (else the lowest with
 * capacity) halved; the lowest class on ties; its list given back if
 * longer than the cut, until an eighth of the budget is free beyond the
 * growth; if none can give and the growth does not fit, c itself halved
 * (its list cut to the half) until within the budget, no growth. */
static void model_grow(tc_state_t *m, unsigned c, bool grow) {
  m->budget = budget_model();
  size_t need = 0;
  if (grow && m->cap[c] < cap_limit_model(c)) need = (size_t)hci_classes[c].batch * hci_classes[c].size;
  else if (grow) ev.at_limit++;
  if (m->cap_bytes + need > m->budget) {
    size_t target = m->budget - m->budget / 8;
    bool deep = m->cap[c] < hci_classes[c].batch || m->cap_bytes > m->budget;
    while (m->cap_bytes + need > target) {
      unsigned best = 0;
      size_t best_kib = 0;
      uint32_t half = 0;
      for (int pass = 0; pass < 2 && !best; pass++) /* KiB above the batch (cut to >= it), then when deep all (halved) */
        for (unsigned k = 1; k < HC_NUM_CLASSES && (pass == 0 || deep); k++) {
          uint32_t b = pass ? 0 : hci_classes[k].batch;
          size_t kib = m->cap[k] > b ? (size_t)(m->cap[k] - b) * hci_classes[k].size >> 10 : 0;
          if (k != c && kib > best_kib) best = k, best_kib = kib, half = m->cap[k] / 2 > b ? m->cap[k] / 2 : b;
        }
      for (unsigned k = 1; k < HC_NUM_CLASSES && deep && !best; k++)
        if (k != c && m->cap[k]) best = k, half = m->cap[k] / 2;
      if (!best) {
        if (m->cap_bytes + need <= m->budget) break; /* it fits after all */
        ev.over_budget++;
        need = 0;
        while (m->cap_bytes > m->budget && m->cap[c]) {
          ev.self_shrinks++;
          uint32_t own = m->cap[c] / 2;
          if (m->len[c] > own) m->len[c] = own;
          model_set_cap(m, c, own);
        }
        break;
      }
      ev.steals++;
      if (m->len[best] > half) m->len[best] = 0, ev.steal_releases++;
      model_set_cap(m, best, half);
    }
  }
  if (need) {
    ev.grows++;
    model_set_cap(m, c, m->cap[c] + hci_classes[c].batch);
  }
}

/* fit_chain(): a refill's list of n objects beyond the capacity makes the
 * capacity min(n, limit) when that fits in min(budget, HC_TC_FIT_MAX) short of an eighth. */
static void model_fit(tc_state_t *m, unsigned c, uint32_t n) {
  uint32_t want = n < cap_limit_model(c) ? n : cap_limit_model(c);
  if (want <= m->cap[c]) return;
  size_t b = m->budget < HC_TC_FIT_MAX ? m->budget : HC_TC_FIT_MAX;
  if (m->cap_bytes + (size_t)(want - m->cap[c]) * hci_classes[c].size > b - b / 8) return;
  ev.fits++;
  model_set_cap(m, c, want);
}

static void compare(const tc_state_t *want, const hc_tcache_t *tc, const char *op, size_t size) {
  tc_state_t got;
  snap(tc, &got);
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++)
    if (got.cap[c] != want->cap[c] || got.len[c] != want->len[c] || got.lim[c] != want->lim[c] ||
        got.local_runs[c] != want->local_runs[c]) {
      CHECK(0, "%s(%zu): class %u (%u bytes): cap %u len %u lim %u runs %u, model says cap %u len %u lim %u runs %u",
            op, size, c, hci_classes[c].size, got.cap[c], got.len[c], got.lim[c], got.local_runs[c], want->cap[c],
            want->len[c], want->lim[c], want->local_runs[c]);
      return;
    }
  CHECK(got.cap_bytes == want->cap_bytes && got.budget == want->budget,
        "%s(%zu): cap_bytes %zu budget %zu, model says %zu and %zu", op, size, got.cap_bytes, got.budget,
        want->cap_bytes, want->budget);
}

static uint32_t last_chain;    /* objects of the chain the last refill received */
static uint32_t last_returned; /* of them, given back to central at once */

/* Objects of class c outside central: in caches or in use. */
static size_t outside_central(unsigned c) {
  return hci_central[c].nspans * hci_classes[c].objs - hci_central_free_objects(c);
}

/* malloc(size) checked against the model.  Nothing else may use size's
 * class meanwhile: a refill's chain is predicted from central's state (the
 * top transfer slot's chain, else up to a batch from the spans, or up to the
 * capacity, at most a span, with an empty span kept, else from a new span
 * up to the list's capacity, at least a batch, at most the span). */
static void *t_malloc(size_t size) {
  hc_tcache_t *tc = hci_tc;
  unsigned c = hci_size_class(size);
  const hc_central_t *ce = &hci_central[c];
  uint32_t batch = hci_classes[c].batch;
  /* a class without capacity yet asks for what a 4 KiB page holds (at least one) */
  uint32_t want = batch, page = (uint32_t)(4096 / hci_classes[c].size);
  if (hc_tc_cap(&tc->fl, c) == 0) want = page == 0 ? 1 : page < batch ? page : batch;
  /* a new span gives up to the capacity, when that is more than want */
  uint32_t fresh = hc_tc_cap(&tc->fl, c) > want ? hc_tc_cap(&tc->fl, c) : want;
  uint32_t whole = fresh < hci_classes[c].objs ? fresh : hci_classes[c].objs, from_spans = ce->nempty && whole > want ? whole : want;
  uint32_t chain = ce->nchains                 ? hci_transfer_slots[c][ce->nchains - 1].n
                   : ce->free_objs              ? (ce->free_objs < from_spans ? (uint32_t)ce->free_objs : from_spans)
                   : hci_classes[c].objs < fresh ? hci_classes[c].objs
                                                 : fresh;
  size_t outside0 = outside_central(c);
  tc_state_t m;
  snap(tc, &m);
  void *p = malloc(size);
  CHECK(p != NULL, "malloc(%zu)", size);
  if (!tc->is_real) return p; /* the first one makes the cache: checked by the caller */
  if (m.len[c] > 0) {
    m.len[c]--;
  } else { /* refill: the chain becomes the list but for the object returned */
    ev.refills++;
    m.local_runs[c] = oneway_runs_model(c);
    m.len[c] = chain - 1;
    model_grow(&m, c, m.cap[c] < batch); /* a refill grows a class below a batch only */
    if (m.len[c] > m.cap[c]) model_fit(&m, c, m.len[c]); /* ...or to hold a long chain */
    uint32_t keep = m.cap[c] > batch ? m.cap[c] : batch;
    last_chain = chain;
    last_returned = 0;
    if (m.len[c] > keep) {
      ev.cuts++;
      last_returned = m.len[c] - keep;
      m.len[c] = keep;
    }
    /* what the list does not keep is back in central, nothing lost or doubled */
    CHECK(outside_central(c) == outside0 + 1 + hc_tc_len(&tc->fl.lists[c]),
          "malloc(%zu): refill: %zu objects of class %u outside central, want %zu + 1 + the list's %u", size,
          outside_central(c), c, outside0, hc_tc_len(&tc->fl.lists[c]));
  }
  compare(&m, tc, "malloc", size);
  check_caps(tc, "malloc", &(size_t){0});
  return p;
}

static void t_free(void *p) {
  hc_tcache_t *tc = hci_tc;
  unsigned c = hci_pagemap_class((uintptr_t)p);
  size_t size = hci_classes[c].size;
  tc_state_t m;
  snap(tc, &m);
  /* An object of a span another live cache owns goes back to it (remote.c). */
  hc_tcache_t *owner = (hc_tcache_t *)hci_pagemap_find((uintptr_t)p)->owner;
  bool remote = owner && owner != tc && !atomic_load(&owner->remote.dead);
  free(p);
  uint32_t len = m.len[c];
  if (remote) {
    /* the list is left alone */
  } else if (len < m.lim[c]) { /* fast path */
    m.len[c]++;
  } else {
    if (len >= m.cap[c]) {
      ev.overflows++;
      /* one-way (oneway_runs overflows since the last refill already):
       * no growth past oneway_cap, and a capacity above it cut back to
       * it */
      bool local = m.local_runs[c] > 0;
      if (local) m.local_runs[c]--;
      model_grow(&m, c, local || m.cap[c] < oneway_cap_model(c));
      if (!local && m.cap[c] > oneway_cap_model(c)) ev.oneway_cuts++, model_set_cap(&m, c, oneway_cap_model(c));
      len = m.len[c]; /* a shrinking budget may have halved c itself */
      if (len >= m.cap[c]) {
        ev.releases++;
        uint32_t keep = overflow_keep(m.cap[c]);
        m.len[c] = keep == 0 ? 0 : len <= keep ? len : keep;
      }
    }
    if (m.cap[c]) m.len[c]++;
  }
  compare(&m, tc, "free", size);
  check_caps(tc, "free", &(size_t){0});
}

#define NFOREIGN 1500
static void *foreign[NFOREIGN]; /* 64-byte objects from the main thread */

/* The budget shrinks under a class at its limit: 4 KiB objects fill their
 * 1 MiB limit (within the 4 MiB budget), then SHRINK_THREADS threads make
 * caches, so the budget falls to HC_TC_BUDGET_MIN.  The next refill of the
 * class refreshes the budget and, the class being at its limit, needs no
 * growth but is over the budget: every other class is halved down to 0
 * first (the model checks the order), then the class itself, to 512 KiB.
 * Every operation is checked against the model. */
#define SHRINK_THREADS 70
static pthread_barrier_t idle_barrier;
static atomic_int spawn_go;
static void *idle_thread(void *arg) {
  (void)arg;
  free(malloc(32)); /* a cache of its own */
  pthread_barrier_wait(&idle_barrier);
  pthread_barrier_wait(&idle_barrier);
  return NULL;
}

/* Starts the idle threads when told, so that what pthread_create allocates
 * goes through this thread's cache, not the one under test. */
static void *spawner_thread(void *arg) {
  (void)arg;
  pthread_t t[SHRINK_THREADS];
  while (!atomic_load(&spawn_go)) {
  }
  for (int i = 0; i < SHRINK_THREADS; i++) pthread_create(&t[i], NULL, idle_thread, NULL);
  for (int i = 0; i < SHRINK_THREADS; i++) pthread_join(t[i], NULL);
  return NULL;
}

/* Puts a chain of k objects of class c (taken from central itself, not
 * through a cache) on top of c's transfer slots, for a refill to take. */
static void push_chain(unsigned c, uint32_t k) {
  static void *objs[64];
  uint32_t n = 0;
  while (n < k) {
    hc_chain_t ch;
    if (!hci_central_remove(c, 1, &ch, NULL)) break;
    for (void *p = ch.head; p && n < 64; p = hc_fl_next(p, 0)) objs[n++] = p;
  }
  CHECK(n >= k, "class %u: only %u objects from central", c, n);
  if (n == 0) return;
  for (uint32_t i = 0; i < n; i++) hc_fl_link(objs[i], i + 1 < n ? objs[i + 1] : NULL);
  hc_chain_t ch = {objs[0], objs[n - 1], n};
  uint32_t nchains = hci_central[c].nchains;
  hci_central_insert(c, &ch);
  CHECK(hci_central[c].nchains == nchains + 1 && hci_transfer_slots[c][nchains].n == n,
        "class %u: a chain of %u not kept in a transfer slot", c, n);
}

/* A capacity below a batch, under the least budget: 256 KiB objects
 * (batch 2) get capacity 2, a small class takes one of it (halving to 1);
 * then a refill of a chain of 4 cannot grow (the other class gives up all
 * it has, 256 KiB + a batch is still over the budget) nor needs to halve,
 * so the class stays at capacity 1 and keeps a batch (2) of the chain: the
 * cache holds its budget plus less than one batch. */
static void below_batch(void) {
  hc_tcache_t *tc = hci_tc;
  unsigned big = hci_size_class(262144), small = hci_size_class(64);
  uint32_t batch = hci_classes[big].batch;
  CHECK(batch == 2 && budget_model() == HC_TC_BUDGET_MIN && 3 * hci_classes[big].size > HC_TC_BUDGET_MIN,
        "class %u: batch %u, budget %zu: not what this test needs", big, batch, budget_model());
  hci_central_drain(); /* room in the transfer slots */
  push_chain(big, 4);
  int cuts1 = ev.cuts, fits1 = ev.fits;
  /* capacity 2 (everything else given up), keeps 2 of 4: no room to grow
   * to 3 for the chain (fit_chain), so the chain is cut */
  void *b1 = t_malloc(262144);
  CHECK(hc_tc_cap(&tc->fl, big) == batch && tc->fl.cap_bytes == (size_t)batch * 262144 && hc_tc_len(&tc->fl.lists[big]) == 2 &&
            ev.cuts == cuts1 + 1 && ev.fits == fits1,
        "256 KiB: capacity %u, list %u, cap_bytes %zu after the first refill (%d cuts, %d fits)", hc_tc_cap(&tc->fl, big),
        hc_tc_len(&tc->fl.lists[big]), tc->fl.cap_bytes, ev.cuts - cuts1, ev.fits - fits1);
  void *s1 = t_malloc(64); /* takes half of 256 KiB's capacity; its list goes back */
  CHECK(hc_tc_cap(&tc->fl, big) == 1 && hc_tc_len(&tc->fl.lists[big]) == 0 && hc_tc_cap(&tc->fl, small) > 0,
        "256 KiB: capacity %u, list %u; 64 B capacity %u: want 1, 0 and > 0", hc_tc_cap(&tc->fl, big), hc_tc_len(&tc->fl.lists[big]),
        hc_tc_cap(&tc->fl, small));
  push_chain(big, 4);
  int cuts0 = ev.cuts;
  void *b2 = t_malloc(262144); /* cannot grow: capacity 1, keeps a batch of the chain */
  size_t excess = 0;
  check_caps(tc, "after a refill below a batch", &excess);
  CHECK(ev.cuts == cuts0 + 1 && hc_tc_cap(&tc->fl, big) == 1 && hc_tc_len(&tc->fl.lists[big]) == batch && hc_tc_cap(&tc->fl, small) == 0 &&
            excess == (size_t)(batch - 1) * 262144,
        "256 KiB: capacity %u, list %u (excess %zu bytes), 64 B capacity %u: want 1, %u (one object beyond), 0",
        hc_tc_cap(&tc->fl, big), hc_tc_len(&tc->fl.lists[big]), excess, hc_tc_cap(&tc->fl, small), batch);
  CHECK(cache_bytes(tc) <= tc->fl.budget + (size_t)batch * 262144, "cache holds %zu bytes, budget %zu + a batch %zu",
        cache_bytes(tc), tc->fl.budget, (size_t)batch * 262144);
  printf("below a batch: 256 KiB capacity %u, list %u, cache holds %zu KB, budget %zu KB\n", hc_tc_cap(&tc->fl, big),
         hc_tc_len(&tc->fl.lists[big]), cache_bytes(tc) >> 10, tc->fl.budget >> 10);
  t_free(b2);
  t_free(s1);
  t_free(b1);
  check_caps(tc, "after freeing below a batch", NULL);
}

/* Grows the class of `size` by slow start to `target` (or until a round
 * does not grow it: its limit, or the budget): rounds of mallocs until the
 * list ran dry once (a refill) and capacity + a batch objects are held,
 * then frees until the list overflows once, which grows it by a batch (the
 * thread refilled it since the last overflow; two overflows in a row
 * would make it one-way, or HC_TC_ONEWAY_RUNS + 1 for big classes).  The objects still held stay in held[] (*n of them),
 * for the caller to free when a cut no longer matters.  With `model`, every
 * step through t_malloc/t_free. */
static void grow_to(void **held, size_t *n, size_t max, size_t size, uint32_t target, bool model) {
  unsigned c = hci_size_class(size);
  uint32_t batch = hci_classes[c].batch;
  const size_t base = *n; /* held[] below it: other calls' */
  for (;;) {
    hc_tcache_t *tc = hci_tc;
    uint32_t cap0 = tc->is_real ? hc_tc_cap(&tc->fl, c) : 0;
    bool refilled = false;
    while (*n - base < cap0 + batch || !refilled) {
      if (*n == max) {
        CHECK(0, "grow_to(%zu): %zu objects held, no room for more", size, *n);
        return;
      }
      refilled |= !hci_tc->is_real || hc_tc_len(&hci_tc->fl.lists[c]) == 0;
      held[(*n)++] = model ? t_malloc(size) : malloc(size);
    }
    tc = hci_tc;
    bool over = false;
    while (*n > base && !over) {
      over = hc_tc_len(&tc->fl.lists[c]) >= hc_tc_cap(&tc->fl, c);
      if (model) t_free(held[--*n]);
      else free(held[--*n]);
    }
    if (hc_tc_cap(&tc->fl, c) <= cap0 || hc_tc_cap(&tc->fl, c) >= target) return;
  }
}

#define GROWN_MAX 16384
static void *grown[GROWN_MAX];
static size_t ngrown;
static void grow_to_limit(size_t size) { grow_to(grown, &ngrown, GROWN_MAX, size, UINT32_MAX, true); }
static void free_grown(void) {
  while (ngrown) t_free(grown[--ngrown]);
}

static void shrink_phase(void **v) {
  hc_tcache_t *tc = hci_tc;
  const size_t size = 4096;
  unsigned c = hci_size_class(size);
  pthread_t spawner;
  pthread_barrier_init(&idle_barrier, NULL, SHRINK_THREADS + 1);
  pthread_create(&spawner, NULL, spawner_thread, NULL);
  grow_to_limit(size);
  CHECK(hc_tc_cap(&tc->fl, c) == cap_limit_model(c), "4 KiB: capacity %u, want its limit %u", hc_tc_cap(&tc->fl, c), cap_limit_model(c));
  size_t classes = 0;
  for (unsigned k = 1; k < HC_NUM_CLASSES; k++) classes += k != c && hc_tc_cap(&tc->fl, k);
  atomic_store(&spawn_go, 1);
  pthread_barrier_wait(&idle_barrier); /* their caches exist: the budget is down */
  CHECK(budget_model() == HC_TC_BUDGET_MIN, "budget %zu with %zu caches, want the minimum", budget_model(),
        hci_tc_count());
  size_t cap0 = tc->fl.cap_bytes;
  int self0 = ev.self_shrinks;
  uint32_t len = hc_tc_len(&tc->fl.lists[c]);
  for (uint32_t i = 0; i <= len; i++) v[i] = t_malloc(size); /* empty the list, then one refill */
  printf("budget shrink: capacity %zu KB in %zu classes + 4 KiB at its limit, budget %zu KB: capacity %zu KB, "
         "4 KiB halved %d times to %u\n",
         cap0 >> 10, classes, tc->fl.budget >> 10, tc->fl.cap_bytes >> 10, ev.self_shrinks - self0, hc_tc_cap(&tc->fl, c));
  CHECK(ev.self_shrinks > self0 && tc->fl.cap_bytes <= tc->fl.budget && tc->fl.budget == HC_TC_BUDGET_MIN,
        "the growing class was not halved under the shrunk budget: capacity %zu, budget %zu", tc->fl.cap_bytes,
        tc->fl.budget);
  for (unsigned k = 1; k < HC_NUM_CLASSES; k++)
    if (k != c) CHECK(hc_tc_cap(&tc->fl, k) == 0, "class %u kept capacity %u while 4 KiB was halved", k, hc_tc_cap(&tc->fl, k));
  for (uint32_t i = 0; i <= len; i++) t_free(v[i]);
  free_grown();
  check_caps(tc, "after the budget shrank", NULL);
  below_batch();
  pthread_barrier_wait(&idle_barrier);
  pthread_join(spawner, NULL);
  pthread_barrier_destroy(&idle_barrier);
}

/* n objects of `size` allocated, then freed: the overflows of the frees
 * come with no refill between them; from the second on (the fourth for a
 * class whose one-way capacity is a batch: oneway_runs) the class is
 * one-way, its capacity cut back to HC_TC_ONEWAY_BYTES of objects, once
 * (the earlier overflows are a random walk's as well: not cut). */
static void freed_in_a_row(void **v, size_t size, int n) {
  unsigned c = hci_size_class(size);
  int ow0 = ev.oneway_cuts, runs_max = oneway_runs_model(c);
  for (int i = 0; i < n; i++) v[i] = t_malloc(size);
  hc_tcache_t *tc = hci_tc;
  int of0 = ev.overflows;
  for (int i = 0; i < n; i++) {
    t_free(v[i]);
    int runs = ev.overflows - of0;
    CHECK(ev.oneway_cuts == ow0 + (runs > runs_max), "%zu B freed in a row: %d overflows, %d one-way cuts (at %d)",
          size, runs, ev.oneway_cuts - ow0, runs_max + 1);
  }
  printf("%zu B freed in a row: %d overflows, one-way at overflow %d\n", size, ev.overflows - of0, runs_max + 1);
  CHECK(ev.overflows - of0 > runs_max + 1, "%zu B freed in a row: %d overflows only", size, ev.overflows - of0);
  CHECK(ev.oneway_cuts == ow0 + 1 && hc_tc_cap(&tc->fl, c) == oneway_cap_model(c) &&
            hc_tc_len(&tc->fl.lists[c]) <= oneway_cap_model(c),
        "%zu B freed in a row: %d one-way cuts, capacity %u, list %u, want 1 and %u", size, ev.oneway_cuts - ow0,
        hc_tc_cap(&tc->fl, c), hc_tc_len(&tc->fl.lists[c]), oneway_cap_model(c));
}

static void *policy_thread(void *arg) {
  (void)arg;
  static void *v[4096];
  CHECK(!hci_tc->is_real, "a new thread has a cache before its first malloc");
  /* slow start: the first malloc makes the cache and gives class c one batch of capacity */
  unsigned c64 = hci_size_class(64);
  v[0] = t_malloc(64);
  hc_tcache_t *tc = hci_tc;
  CHECK(tc->is_real, "no cache after malloc");
  CHECK(hc_tc_cap(&tc->fl, c64) == hci_classes[c64].batch, "capacity %u after the first refill, want a batch (%u)",
        hc_tc_cap(&tc->fl, c64), hci_classes[c64].batch);
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++)
    if (c != c64) CHECK(hc_tc_cap(&tc->fl, c) == 0, "class %u has capacity %u before any use", c, hc_tc_cap(&tc->fl, c));
  CHECK(tc->fl.budget == budget_model(), "budget %zu with %zu caches, want %zu", tc->fl.budget, hci_tc_count(),
        budget_model());
  /* more refills add nothing: an empty list is not helped by capacity */
  for (int i = 1; i < 1000; i++) v[i] = t_malloc(64);
  CHECK(ev.refills > 1 && hc_tc_cap(&tc->fl, c64) == hci_classes[c64].batch,
        "capacity %u after %d + 1 refills, want one batch", hc_tc_cap(&tc->fl, c64), ev.refills);
  for (int i = 0; i < 1000; i++) t_free(v[i]);
  /* objects a thread that has exited allocated (its spans' owner is dead,
   * or this cache adopted it: either way they stay here, remote.c), then
   * rounds of allocations freed together: the list overflows, each
   * time the capacity grows by a batch, up to the class limit, and the list
   * goes back to central but for its newest objects */
  for (int i = 0; i < NFOREIGN; i++) t_free(foreign[i]);
  grow_to_limit(64);
  printf("slow start: 64 B: %d refills, %d overflows (%d gave back the list), capacity %u\n", ev.refills,
         ev.overflows, ev.releases, hc_tc_cap(&tc->fl, c64));
  CHECK(ev.overflows > 1 && ev.releases > 0 && hc_tc_cap(&tc->fl, c64) == cap_limit_model(c64),
        "%d overflows, %d lists given back, capacity %u (limit %u)", ev.overflows, ev.releases, hc_tc_cap(&tc->fl, c64),
        cap_limit_model(c64));
  check_caps(tc, "after slow start", NULL);
  free_grown();
  freed_in_a_row(v, 64, 4096);    /* one-way at the second overflow */
  grow_to_limit(4096);
  free_grown();
  freed_in_a_row(v, 4096, 2048);  /* at the fourth: 32 KiB is a batch of 4 KiB objects */
  grow_to_limit(64); /* and it grows again while it is refilled between overflows */
  CHECK(hc_tc_cap(&tc->fl, c64) >= cap_limit_model(c64), "64 B: capacity %u after slow start again, want %u", hc_tc_cap(&tc->fl, c64),
        cap_limit_model(c64));

  /* the budget: eight classes of up to 1 MiB each do not fit in 4 MiB */
  static const size_t sizes[] = {8192, 16384, 32768, 65536, 131072, 262144, 4096, 2048, 8192, 16384};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    grow_to_limit(sizes[k]);
    check_caps(tc, "after a class", NULL);
    CHECK(cache_bytes(tc) <= tc->fl.cap_bytes, "cache holds %zu bytes, capacity %zu", cache_bytes(tc), tc->fl.cap_bytes);
  }
  printf("budget %zu KB: %d steals (%d gave back a list), %d growths at a limit\n", tc->fl.budget >> 10, ev.steals,
         ev.steal_releases, ev.at_limit);
  CHECK(ev.steals > 0 && ev.steal_releases > 0 && ev.at_limit > 0, "the budget never made a class give way");
  CHECK(tc->fl.cap_bytes > tc->fl.budget / 2, "capacity %zu far below the budget %zu", tc->fl.cap_bytes, tc->fl.budget);
  shrink_phase(v);
  return NULL;
}

/* A long chain from another thread: a refill takes the whole chain another
 * thread gave back (its list at exit).  With room in the budget the
 * capacity grows to hold it and nothing goes back (a thread that only
 * allocates the class then takes one chain per central lock, not a batch:
 * docs/performance.md, "Long chains kept"); the chain's slot is free again.
 * Without room it is cut to max(cap, batch) and the rest goes back where
 * it came from: below_batch().  Either way the cache stays within its
 * budget (the model checks every step). */
static size_t giver_left; /* objects the giver did not free (its list was full) */
static void **giver_held;
static void *giver_thread(void *arg) {
  size_t size = (size_t)(uintptr_t)arg;
  static void *v[2048];
  size_t n = 0;
  grow_to(v, &n, sizeof v / sizeof v[0], size, 600, false); /* capacity 600: allocates as well as frees */
  hc_tcache_t *tc = hci_tc;
  unsigned c = hci_size_class(size);
  while (n && hc_tc_len(&tc->fl.lists[c]) + 1 < hc_tc_cap(&tc->fl, c)) free(v[--n]);
  giver_left = n;
  giver_held = v;
  return NULL; /* exit: its list goes to central as one chain */
}

static void *receiver_thread(void *arg) {
  (void)arg;
  const size_t size = 1024;
  unsigned c = hci_size_class(size);
  static void *left[4096]; /* what the givers left allocated */
  size_t nleft = 0;
  free(t_malloc(16)); /* make the cache */
  hc_tcache_t *tc = hci_tc;
  pthread_t g;
  pthread_create(&g, NULL, giver_thread, (void *)(uintptr_t)size);
  pthread_join(g, NULL);
  for (size_t i = 0; i < giver_left; i++) left[nleft++] = giver_held[i];
  hc_central_t *ce = &hci_central[c];
  uint32_t nchains = ce->nchains, top = nchains ? hci_transfer_slots[c][nchains - 1].n : 0;
  uint32_t batch = hci_classes[c].batch;
  CHECK(top > batch + 1, "no long chain in central after another thread freed 600 (%u)", top);
  CHECK(hc_tc_cap(&tc->fl, c) == 0, "class %u used before", c);
  CHECK(tc->fl.cap_bytes + (size_t)top * size <= tc->fl.budget - tc->fl.budget / 8,
        "capacity %zu, budget %zu: no room for a chain of %u, not what this test needs", tc->fl.cap_bytes,
        tc->fl.budget, top);
  int cuts0 = ev.cuts, fits0 = ev.fits;
  void *p = t_malloc(size); /* checked against the model: the capacity grows to hold the chain */
  check_caps(tc, "after receiving a chain", NULL);
  CHECK(last_chain == top && ev.fits == fits0 + 1 && ev.cuts == cuts0 && hc_tc_cap(&tc->fl, c) == top - 1 &&
            hc_tc_len(&tc->fl.lists[c]) == top - 1 && last_returned == 0,
        "refill took a chain of %u (the top one has %u): list of %u objects, capacity %u, %u given back; want the "
        "chain kept whole (%u), nothing given back",
        last_chain, top, hc_tc_len(&tc->fl.lists[c]), hc_tc_cap(&tc->fl, c), last_returned, top - 1);
  CHECK(ce->nchains == nchains - 1, "central: %u chains, %u before: the chain was not taken whole", ce->nchains,
        nchains);
  CHECK(cache_bytes(tc) <= tc->fl.cap_bytes && tc->fl.cap_bytes <= tc->fl.budget,
        "cache holds %zu bytes, capacity %zu, budget %zu after receiving a chain of %u", cache_bytes(tc),
        tc->fl.cap_bytes, tc->fl.budget, top);
  printf("received a chain of %u objects of %zu bytes: kept %u (capacity %u), gave %u back; cache holds %zu KB, "
         "budget %zu KB\n",
         top, size, hc_tc_len(&tc->fl.lists[c]), hc_tc_cap(&tc->fl, c), last_returned, cache_bytes(tc) >> 10, tc->fl.budget >> 10);
  t_free(p);
  check_caps(tc, "after the next free", NULL);
  /* Again, the capacity already holding such a chain: kept whole. */
  static void *w[4096];
  uint32_t len = hc_tc_len(&tc->fl.lists[c]);
  for (uint32_t i = 0; i < len; i++) w[i] = t_malloc(size);
  pthread_create(&g, NULL, giver_thread, (void *)(uintptr_t)size);
  pthread_join(g, NULL);
  for (size_t i = 0; i < giver_left; i++) left[nleft++] = giver_held[i];
  nchains = ce->nchains;
  top = nchains ? hci_transfer_slots[c][nchains - 1].n : 0;
  uint32_t cap = hc_tc_cap(&tc->fl, c);
  w[len] = t_malloc(size);
  CHECK(last_chain == top && top - 1 <= cap && hc_tc_cap(&tc->fl, c) == cap && hc_tc_len(&tc->fl.lists[c]) == top - 1 &&
            last_returned == 0,
        "second chain of %u (top %u): list of %u objects, capacity %u (%u before), %u given back; want it whole",
        last_chain, top, hc_tc_len(&tc->fl.lists[c]), hc_tc_cap(&tc->fl, c), cap, last_returned);
  printf("received a chain of %u with capacity %u: kept %u, gave %u back\n", top, hc_tc_cap(&tc->fl, c), hc_tc_len(&tc->fl.lists[c]),
         last_returned);
  for (uint32_t i = 0; i <= len; i++) t_free(w[i]);
  check_caps(tc, "after freeing the second chain", NULL);
  while (nleft) free(left[--nleft]);
  return NULL;
}

static void *foreign_thread(void *arg) {
  (void)arg;
  hci_tc_get();
  hci_sampler_reset(hci_tc);
  for (int i = 0; i < NFOREIGN; i++) foreign[i] = malloc(64);
  return NULL;
}

static void test_policy(void) {
  /* No sampled (page-granular) objects: new caches draw "never", and so
   * does the main thread's (for the objects it hands to policy_thread). */
  uint64_t interval = atomic_exchange(&hci_sample_interval, 0);
  pthread_t t;
  pthread_create(&t, NULL, foreign_thread, NULL);
  pthread_join(t, NULL);
  pthread_create(&t, NULL, policy_thread, NULL);
  pthread_join(t, NULL);
  pthread_create(&t, NULL, receiver_thread, NULL);
  pthread_join(t, NULL);
  atomic_store(&hci_sample_interval, interval);
}

// ---- scenarios (each its own test: "chain-bound", "budget-shrink") ----

/* "chain-bound": a thread that allocates one object of each of 11 classes
 * after another thread freed many of them (a slot total's worth, so every chain
 * stays whole in the transfer slots) receives 11 long chains, one per
 * refill.  Each list keeps max(cap, batch) objects and central gets the
 * rest back (t_malloc checks both against the model), so the cache holds
 * at most its budget plus one batch.  (Refills used to keep each chain
 * whole: 11 chains of up to 2 MiB, far beyond the budget, until the thread
 * freed in each class.) */
static const size_t chain_sizes[] = {1024, 2048, 4096, 8192, 3072, 1536, 6144, 12288, 16384, 24576, 32768};
#define N_CHAIN_SIZES (sizeof chain_sizes / sizeof chain_sizes[0])

static void *chain_giver(void *arg) {
  (void)arg;
  static void *v[8192];
  size_t held = 0;
  for (size_t k = 0; k < N_CHAIN_SIZES; k++) {
    size_t n = (HC_SLOT_BYTES_TOTAL_MAX / N_CHAIN_SIZES) / chain_sizes[k]; /* every chain fits the slots */
    /* capacity n, grown with refills between overflows (a class freed
     * twice in a row without one is one-way and keeps 32 KiB), then the
     * list filled short of an overflow: at exit it goes to central whole */
    size_t base = held;
    grow_to(v, &held, sizeof v / sizeof v[0], chain_sizes[k], (uint32_t)n, false);
    hc_tcache_t *tc = hci_tc;
    unsigned c = hci_size_class(chain_sizes[k]);
    while (held > base && hc_tc_len(&tc->fl.lists[c]) + 1 < hc_tc_cap(&tc->fl, c)) free(v[--held]);
  }
  return NULL; /* what it still holds stays allocated: this process ends after the check */
}

static void *chain_taker(void *arg) {
  (void)arg;
  void *p[N_CHAIN_SIZES];
  size_t max_chain = 0, max_batch = 0, returned = 0;
  free(malloc(16)); /* make the cache (16 B is none of the classes below) */
  hc_tcache_t *tc = hci_tc;
  for (size_t k = 0; k < N_CHAIN_SIZES; k++) {
    unsigned c = hci_size_class(chain_sizes[k]);
    CHECK(hc_tc_len(&tc->fl.lists[c]) == 0, "class %u (%zu B) not empty before its refill", c, chain_sizes[k]);
    p[k] = t_malloc(chain_sizes[k]); /* a refill: the model checks the cut */
    size_t chain = (size_t)last_chain * chain_sizes[k], bb = (size_t)hci_classes[c].batch * chain_sizes[k];
    if (chain > max_chain) max_chain = chain;
    if (bb > max_batch) max_batch = bb;
    returned += (size_t)last_returned * chain_sizes[k];
  }
  size_t excess = 0;
  check_caps(tc, "after the refills", &excess);
  printf("chain-bound: after one malloc in each of %zu classes the cache holds %zu KB (%zu KB beyond the "
         "capacities): budget %zu KB, largest chain received %zu KB, %zu KB given back, capacity %zu KB\n",
         N_CHAIN_SIZES, cache_bytes(tc) >> 10, excess >> 10, tc->fl.budget >> 10, max_chain >> 10, returned >> 10,
         tc->fl.cap_bytes >> 10);
  CHECK(cache_bytes(tc) + returned > tc->fl.budget,
        "the chains received (%zu bytes kept, %zu given back) would not have passed the budget %zu", cache_bytes(tc),
        returned, tc->fl.budget);
  CHECK(excess <= max_batch && cache_bytes(tc) <= tc->fl.budget + max_batch,
        "cache holds %zu bytes (%zu beyond the capacities) > budget %zu + one batch %zu", cache_bytes(tc), excess,
        tc->fl.budget, max_batch);
  for (size_t k = 0; k < N_CHAIN_SIZES; k++) free(p[k]);
  return NULL;
}

/* "budget-shrink": a thread grows one class's capacity to ~1 MiB (below
 * its limit; a refill does not grow it, being above a batch) while few
 * caches live (budget 2 MiB); then 70 more threads
 * make caches (budget 512 KiB).  Its next refill refreshes the budget and,
 * no other class having capacity to give, halves the class itself (its
 * list cut) until cap_bytes is within the budget; t_malloc checks every
 * step against the model.  (Stealing used to take only from other classes, so cap_bytes
 * stayed above the budget and the list could fill up to it.) */
static pthread_barrier_t shrink_barrier;
static atomic_int shrink_grown;
static void *shrink_idle(void *arg) {
  (void)arg;
  free(malloc(32));
  pthread_barrier_wait(&shrink_barrier);
  pthread_barrier_wait(&shrink_barrier);
  return NULL;
}

static void *shrink_worker(void *arg) {
  (void)arg;
  static void *v[512];
  unsigned c = hci_size_class(4096);
  hc_tcache_t *tc = hci_tc;
  /* capacity grows at overflows: rounds of frees beyond it, up to ~1 MiB */
  for (int round = 0; round < 32 && (!tc->is_real || tc->fl.cap_bytes < ((size_t)3 << 18)); round++) {
    for (int i = 0; i < 240; i++) v[i] = malloc(4096);
    for (int i = 0; i < 240; i++) free(v[i]);
    tc = hci_tc;
  }
  size_t cap0 = tc->fl.cap_bytes, budget0 = tc->fl.budget;
  CHECK(hc_tc_cap(&tc->fl, c) < cap_limit_model(c) && cap0 > HC_TC_BUDGET_MIN,
        "4 KiB: capacity %u (limit %u), cap_bytes %zu: want below the limit, above the least budget", hc_tc_cap(&tc->fl, c),
        cap_limit_model(c), cap0);
  atomic_store(&shrink_grown, 1);        /* main starts the other threads now */
  pthread_barrier_wait(&shrink_barrier); /* the other caches exist now */
  int n = (int)hc_tc_len(&tc->fl.lists[c]) + 1;     /* empty the list, then one refill */
  int self0 = ev.self_shrinks;
  for (int i = 0; i < n; i++) v[i] = t_malloc(4096);
  printf("budget-shrink: capacity %zu KB with budget %zu KB; with %zu caches: capacity %zu KB, budget %zu KB "
         "(policy: %zu KB), 4 KiB halved %d times\n",
         cap0 >> 10, budget0 >> 10, hci_tc_count(), tc->fl.cap_bytes >> 10, tc->fl.budget >> 10, budget_model() >> 10,
         ev.self_shrinks - self0);
  CHECK(tc->fl.budget == budget_model() && budget_model() < cap0, "budget %zu, want %zu (below the capacity %zu)",
        tc->fl.budget, budget_model(), cap0);
  CHECK(tc->fl.cap_bytes <= tc->fl.budget, "cap_bytes %zu over the budget %zu after the budget shrank", tc->fl.cap_bytes,
        tc->fl.budget);
  CHECK(ev.self_shrinks > self0, "the class over the budget was not halved");
  for (int i = 0; i < n; i++) t_free(v[i]);
  check_caps(tc, "after freeing under the shrunk budget", NULL);
  pthread_barrier_wait(&shrink_barrier);
  return NULL;
}

static int scenario(const char *which) {
  atomic_store(&hci_sample_interval, 0);
  if (strcmp(which, "chain-bound") == 0) {
    pthread_t t;
    pthread_create(&t, NULL, chain_giver, NULL);
    pthread_join(t, NULL);
    hci_tc_set_budget_total(HC_SLOT_BYTES_TOTAL_MAX / 2); /* the chains (a slot total) exceed the taker's budget */
    pthread_create(&t, NULL, chain_taker, NULL);
    pthread_join(t, NULL);
  } else if (strcmp(which, "budget-shrink") == 0) {
    enum { N = 70 };
    pthread_t t[N + 1];
    pthread_barrier_init(&shrink_barrier, NULL, N + 1);
    pthread_create(&t[N], NULL, shrink_worker, NULL);
    while (!atomic_load(&shrink_grown)) {
    }
    for (int i = 0; i < N; i++) pthread_create(&t[i], NULL, shrink_idle, NULL);
    for (int i = 0; i <= N; i++) pthread_join(t[i], NULL);
  } else {
    fprintf(stderr, "unknown scenario %s\n", which);
    return 2;
  }
  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  printf("bound kept\n");
  return 0;
}

/* One-way: a thread that frees objects another thread allocated, and
 * allocates none of their class, keeps at most oneway_cap of them (the
 * consumer of prodcons held up to 2 MiB): every free checked against the
 * model, and the list's length against the bound. */
#define ONEWAY_N 8192
static void *oneway_objs[ONEWAY_N];
static void *oneway_consumer(void *arg) {
  (void)arg;
  free(malloc(16)); /* a cache of its own (class 16 only) */
  hc_tcache_t *tc = hci_tc;
  unsigned c = hci_size_class(128);
  uint32_t most = 0;
  int ow0 = ev.oneway_cuts, of0 = ev.overflows;
  for (int i = 0; i < ONEWAY_N; i++) {
    t_free(oneway_objs[i]);
    if (hc_tc_len(&tc->fl.lists[c]) > most) most = hc_tc_len(&tc->fl.lists[c]);
  }
  printf("one-way: %d frees of 128 B, %d overflows, most held %u (bound %u), capacity %u\n", ONEWAY_N,
         ev.overflows - of0, most, oneway_cap_model(c), hc_tc_cap(&tc->fl, c));
  CHECK(most <= oneway_cap_model(c) && hc_tc_cap(&tc->fl, c) <= oneway_cap_model(c) && ev.overflows - of0 > 2,
        "a consumer's 128 B list held up to %u objects, capacity %u: the bound is %u", most, hc_tc_cap(&tc->fl, c),
        oneway_cap_model(c));
  CHECK(ev.oneway_cuts == ow0, "%d one-way cuts of a class that never grew past the bound", ev.oneway_cuts - ow0);
  return NULL;
}

static void test_oneway(void) {
  for (int i = 0; i < ONEWAY_N; i++) oneway_objs[i] = malloc(128);
  pthread_t t;
  pthread_create(&t, NULL, oneway_consumer, NULL);
  pthread_join(t, NULL);
}

/* The budget follows the heap: while the bytes in use are more than
 * HC_TC_HEAP_SHARE times HC_TC_BUDGET_MAX, a cache may hold a
 * 1/HC_TC_HEAP_SHARE share of them (up to HC_TC_BUDGET_HEAP_MAX); when the
 * heap shrinks again, the next growth of a class gives the capacity back.
 * Large blocks the main thread holds (never touched: no RSS) make the heap
 * big; the thread grows five big classes to their limits, 5 MiB of
 * capacity, more than HC_TC_BUDGET_MAX.  No sampling: grow_to counts the
 * objects that go through the lists. */
#define HEAP_BIG_BLOCKS 192 /* of 1 MiB: the share is 12 MiB */
static void *heap_big[HEAP_BIG_BLOCKS];
static pthread_barrier_t heap_barrier;
static const size_t heap_sizes[] = {4096, 8192, 16384, 32768, 65536};

static void *heap_budget_thread(void *arg) {
  (void)arg;
  static void *held[4096];
  size_t n = 0;
  free(malloc(3000));
  hc_tcache_t *tc = hci_tc;
  CHECK(tc->fl.budget == HC_TC_BUDGET_MAX && tc->fl.budget == budget_model(),
        "small heap: budget %zu, want HC_TC_BUDGET_MAX %zu (model %zu)", tc->fl.budget, HC_TC_BUDGET_MAX,
        budget_model());
  pthread_barrier_wait(&heap_barrier); /* the main thread makes the heap big */
  pthread_barrier_wait(&heap_barrier);
  for (size_t k = 0; k < sizeof heap_sizes / sizeof heap_sizes[0]; k++)
    grow_to(held, &n, sizeof held / sizeof held[0], heap_sizes[k], UINT32_MAX, false);
  size_t share = hci_pageheap.inuse_bytes / HC_TC_HEAP_SHARE;
  printf("big heap: %zu MB in use, budget %zu KB, capacity %zu KB\n", hci_pageheap.inuse_bytes >> 20,
         tc->fl.budget >> 10, tc->fl.cap_bytes >> 10);
  CHECK(share > 2 * HC_TC_BUDGET_MAX && tc->fl.budget > 2 * HC_TC_BUDGET_MAX,
        "big heap: budget %zu, share of the heap %zu", tc->fl.budget, share);
  CHECK(tc->fl.cap_bytes > HC_TC_BUDGET_MAX, "big heap: capacity %zu, not above HC_TC_BUDGET_MAX", tc->fl.cap_bytes);
  check_caps(tc, "big heap", NULL);
  while (n) free(held[--n]);
  pthread_barrier_wait(&heap_barrier); /* the main thread frees the heap */
  pthread_barrier_wait(&heap_barrier);
  free(malloc(100000)); /* a new class: its refill refreshes the budget */
  CHECK(tc->fl.budget == HC_TC_BUDGET_MAX, "heap freed: budget %zu, want %zu", tc->fl.budget, HC_TC_BUDGET_MAX);
  check_caps(tc, "heap freed", NULL);
  return NULL;
}

static void test_heap_budget(void) {
  uint64_t interval = atomic_exchange(&hci_sample_interval, 0); /* as test_policy */
  pthread_t t;
  pthread_barrier_init(&heap_barrier, NULL, 2);
  pthread_create(&t, NULL, heap_budget_thread, NULL);
  pthread_barrier_wait(&heap_barrier);
  for (int i = 0; i < HEAP_BIG_BLOCKS; i++) CHECK((heap_big[i] = malloc(1 << 20)) != NULL, "malloc(1 MiB)");
  pthread_barrier_wait(&heap_barrier);
  pthread_barrier_wait(&heap_barrier);
  for (int i = 0; i < HEAP_BIG_BLOCKS; i++) free(heap_big[i]);
  pthread_barrier_wait(&heap_barrier);
  pthread_join(t, NULL);
  pthread_barrier_destroy(&heap_barrier);
  atomic_store(&hci_sample_interval, interval);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  setvbuf(stderr, NULL, _IONBF, 0);
  printf("thread caches\n");
  /* Every thread on one CPU: a refill takes the newest transfer slot given
   * back on its own CPU (central.c, pick_slot), the oldest when none was,
   * and the model predicts the newest.  A thread moved to the other CPU
   * between its giver's frees and its refill (a loaded machine: 3 runs in
   * 30, and once in CI) took another chain than the model's. */
  int cpu = sched_getcpu();
  if (cpu >= 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    (void)sched_setaffinity(0, sizeof one, &one);
  }
  if (argc > 1) return scenario(argv[1]);
  test_policy();
  test_oneway();
  test_heap_budget();
  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  printf("thread cache OK\n");
  return 0;
}

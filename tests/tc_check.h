/* tc_check.h - what the thread-cache tests (test_thread_cache*.c,
 * test_tc_registry.c) check a cache against: its bytes held, its capacities
 * adding up to cap_bytes within the budget, and the budget the policy gives
 * with the caches alive (the policy is in test_thread_cache.c's header). */
#ifndef TC_CHECK_H
#define TC_CHECK_H

#include "hc_check.h"
#include "hc_internal.h"

static __attribute__((unused)) size_t cache_bytes(const hc_tcache_t *tc) {
  size_t b = 0;
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) b += (size_t)hc_tc_len(&tc->fl.lists[c]) * hci_classes[c].size;
  return b;
}

/* cap_bytes is the sum it stands for, within the budget; lists beyond
 * their capacity are counted into *excess (bytes). */
static __attribute__((unused)) void check_caps(const hc_tcache_t *tc, const char *when, size_t *excess) {
  size_t sum = 0, ex = 0;
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) {
    sum += (size_t)hc_tc_cap(&tc->fl, c) * hci_classes[c].size;
    if (hc_tc_len(&tc->fl.lists[c]) > hc_tc_cap(&tc->fl, c)) ex += (size_t)(hc_tc_len(&tc->fl.lists[c]) - hc_tc_cap(&tc->fl, c)) * hci_classes[c].size;
  }
  CHECK(tc->fl.cap_bytes == sum, "%s: cap_bytes %zu, capacities add up to %zu", when, tc->fl.cap_bytes, sum);
  CHECK(tc->fl.cap_bytes <= tc->fl.budget, "%s: cap_bytes %zu over the budget %zu", when, tc->fl.cap_bytes, tc->fl.budget);
  CHECK(tc->fl.budget >= HC_TC_BUDGET_MIN && tc->fl.budget <= HC_TC_BUDGET_HEAP_MAX, "%s: budget %zu", when, tc->fl.budget);
  if (excess) *excess = ex;
  else CHECK(ex == 0, "%s: lists hold %zu bytes beyond their capacity", when, ex);
}

static __attribute__((unused)) size_t budget_model(void) {
  size_t n = hci_tc_count();
  size_t b = hci_tc_budget_total() / (n ? n : 1); /* HC_TC_BUDGET_TOTAL unless a test set it */
  size_t max = hci_tc_budget_max(); /* HC_TC_BUDGET_MAX while the heap is below 16 times it */
  return b < HC_TC_BUDGET_MIN ? HC_TC_BUDGET_MIN : b > max ? max : b;
}

/* A class's capacity limit: 1 MiB of objects, at most 2048, at least a batch. */
static __attribute__((unused)) uint32_t cap_limit_model(unsigned c) {
  uint32_t lim = (uint32_t)((1u << 20) / hci_classes[c].size);
  if (lim > 2048) lim = 2048;
  if (lim < hci_classes[c].batch) lim = hci_classes[c].batch;
  return lim;
}

#endif

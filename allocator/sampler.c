/* sampler.c - byte-based sampling with geometric gaps, without libm.
 *
 * Each thread keeps sample_left, the bytes to allocate before the next
 * sample; the malloc fast path subtracts the request size and takes the
 * slow path when it goes negative.  Gaps are drawn from an exponential
 * distribution with mean hci_sample_interval (a Poisson process over the
 * allocated bytes), so every byte has the same chance of being sampled and
 * a sampled object of size s stands for s / (1 - exp(-s / T)) bytes.
 * -ln(U) is computed from an integer log2 and a 64-entry table.
 * In checker mode sample_left is held negative so every allocation takes
 * the slow path and records its stack. */
#include "hc_internal.h"

_Atomic uint64_t hci_sample_interval = HC_DEFAULT_SAMPLE_INTERVAL;

/* HEAPCHECK_SAMPLE_SEED (tests): when nonzero, the n-th cache reset draws
 * from a generator seeded with f(seed, n) instead of the thread id and
 * cache address, so a program run twice samples the same allocations. */
static uint64_t sample_seed;
static _Atomic uint64_t seed_uses;

/* log2(1 + i/64) in 1/2^16 units, i = 0..64. */
static uint32_t log2_frac[65];

void hci_sampler_init(void) {
  /* Fill the table with integer arithmetic: log2(x) for x in [1, 2) by
   * repeated squaring (16 fraction bits). */
  for (int i = 0; i <= 64; i++) {
    uint64_t x = ((uint64_t)(64 + i) << 32) / 64; /* x in [1,2] as Q32 */
    uint32_t r = 0;
    if (x >= (2ull << 32)) {
      log2_frac[i] = 1u << 16;
      continue;
    }
    for (int b = 15; b >= 0; b--) {
      x = (uint64_t)(((unsigned __int128)x * x) >> 32);
      if (x >= (2ull << 32)) {
        x >>= 1;
        r |= 1u << b;
      }
    }
    log2_frac[i] = r;
  }
  long long v = hci_opt_set(HCO_HEAPCHECK_SAMPLE_PARAMETER) ? hci_opt_int(HCO_HEAPCHECK_SAMPLE_PARAMETER)
                                                          : hci_opt_int(HCO_TCMALLOC_SAMPLE_PARAMETER);
  atomic_store_explicit(&hci_sample_interval, (uint64_t)v, memory_order_relaxed);
  sample_seed = (uint64_t)hci_opt_int(HCO_HEAPCHECK_SAMPLE_SEED);
}

static uint64_t next_random(uint64_t *s) {
  /* xorshift64*: good enough for sampling, one multiply. */
  uint64_t x = *s ? *s : 0x2545f4914f6cdd1dull;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * 0x2545f4914f6cdd1dull;
}

/* -log2(q / 2^26) in Q16 for q in [1, 2^26]. */
static uint64_t neg_log2_q16(uint64_t q) {
  int hi = 63 - __builtin_clzll(q);                       /* floor(log2 q) */
  uint64_t frac = hi >= 6 ? (q >> (hi - 6)) & 63 : (q << (6 - hi)) & 63;
  uint64_t rest = hi >= 6 ? q & ((1ull << (hi - 6)) - 1) : 0;
  uint64_t scale = hi >= 6 ? (1ull << (hi - 6)) : 1;
  /* linear interpolation between table entries */
  uint64_t f = log2_frac[frac] + (uint64_t)(log2_frac[frac + 1] - log2_frac[frac]) * rest / scale;
  uint64_t log2q = ((uint64_t)hi << 16) + f;
  return (26ull << 16) - log2q;
}

uint64_t hci_sampler_next_gap(hc_tcache_t *tc) {
  uint64_t mean = atomic_load_explicit(&hci_sample_interval, memory_order_relaxed);
  hci_tc_sampler(tc)->interval = mean;
  if (mean == 0) return (uint64_t)1 << 62; /* off: never */
  if (mean == 1) return 0;                  /* every allocation */
  uint64_t q = (next_random(&hci_tc_sampler(tc)->rng) >> 38) + 1; /* uniform in [1, 2^26] */
  /* gap = -ln(U) * mean = -log2(U) * ln2 * mean; ln2 = 45426 / 65536 */
  unsigned __int128 g = (unsigned __int128)neg_log2_q16(q) * 45426u * mean;
  return (uint64_t)(g >> 32) + 1;
}

size_t hci_sampler_set_interval(size_t bytes) {
  hci_ensure_init();
  uint64_t old = atomic_exchange_explicit(&hci_sample_interval, (uint64_t)bytes, memory_order_relaxed);
  if (hci_record_all) return (size_t)old;
  hc_tcache_t *me = hci_tc;
  if (me->is_real) hci_sampler_reset(me); /* this thread draws with the new mean now */
  if (bytes) {
    /* Other threads: cut a longer pending gap (e.g. "never" while sampling
     * was off) to the new mean; they redraw when it runs out. */
    hci_lock(&hci_tc_registry_lock);
    for (hc_tcache_t *tc = hci_tc_registry; tc; tc = tc->next) {
      if (tc == me) continue;
      int64_t *left = &hci_tc_sampler(tc)->left;
      if (__atomic_load_n(left, __ATOMIC_RELAXED) > (int64_t)bytes) __atomic_store_n(left, (int64_t)bytes, __ATOMIC_RELAXED);
    }
    hci_unlock(&hci_tc_registry_lock);
  }
  return (size_t)old;
}

uint64_t hci_sampler_interval(void) { return atomic_load_explicit(&hci_sample_interval, memory_order_relaxed); }

void hci_sampler_sample_next(void) {
  hc_tcache_t *tc = hci_tc;
  if (tc->is_real && !hci_record_all) __atomic_store_n(&hci_tc_sampler(tc)->left, -1, __ATOMIC_RELAXED);
}

void hci_sampler_reset(hc_tcache_t *tc) {
  if (sample_seed) { /* splitmix64 of seed + n: distinct well-mixed states */
    uint64_t z = sample_seed + 0x9e3779b97f4a7c15ull * (1 + atomic_fetch_add(&seed_uses, 1));
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    hci_tc_sampler(tc)->rng = z ^ (z >> 31);
  }
  hc_tc_sampler_t *sm = hci_tc_sampler(tc);
  if (hci_record_all) {
    sm->left = INT64_MIN / 2; /* every allocation takes the slow path */
    return;
  }
  sm->left = (int64_t)hci_sampler_next_gap(tc);
  if (hci_hooks_on) sm->left = hci_hook_biased(sm->left); /* malloc hooks: every allocation is slow */
}

void hci_sampler_hooks_changed(bool on) {
  hci_lock(&hci_tc_registry_lock);
  for (hc_tcache_t *tc = hci_tc_registry; tc; tc = tc->next) {
    int64_t *sl = &hci_tc_sampler(tc)->left;
    int64_t left = __atomic_load_n(sl, __ATOMIC_RELAXED);
    if (hci_record_all) continue;
    if (on && left >= HC_HOOK_BIAS / 2) left = hci_hook_biased(left);
    else if (!on && left < HC_HOOK_BIAS / 2) left -= HC_HOOK_BIAS;
    __atomic_store_n(sl, left, __ATOMIC_RELAXED);
  }
  hci_unlock(&hci_tc_registry_lock);
}

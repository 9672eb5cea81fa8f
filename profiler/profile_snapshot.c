/* profile_snapshot.c - what a heap profile is made of: un-sampling
 * estimates (no libm), the cumulative sample counters per (stack, size bin),
 * and snapshots of the live heap (sampled, or exact with the checker on).
 * profile.c writes them out; heap_top.c ranks them.
 *
 * Un-sampling.  The sampler is a Poisson process over allocated bytes with
 * mean T, so an object of s bytes is sampled with probability
 * 1 - exp(-s/T) and stands for s / (1 - exp(-s/T)) bytes.  Snapshot lines
 * are one per (stack, size bin), and a bin spans at most 1/16 of its sizes,
 * so pprof's per-line scaling of the average size equals our per-object sum
 * to well under 1%.
 *
 * Locks: tab.lock guards the counters; it is taken in malloc's sampled slow
 * path with no allocator lock held, and after the sample lock or
 * hci_lock_all() when snapshotting (never the other way).  Memory comes
 * from the metadata arena only.
 */
#include <string.h>

#include "hc_profiler.h"

// ---- estimates (no libm) ----

/* 1/i!: Taylor coefficients, so the series below multiplies instead of
 * dividing (each sample computes one; divisions made it ~400 instructions). */
static const double inv_fact[] = {
    1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040, 1.0 / 40320,
    1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600, 1.0 / 6227020800.0,
    1.0 / 87178291200.0, 1.0 / 1307674368000.0};
#define N_TERMS (int)(sizeof inv_fact / sizeof inv_fact[0])

/* sum_{i=first}^{N_TERMS-1} (-r)^i / i!, by Horner's rule.  For |r| < ln 2
 * the first omitted term is below 4e-15 of the result. */
static double series(double r, int first) {
  double sum = inv_fact[N_TERMS - 1];
  for (int i = N_TERMS - 2; i >= first; i--) sum = sum * -r + inv_fact[i];
  for (int i = 0; i < first; i++) sum *= -r;
  return sum;
}

/* e^-x for x >= 0: e^-x = 2^-k * e^-r with r in [0, ln 2). */
static double exp_neg(double x) {
  if (x > 700) return 0;
  const double ln2 = 0.69314718055994530942;
  int k = (int)(x * (1 / ln2));
  double r = x - k * ln2;
  if (r < 0) {
    r += ln2;
    k--;
  }
  union {
    uint64_t u;
    double d;
  } p = {.u = (uint64_t)(1023 - k) << 52};
  return series(r, 0) * p.d;
}

/* 1 - e^-x, accurate for small x too (the series avoids cancellation). */
static double one_minus_exp_neg(double x) {
  if (x >= 0.25) return 1 - exp_neg(x);
  return -series(x, 1);
}

/* Bytes one object of `size` bytes sampled with mean interval w stands for. */
double hci_profile_estimate_d(double size, double w) {
  if (w <= 1 || size <= 0) return size;
  return size / one_minus_exp_neg(size / w);
}

double hci_profile_estimate(size_t size, uint64_t weight) { return hci_profile_estimate_d((double)size, (double)weight); }

/* Objects one sample stands for. */
static double estimate_count(double size, double w) {
  if (w <= 1 || size <= 0) return 1;
  return 1 / one_minus_exp_neg(size / w);
}

// ---- buckets: (stack id, size bin) ----

/* Sizes below 128 are their own bin; above, 16 bins per power of two. */
static uint32_t size_bin(uint64_t s) {
  if (s < 128) return (uint32_t)s;
  int e = 63 - __builtin_clzll(s);
  return 128 + (uint32_t)(e - 7) * 16 + (uint32_t)((s >> (e - 4)) & 15);
}

#define KEY(stack, bin) (((uint64_t)(stack) << 16) | (uint64_t)(bin))
#define KEY_STACK(k) ((uint32_t)((k) >> 16))
#define KEY_BIN(k) ((uint32_t)((k)&0xffff))
#define USED (1ull << 63)

typedef struct bucket {
  uint64_t key;   /* KEY() | USED; 0 = empty slot */
  uint64_t n;     /* samples taken */
  uint64_t bytes; /* their requested bytes */
  uint64_t wsum;  /* sum of their weights */
  double est;     /* estimated bytes they stand for */
} bucket_t;

/* One cache line for what every sample touches besides its bucket. */
static struct {
  hci_lock_t lock;
  bucket_t *v;      /* open addressing, linear probing; cap a power of two */
  size_t cap, used;
  uint64_t dropped; /* samples not counted (no memory for the table) */
  _Atomic uint64_t alloc_est_total; /* estimated bytes allocated since start (no lock) */
  _Atomic uint64_t free_est_total;  /* estimated bytes freed since start (no lock) */
  _Atomic int64_t inuse_est_total;  /* estimated bytes live (no lock) */
} tab __attribute__((aligned(64))) = {.lock = HCI_LOCK_INIT(HC_RANK_PROFILE_BUCKETS)};
HC_PRIVATE_STATE(tab);

static size_t slot_of(uint64_t key, size_t cap) { return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1); }

static bucket_t *tab_probe(bucket_t *v, size_t cap, uint64_t key) {
  for (size_t i = slot_of(key, cap);; i = (i + 1) & (cap - 1))
    if (v[i].key == key || v[i].key == 0) return &v[i];
}

/* requires: tab.lock.  Keeps the load under 3/4: linear probing stays
 * short there (a sample's lookup is on the sampled slow path only), and
 * the table is what always-on sampling costs in memory on a program with
 * many allocation sites (espresso: 2 161 buckets, 320 KiB at a load under
 * 1/2, the old array resident beside the new one while it grows). */
static bool tab_grow(void) {
  size_t cap = tab.cap ? tab.cap * 2 : 256;
  bucket_t *v = hci_meta_alloc(cap * sizeof *v);
  if (!v) return false;
  for (size_t i = 0; i < tab.cap; i++)
    if (tab.v[i].key) *tab_probe(v, cap, tab.v[i].key) = tab.v[i];
  if (tab.v) hci_meta_free(tab.v, tab.cap * sizeof *tab.v);
  tab.v = v;
  tab.cap = cap;
  return true;
}

uint64_t hci_profile_note_alloc(uint32_t stack_id, size_t size, uint64_t weight) {
  double est = hci_profile_estimate_d((double)size, (double)weight);
  uint64_t e = (uint64_t)(est + 0.5);
  atomic_fetch_add_explicit(&tab.alloc_est_total, e, memory_order_relaxed);
  atomic_fetch_add_explicit(&tab.inuse_est_total, (int64_t)e, memory_order_relaxed);
  uint64_t key = KEY(stack_id, size_bin(size)) | USED;
  hci_lock(&tab.lock);
  if ((tab.used + 1) * 4 > tab.cap * 3 && !tab_grow() && tab.used + 1 >= tab.cap) {
    tab.dropped++;
  } else {
    bucket_t *b = tab_probe(tab.v, tab.cap, key);
    if (!b->key) {
      b->key = key;
      tab.used++;
    }
    b->n++;
    b->bytes += size;
    b->wsum += weight;
    b->est += est;
  }
  hci_unlock(&tab.lock);
  return e;
}

void hci_profile_note_free(uint64_t est) {
  atomic_fetch_sub_explicit(&tab.inuse_est_total, (int64_t)est, memory_order_relaxed);
  atomic_fetch_add_explicit(&tab.free_est_total, est, memory_order_relaxed);
}

uint64_t hci_profile_free_estimate(void) {
  return atomic_load_explicit(&tab.free_est_total, memory_order_relaxed);
}

static const hci_sample_listener_t listener = {
    .on_alloc = hci_profile_note_alloc,
    .after_alloc = hci_profiler_on_sample,
    .on_free = hci_profile_note_free,
};

void hci_profiler_attach(void) {
  hci_alloc_set_sample_listener(&listener);
  hci_heap_growth_attach();
}

// ---- snapshots ----

typedef struct live {
  uint64_t key;
  uint64_t size, weight, time;
} live_t;
_Static_assert(sizeof(live_t) <= 128 && sizeof(bucket_t) <= 128 && sizeof(hci_prof_site_t) <= 128,
               "swap_elems buffer");

static int cmp_key(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Largest estimated live bytes first, then allocated bytes; the heap sort
 * puts the "largest" element last, so this compares in reverse. */
static int cmp_site(const void *a, const void *b) {
  const hci_prof_site_t *x = a, *y = b;
  if (x->est_bytes != y->est_bytes) return x->est_bytes < y->est_bytes ? 1 : -1;
  if (x->est_abytes != y->est_abytes) return x->est_abytes < y->est_abytes ? 1 : -1;
  uint64_t kx = KEY(x->stack_id, x->bin), ky = KEY(y->stack_id, y->bin);
  return kx < ky ? -1 : kx > ky;
}

static bool count_sample(void *arg, const hci_heap_sample_t *s) {
  (void)s;
  (*(size_t *)arg)++;
  return true;
}

typedef struct copy_ctx {
  live_t *v;
  size_t cap, i;
  bool more;
} copy_ctx_t;

static bool copy_sample(void *arg, const hci_heap_sample_t *s) {
  copy_ctx_t *c = arg;
  if (c->i == c->cap) {
    c->more = true;
    return false;
  }
  live_t *l = &c->v[c->i++];
  l->key = KEY(s->stack_id, size_bin(s->size));
  l->size = s->size;
  l->weight = s->weight;
  l->time = s->alloc_time;
  return true;
}

/* Copies the live samples; the list is counted first so the copy needs no
 * allocation under the sample lock. */
static live_t *copy_live(size_t *n, size_t *bytes) {
  for (int attempt = 0;; attempt++) {
    size_t count = 0;
    hci_heap_samples_lock();
    hci_heap_for_each_sample(count_sample, &count);
    hci_heap_samples_unlock();
    size_t cap = count + count / 4 + 16;
    live_t *v = hci_meta_alloc(cap * sizeof *v);
    if (!v) return NULL;
    copy_ctx_t c = {v, cap, 0, false};
    hci_heap_samples_lock();
    hci_heap_for_each_sample(copy_sample, &c);
    hci_heap_samples_unlock();
    if (!c.more || attempt == 3) { /* a list still growing that fast is cut short */
      *n = c.i;
      *bytes = cap * sizeof *v;
      return v;
    }
    hci_meta_free(v, cap * sizeof *v);
  }
}

static bucket_t *copy_buckets(size_t *n, size_t *bytes) {
  hci_lock(&tab.lock);
  size_t cap = tab.used + 1;
  bucket_t *v = hci_meta_alloc(cap * sizeof *v);
  size_t k = 0;
  if (v)
    for (size_t i = 0; i < tab.cap; i++)
      if (tab.v[i].key) {
        v[k] = tab.v[i];
        v[k++].key &= ~USED;
      }
  hci_unlock(&tab.lock);
  *n = k;
  *bytes = cap * sizeof *v;
  return v;
}

static void add_live(hci_prof_site_t *l, const live_t *s) {
  l->n++;
  l->bytes += s->size;
  l->wsum += s->weight;
  l->est_bytes += hci_profile_estimate_d((double)s->size, (double)s->weight);
  l->est_n += estimate_count((double)s->size, (double)s->weight);
  if (s->time && (!l->oldest_ns || s->time < l->oldest_ns)) l->oldest_ns = s->time;
}

bool hci_profile_pure(uint64_t n, uint64_t wsum, uint64_t rate) {
  uint64_t p;
  return !__builtin_mul_overflow(n, rate, &p) && p == wsum;
}

/* Merges the bins of each stack (sites sorted by key). */
static size_t merge_per_stack(hci_prof_site_t *v, size_t n) {
  size_t out = 0;
  for (size_t i = 0; i < n; i++) {
    hci_prof_site_t *d = out ? &v[out - 1] : NULL;
    if (!d || d->stack_id != v[i].stack_id) {
      v[out] = v[i];
      v[out++].bin = 0;
      continue;
    }
    const hci_prof_site_t *s = &v[i];
    d->n += s->n;
    d->bytes += s->bytes;
    d->wsum += s->wsum;
    d->est_n += s->est_n;
    d->est_bytes += s->est_bytes;
    d->an += s->an;
    d->abytes += s->abytes;
    d->awsum += s->awsum;
    d->est_abytes += s->est_abytes;
    if (s->oldest_ns && (!d->oldest_ns || s->oldest_ns < d->oldest_ns)) d->oldest_ns = s->oldest_ns;
  }
  return out;
}

static int snapshot_sampled(hci_prof_snap_t *snap, bool per_stack) {
  size_t nl = 0, lbytes = 0, nb = 0, bbytes = 0;
  live_t *lv = copy_live(&nl, &lbytes);
  bucket_t *bk = lv ? copy_buckets(&nb, &bbytes) : NULL;
  size_t cap = nl + nb + 1;
  hci_prof_site_t *v = bk ? hci_meta_alloc(cap * sizeof *v) : NULL;
  if (!v) {
    if (lv) hci_meta_free(lv, lbytes);
    if (bk) hci_meta_free(bk, bbytes);
    return -1;
  }
  hci_sort(lv, nl, sizeof *lv, cmp_key);
  hci_sort(bk, nb, sizeof *bk, cmp_key);
  uint64_t rate = hci_sampler_interval();
  if (rate == 0) rate = nl ? lv[0].weight : HC_DEFAULT_SAMPLE_INTERVAL;
  size_t n = 0, i = 0, j = 0;
  bool exact = rate == 1;
  while (i < nl || j < nb) {
    uint64_t key = i < nl && (j >= nb || lv[i].key <= bk[j].key) ? lv[i].key : bk[j].key;
    hci_prof_site_t *l = &v[n++];
    memset(l, 0, sizeof *l);
    l->stack_id = KEY_STACK(key);
    l->bin = KEY_BIN(key);
    for (; i < nl && lv[i].key == key; i++) add_live(l, &lv[i]);
    if (j < nb && bk[j].key == key) {
      l->an = bk[j].n;
      l->abytes = bk[j].bytes;
      l->awsum = bk[j].wsum;
      l->est_abytes = bk[j].est;
      j++;
    }
    if (l->an < l->n) { /* sampled and linked, not counted yet: a race with note_alloc */
      l->an = l->n;
      l->abytes = l->bytes;
      l->awsum = l->wsum;
      l->est_abytes = l->est_bytes;
    }
    if (!hci_profile_pure(l->n, l->wsum, 1) || !hci_profile_pure(l->an, l->awsum, 1)) exact = false;
  }
  hci_meta_free(lv, lbytes);
  hci_meta_free(bk, bbytes);
  if (per_stack || exact) n = merge_per_stack(v, n);
  hci_sort(v, n, sizeof *v, cmp_site);
  snap->v = v;
  snap->n = n;
  snap->alloc_bytes = cap * sizeof *v;
  snap->rate = exact ? 1 : rate;
  snap->exact = exact;
  snap->samples = nl;
  return 0;
}

/* Checker mode: every object, aggregated per stack in a table sized before
 * the locks are taken (no allocation is possible under hci_lock_all). */
typedef struct exact_ctx {
  hci_prof_site_t *v;
  size_t cap, used;
  bool overflow;
  uint64_t objects;
} exact_ctx_t;

static void exact_visit(void *arg, const hci_heap_obj_t *o) {
  exact_ctx_t *c = arg;
  uint32_t id = o->meta ? o->meta->stack_id : HC_STACK_UNKNOWN;
  size_t i = slot_of(id, c->cap);
  while (c->v[i].n && c->v[i].stack_id != id) i = (i + 1) & (c->cap - 1);
  hci_prof_site_t *l = &c->v[i];
  if (!l->n) {
    if ((c->used + 1) * 4 > c->cap * 3) {
      c->overflow = true;
      return;
    }
    l->stack_id = id;
    c->used++;
  }
  l->n++;
  l->bytes += o->size;
  c->objects++;
  uint64_t t = hci_heap_obj_alloc_time(o);
  if (t && (!l->oldest_ns || t < l->oldest_ns)) l->oldest_ns = t;
}

static int snapshot_exact(hci_prof_snap_t *snap) {
  size_t cap = 64;
  while (cap < 2 * (hci_depot_count() + 64)) cap *= 2;
  for (;;) {
    exact_ctx_t c = {hci_meta_alloc(cap * sizeof(hci_prof_site_t)), cap, 0, false, 0};
    if (!c.v) return -1;
    hci_lock_all();
    hci_heap_for_each_object(exact_visit, &c);
    hci_unlock_all();
    if (c.overflow) { /* the depot grew while we walked: retry bigger */
      hci_meta_free(c.v, cap * sizeof(hci_prof_site_t));
      cap *= 4;
      continue;
    }
    size_t n = 0;
    for (size_t i = 0; i < cap; i++) {
      if (!c.v[i].n) continue;
      hci_prof_site_t *l = &c.v[n++];
      *l = c.v[i];
      l->wsum = l->awsum = l->an = l->n;
      l->abytes = l->bytes;
      l->est_n = (double)l->n;
      l->est_bytes = l->est_abytes = (double)l->bytes;
    }
    hci_sort(c.v, n, sizeof *c.v, cmp_site);
    snap->v = c.v;
    snap->n = n;
    snap->alloc_bytes = cap * sizeof(hci_prof_site_t);
    snap->rate = 1;
    snap->exact = true;
    snap->samples = c.objects;
    return 0;
  }
}

int hci_profile_snapshot(hci_prof_snap_t *snap, bool per_stack) {
  memset(snap, 0, sizeof *snap);
  return hci_alloc_recording() ? snapshot_exact(snap) : snapshot_sampled(snap, per_stack);
}

void hci_profile_snapshot_free(hci_prof_snap_t *snap) {
  if (snap->v) hci_meta_free(snap->v, snap->alloc_bytes);
  snap->v = NULL;
  snap->n = 0;
}


// ---- accessors for profile.c ----

uint64_t hci_profile_alloc_estimate(void) { return atomic_load_explicit(&tab.alloc_est_total, memory_order_relaxed); }

int64_t hci_profile_inuse_estimate(void) { return atomic_load_explicit(&tab.inuse_est_total, memory_order_relaxed); }

void hci_profile_counters_locks(hci_lock_fn *each) { each(&tab.lock); }

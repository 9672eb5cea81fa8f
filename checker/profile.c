/* profile.c - heap profiles from sampled stacks: the gperftools text format,
 * HEAPPROFILE dumps, hc_heap_profile_* and gperftools' HeapProfiler* calls.
 *
 * Data:
 *  - live samples: the spans on hci_sampled_spans (alloc.c), each with its
 *    stack id, requested size, weight (the mean sampling interval it was
 *    taken with) and allocation time;
 *  - cumulative sample counters per (stack id, size bin), kept here by
 *    hci_profile_note_alloc in a hash table in the metadata arena;
 *  - with the checker on every object has a record: the snapshot walks all
 *    of them (hci_for_each_object) and the profile is exact.
 *
 * Un-sampling.  The sampler is a Poisson process over allocated bytes with
 * mean T, so an object of s bytes is sampled with probability
 * 1 - exp(-s/T) and stands for s / (1 - exp(-s/T)) bytes.  google-pprof
 * reads the `heap_v2/T` header and scales each line by
 * 1 / (1 - exp(-avg/T)), avg = the line's bytes / count.  Lines are one per
 * (stack, size bin) and a bin spans at most 1/16 of its sizes, so pprof's
 * per-line scaling equals our per-object sum to well under 1%.  Lines with
 * samples taken at another interval (hc_set_sample_interval changed it) are
 * rescaled so that pprof still arrives at their estimate.  Exact data is
 * written per stack with the `heapprofile` header, which pprof leaves alone.
 *
 * Locks, in order: prof.lock (dump state, file names) -> hci_lock_all() or
 * hci_sampled_lock -> tab.lock (counters) -> metadata arena.  tab.lock is
 * taken in malloc's sampled slow path with no allocator lock held; the two
 * are never nested the other way.  Fork: prepare takes prof.lock and
 * tab.lock (before the allocator's own handler takes its locks).
 * Nothing here calls malloc except hc_heap_profile_get and GetHeapProfile,
 * for the string they return, with no lock held.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gperftools/heap-profiler.h"
#include "hc_checker.h"
#include "heapcheck.h"

extern char **environ;

// ---- estimates (no libm) ----

/* e^-x for x >= 0: e^-x = 2^-k * e^-r with r in [0, ln 2), Taylor series for e^-r. */
static double exp_neg(double x) {
  if (x > 700) return 0;
  const double ln2 = 0.69314718055994530942;
  int k = (int)(x / ln2);
  double r = x - k * ln2;
  if (r < 0) {
    r += ln2;
    k--;
  }
  double term = 1, sum = 1;
  for (int i = 1; i < 20; i++) {
    term *= -r / i;
    sum += term;
  }
  union {
    uint64_t u;
    double d;
  } p = {.u = (uint64_t)(1023 - k) << 52};
  return sum * p.d;
}

/* 1 - e^-x, accurate for small x too (the series avoids cancellation). */
static double one_minus_exp_neg(double x) {
  if (x >= 0.25) return 1 - exp_neg(x);
  double term = x, sum = x;
  for (int i = 2; i < 14; i++) {
    term *= -x / i;
    sum += term;
  }
  return sum;
}

/* Bytes one object of `size` bytes sampled with mean interval w stands for. */
static double estimate(double size, double w) {
  if (w <= 1 || size <= 0) return size;
  return size / one_minus_exp_neg(size / w);
}

double hci_profile_estimate(size_t size, uint64_t weight) { return estimate((double)size, (double)weight); }

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

static struct {
  hci_lock_t lock;
  bucket_t *v;      /* open addressing, linear probing; cap a power of two */
  size_t cap, used;
  uint64_t dropped; /* samples not counted (no memory for the table) */
} tab;
HC_PRIVATE_STATE(tab);

static _Atomic uint64_t alloc_est_total; /* estimated bytes allocated since start */
static _Atomic int64_t inuse_est_total;  /* estimated bytes live */

static size_t slot_of(uint64_t key, size_t cap) { return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1); }

static bucket_t *tab_probe(bucket_t *v, size_t cap, uint64_t key) {
  for (size_t i = slot_of(key, cap);; i = (i + 1) & (cap - 1))
    if (v[i].key == key || v[i].key == 0) return &v[i];
}

/* requires: tab.lock.  Keeps the load under 1/2. */
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

void hci_profile_note_alloc(uint32_t stack_id, size_t size, uint64_t weight) {
  double est = estimate((double)size, (double)weight);
  uint64_t e = (uint64_t)(est + 0.5);
  atomic_fetch_add_explicit(&alloc_est_total, e, memory_order_relaxed);
  atomic_fetch_add_explicit(&inuse_est_total, (int64_t)e, memory_order_relaxed);
  uint64_t key = KEY(stack_id, size_bin(size)) | USED;
  hci_lock(&tab.lock);
  if ((tab.used + 1) * 2 > tab.cap && !tab_grow() && tab.used + 1 >= tab.cap) {
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
}

void hci_profile_note_free(size_t size, uint64_t weight) {
  uint64_t e = (uint64_t)(estimate((double)size, (double)weight) + 0.5);
  atomic_fetch_sub_explicit(&inuse_est_total, (int64_t)e, memory_order_relaxed);
}

// ---- sorting (no qsort: it may allocate) ----

typedef int (*cmp_fn)(const void *, const void *);

static void swap_elems(char *a, char *b, size_t sz) {
  char t[128];
  memcpy(t, a, sz);
  memcpy(a, b, sz);
  memcpy(b, t, sz);
}

static void sift_down(char *a, size_t root, size_t n, size_t sz, cmp_fn cmp) {
  for (;;) {
    size_t child = 2 * root + 1;
    if (child >= n) return;
    if (child + 1 < n && cmp(a + child * sz, a + (child + 1) * sz) < 0) child++;
    if (cmp(a + root * sz, a + child * sz) >= 0) return;
    swap_elems(a + root * sz, a + child * sz, sz);
    root = child;
  }
}

static void heap_sort(void *base, size_t n, size_t sz, cmp_fn cmp) {
  char *a = base;
  if (n < 2) return;
  for (size_t i = n / 2; i-- > 0;) sift_down(a, i, n, sz, cmp);
  for (size_t end = n - 1; end > 0; end--) {
    swap_elems(a, a + end * sz, sz);
    sift_down(a, 0, end, sz, cmp);
  }
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

/* Copies the live samples; the list is counted first so the copy needs no
 * allocation under hci_sampled_lock. */
static live_t *copy_live(size_t *n, size_t *bytes) {
  for (int attempt = 0;; attempt++) {
    size_t count = 0;
    hci_lock(&hci_sampled_lock);
    for (hc_span_t *s = hci_sampled_spans.snext; s != &hci_sampled_spans; s = s->snext) count++;
    hci_unlock(&hci_sampled_lock);
    size_t cap = count + count / 4 + 16;
    live_t *v = hci_meta_alloc(cap * sizeof *v);
    if (!v) return NULL;
    size_t i = 0;
    bool more = false;
    hci_lock(&hci_sampled_lock);
    for (hc_span_t *s = hci_sampled_spans.snext; s != &hci_sampled_spans; s = s->snext) {
      if (i == cap) {
        more = true;
        break;
      }
      v[i].key = KEY(s->meta.stack_id, size_bin(s->req_size));
      v[i].size = s->req_size;
      v[i].weight = s->weight ? s->weight : 1;
      v[i].time = s->alloc_time;
      i++;
    }
    hci_unlock(&hci_sampled_lock);
    if (!more || attempt == 3) { /* a list still growing that fast is cut short */
      *n = i;
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
  l->est_bytes += estimate((double)s->size, (double)s->weight);
  l->est_n += estimate_count((double)s->size, (double)s->weight);
  if (s->time && (!l->oldest_ns || s->time < l->oldest_ns)) l->oldest_ns = s->time;
}

static bool pure(uint64_t n, uint64_t wsum, uint64_t rate) {
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
  heap_sort(lv, nl, sizeof *lv, cmp_key);
  heap_sort(bk, nb, sizeof *bk, cmp_key);
  uint64_t rate = atomic_load_explicit(&hci_sample_interval, memory_order_relaxed);
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
    if (!pure(l->n, l->wsum, 1) || !pure(l->an, l->awsum, 1)) exact = false;
  }
  hci_meta_free(lv, lbytes);
  hci_meta_free(bk, bbytes);
  if (per_stack || exact) n = merge_per_stack(v, n);
  heap_sort(v, n, sizeof *v, cmp_site);
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

static void exact_visit(void *arg, const hci_obj_t *o) {
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
  uint64_t t = o->span->state == HC_SPAN_LARGE && o->span->is_sampled ? o->span->alloc_time : 0;
  if (t && (!l->oldest_ns || t < l->oldest_ns)) l->oldest_ns = t;
}

static int snapshot_exact(hci_prof_snap_t *snap) {
  size_t cap = 64;
  while (cap < 2 * (hci_depot_count() + 64)) cap *= 2;
  for (;;) {
    exact_ctx_t c = {hci_meta_alloc(cap * sizeof(hci_prof_site_t)), cap, 0, false, 0};
    if (!c.v) return -1;
    hci_lock_all();
    hci_for_each_object(exact_visit, &c);
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
    heap_sort(c.v, n, sizeof *c.v, cmp_site);
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
  return hci_record_all ? snapshot_exact(snap) : snapshot_sampled(snap, per_stack);
}

void hci_profile_snapshot_free(hci_prof_snap_t *snap) {
  if (snap->v) hci_meta_free(snap->v, snap->alloc_bytes);
  snap->v = NULL;
  snap->n = 0;
}

// ---- the writer: buffered, to a file descriptor or to memory ----

#define PW_BUF ((size_t)32 << 10)
typedef struct pw {
  int fd;          /* >= 0: write here; < 0: collect in mem */
  bool failed;
  char *mem;       /* hci_meta_alloc'ed */
  size_t mem_len, mem_cap;
  size_t len;
  char buf[PW_BUF];
} pw_t;

static void pw_flush(pw_t *w) {
  if (!w->len || w->failed) {
    w->len = 0;
    return;
  }
  if (w->fd >= 0) {
    for (size_t off = 0; off < w->len;) {
      ssize_t r = write(w->fd, w->buf + off, w->len - off);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        w->failed = true;
        break;
      }
      off += (size_t)r;
    }
  } else {
    if (w->mem_len + w->len + 1 > w->mem_cap) {
      size_t cap = w->mem_cap ? w->mem_cap : PW_BUF;
      while (cap < w->mem_len + w->len + 1) cap *= 2;
      char *m = hci_meta_alloc(cap);
      if (!m) {
        w->failed = true;
        w->len = 0;
        return;
      }
      if (w->mem) {
        memcpy(m, w->mem, w->mem_len);
        hci_meta_free(w->mem, w->mem_cap);
      }
      w->mem = m;
      w->mem_cap = cap;
    }
    memcpy(w->mem + w->mem_len, w->buf, w->len);
    w->mem_len += w->len;
  }
  w->len = 0;
}

static void pw_put(pw_t *w, const char *s, size_t n) {
  while (n) {
    if (w->len == PW_BUF) pw_flush(w);
    size_t k = PW_BUF - w->len < n ? PW_BUF - w->len : n;
    memcpy(w->buf + w->len, s, k);
    w->len += k;
    s += k;
    n -= k;
  }
}

__attribute__((format(printf, 2, 3))) static void pw_printf(pw_t *w, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int n = hci_vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0) pw_put(w, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* /proc/self/maps as it is: pprof parses the kernel's format. */
static void pw_maps(pw_t *w) {
  int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  for (;;) {
    if (w->len == PW_BUF) pw_flush(w);
    ssize_t r = read(fd, w->buf + w->len, PW_BUF - w->len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    w->len += (size_t)r;
  }
  close(fd);
}

static pw_t *pw_new(int fd) {
  pw_t *w = hci_meta_alloc(sizeof *w);
  if (w) w->fd = fd;
  return w;
}

static void pw_delete(pw_t *w) {
  if (w->mem) hci_meta_free(w->mem, w->mem_cap);
  hci_meta_free(w, sizeof *w);
}

// ---- the profile text ----

/* Counts written for one column pair.  Samples taken with the header's
 * rate are written raw (pprof un-samples them); others are rescaled so that
 * pprof's scaling of the line's average size yields their estimate. */
static void column(uint64_t n, uint64_t bytes, uint64_t wsum, double est, const hci_prof_snap_t *s,
                   uint64_t *on, uint64_t *ob) {
  *on = n;
  *ob = bytes;
  if (s->exact || n == 0 || pure(n, wsum, s->rate)) return;
  double avg = (double)bytes / (double)n;
  double per = estimate(avg, (double)s->rate);
  if (per <= 0) return;
  uint64_t k = (uint64_t)(est / per + 0.5);
  if (k == 0) k = 1;
  *on = k;
  *ob = (uint64_t)((double)k * avg + 0.5);
}

static void site_columns(const hci_prof_site_t *l, const hci_prof_snap_t *s, uint64_t c[4]) {
  column(l->n, l->bytes, l->wsum, l->est_bytes, s, &c[0], &c[1]);
  column(l->an, l->abytes, l->awsum, l->est_abytes, s, &c[2], &c[3]);
}

static int write_profile(pw_t *w) {
  hci_prof_snap_t s;
  if (hci_profile_snapshot(&s, false) < 0) return -1;
  uint64_t tot[4] = {0, 0, 0, 0}, c[4];
  for (size_t i = 0; i < s.n; i++) {
    site_columns(&s.v[i], &s, c);
    for (int k = 0; k < 4; k++) tot[k] += c[k];
  }
  pw_printf(w, "heap profile: %6llu: %8llu [%6llu: %8llu] @ ", (unsigned long long)tot[0],
            (unsigned long long)tot[1], (unsigned long long)tot[2], (unsigned long long)tot[3]);
  if (s.exact) pw_printf(w, "heapprofile\n");
  else pw_printf(w, "heap_v2/%llu\n", (unsigned long long)s.rate);
  for (size_t i = 0; i < s.n; i++) {
    site_columns(&s.v[i], &s, c);
    pw_printf(w, "%6llu: %8llu [%6llu: %8llu] @", (unsigned long long)c[0], (unsigned long long)c[1],
              (unsigned long long)c[2], (unsigned long long)c[3]);
    const uintptr_t *pcs;
    int d = hci_depot_get(s.v[i].stack_id, &pcs);
    if (d <= 0) pw_printf(w, " 0x%016lx", 0ul); /* pprof drops lines without a frame */
    for (int k = 0; k < d; k++) pw_printf(w, " 0x%016lx", (unsigned long)pcs[k]);
    pw_put(w, "\n", 1);
  }
  hci_profile_snapshot_free(&s);
  pw_put(w, "\nMAPPED_LIBRARIES:\n", 19);
  pw_maps(w);
  pw_flush(w);
  return w->failed ? -1 : 0;
}

hc_public int hc_heap_profile_write(int fd) {
  if (fd < 0) return -1;
  hci_ensure_init();
  pw_t *w = pw_new(fd);
  if (!w) return -1;
  int rc = write_profile(w);
  pw_delete(w);
  return rc;
}

hc_public char *hc_heap_profile_get(void) {
  hci_ensure_init();
  pw_t *w = pw_new(-1);
  if (!w) return NULL;
  char *r = NULL;
  if (write_profile(w) == 0 && (r = malloc(w->mem_len + 1)) != NULL) {
    if (w->mem_len) memcpy(r, w->mem, w->mem_len);
    r[w->mem_len] = '\0';
  }
  pw_delete(w);
  return r;
}

// ---- HEAPPROFILE: files, thresholds, signal ----

static struct {
  hci_lock_t lock;                /* guards everything below but running */
  _Atomic int running;            /* read without the lock by hci_profiler_on_sample */
  char prefix[PATH_MAX - 32];
  int pid;                        /* getpid() at start, and in a fork child */
  unsigned seq;                   /* last file number (never reset, like gperftools) */
  uint64_t alloc_base;            /* alloc_est_total at start */
  uint64_t last_alloc;            /* alloc_est_total at the last dump */
  int64_t high_water;             /* in-use bytes at the last high-water dump */
  uint64_t last_time_ns;
  long long alloc_interval, inuse_interval, time_interval; /* 0 = off */
  bool warned_secure;
} prof;
HC_PRIVATE_STATE(prof);
static _Atomic int sig_pending;   /* HEAPPROFILESIGNAL arrived; the next sample dumps */
static bool options_read;
static int report_top_n;          /* HEAPCHECK_REPORT=top[:N] */

static int diag_fd(void) { return hci_diag_fd >= 0 ? hci_diag_fd : 2; }

static int64_t inuse_now(void) {
  int64_t v = atomic_load_explicit(&inuse_est_total, memory_order_relaxed);
  return v > 0 ? v : 0;
}

/* requires: prof.lock, prof.running. */
static int dump_locked(const char *reason) {
  if (hci_is_secure()) { /* a setuid program writes no files on the environment's say */
    if (!prof.warned_secure) hci_warn("heap profile not written: the program runs setuid/setgid");
    prof.warned_secure = true;
    return -1;
  }
  char name[PATH_MAX];
  prof.seq++;
  hci_snprintf(name, sizeof name, "%s.%d.%04u.heap", prof.prefix, prof.pid, prof.seq);
  hci_printf("Dumping heap profile to %s (%s)\n", name, reason);
  unlink(name); /* O_EXCL below: never follow or reuse what is there */
  int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  int rc = -1;
  if (fd >= 0) {
    rc = hc_heap_profile_write(fd);
    int err = errno;
    close(fd);
    errno = err;
  }
  if (rc < 0) hci_printf("Failed dumping heap profile to %s. Numeric errno is %d\n", name, errno);
  prof.last_alloc = atomic_load_explicit(&alloc_est_total, memory_order_relaxed);
  int64_t inuse = inuse_now();
  if (inuse > prof.high_water) prof.high_water = inuse;
  prof.last_time_ns = hci_os_now_ns();
  return rc;
}

/* gperftools' MaybeDumpProfileLocked, on estimated totals. */
static bool dump_due(char *reason, size_t size) {
  uint64_t alloc = atomic_load_explicit(&alloc_est_total, memory_order_relaxed);
  int64_t inuse = inuse_now();
  if (prof.alloc_interval > 0 && alloc >= prof.last_alloc + (uint64_t)prof.alloc_interval) {
    hci_snprintf(reason, size, "%llu MB allocated cumulatively, %lld MB currently in use",
                 (unsigned long long)((alloc - prof.alloc_base) >> 20), (long long)(inuse >> 20));
    return true;
  }
  if (prof.inuse_interval > 0 && inuse > prof.high_water + prof.inuse_interval) {
    hci_snprintf(reason, size, "%lld MB currently in use", (long long)(inuse >> 20));
    return true;
  }
  if (prof.time_interval > 0) {
    uint64_t now = hci_os_now_ns();
    uint64_t secs = (now - prof.last_time_ns) / 1000000000u;
    if (secs >= (uint64_t)prof.time_interval) {
      hci_snprintf(reason, size, "%llu sec since the last dump", (unsigned long long)secs);
      return true;
    }
  }
  return false;
}

void hci_profiler_on_sample(void) {
  if (!atomic_load_explicit(&prof.running, memory_order_relaxed)) return;
  if (!hci_trylock(&prof.lock)) return; /* another thread is dumping */
  if (atomic_load_explicit(&prof.running, memory_order_relaxed)) {
    char reason[160];
    if (atomic_exchange_explicit(&sig_pending, 0, memory_order_acq_rel)) dump_locked("signal");
    else if (dump_due(reason, sizeof reason)) dump_locked(reason);
  }
  hci_unlock(&prof.lock);
}

/* HEAPPROFILESIGNAL: writing a profile takes locks the interrupted code may
 * hold, so the handler only raises a flag and makes this thread's next
 * allocation take a sample, whose slow path does the dump. */
static void on_profile_signal(int sig) {
  (void)sig;
  atomic_store_explicit(&sig_pending, 1, memory_order_release);
  hc_tcache_t *tc = hci_tc;
  if (!tc->is_static && !hci_record_all) __atomic_store_n(&tc->sample_left, -1, __ATOMIC_RELAXED);
}

static void install_signal(void) {
  long long sig = hci_env_int("HEAPPROFILESIGNAL", 0, 0, SIGRTMAX);
  if (sig <= 0) return;
  if (sig == SIGKILL || sig == SIGSTOP) {
    hci_warn("HEAPPROFILESIGNAL=%lld cannot be caught; no signal-triggered dumps", sig);
    return;
  }
  struct sigaction old, sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_profile_signal;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction((int)sig, NULL, &old) != 0 || (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)) {
    hci_warn("HEAPPROFILESIGNAL: signal %lld is already in use; no signal-triggered dumps", sig);
    return;
  }
  sigaction((int)sig, &sa, NULL);
  hci_printf("Using signal %lld as heap profiling switch\n", sig);
}

static int start(const char *prefix) {
  size_t len = prefix ? strlen(prefix) : 0;
  if (len == 0 || len >= sizeof prof.prefix) return -1;
  hci_lock(&prof.lock);
  if (atomic_load_explicit(&prof.running, memory_order_relaxed)) {
    hci_unlock(&prof.lock);
    return -1;
  }
  memcpy(prof.prefix, prefix, len + 1);
  prof.pid = (int)getpid();
  prof.alloc_base = prof.last_alloc = atomic_load_explicit(&alloc_est_total, memory_order_relaxed);
  prof.high_water = 0;
  prof.last_time_ns = hci_os_now_ns();
  atomic_store_explicit(&prof.running, 1, memory_order_release);
  hci_unlock(&prof.lock);
  hci_printf("Starting tracking the heap\n");
  if (atomic_load_explicit(&hci_sample_interval, memory_order_relaxed) == 0 && !hci_record_all)
    hci_warn("heap profiling with sampling off (HEAPCHECK_SAMPLE_PARAMETER=0): profiles will be empty");
  return 0;
}

// ---- init, fork, exit ----

static void fork_prepare(void) {
  hci_lock(&prof.lock);
  hci_lock(&tab.lock);
}

static void fork_parent(void) {
  hci_unlock(&tab.lock);
  hci_unlock(&prof.lock);
}

static void fork_child(void) {
  hci_lock_reset(&tab.lock);
  hci_lock_reset(&prof.lock);
  prof.pid = (int)getpid(); /* the child's files carry its own pid */
  atomic_store_explicit(&sig_pending, 0, memory_order_relaxed);
}

static void read_report_option(void) {
  const char *v = hci_env_get("HEAPCHECK_REPORT");
  if (!v || !*v) return;
  if (strncmp(v, "top", 3) != 0 || (v[3] != '\0' && v[3] != ':')) {
    hci_warn("HEAPCHECK_REPORT=\"%s\" is not top or top:N; no report", v);
    return;
  }
  report_top_n = 10;
  if (v[3] == ':') {
    long n = 0;
    const char *p = v + 4;
    for (; *p >= '0' && *p <= '9' && n < 1000000; p++) n = n * 10 + (*p - '0');
    if (*p || n <= 0 || n > 100000) hci_warn("HEAPCHECK_REPORT=\"%s\": bad N; using the default 10", v);
    else report_top_n = (int)n;
  }
}

static void read_options(void) {
  if (options_read) return;
  options_read = true;
  prof.alloc_interval = hci_env_int("HEAP_PROFILE_ALLOCATION_INTERVAL", 1ll << 30, 0, 1ll << 50);
  prof.inuse_interval = hci_env_int("HEAP_PROFILE_INUSE_INTERVAL", 100ll << 20, 0, 1ll << 50);
  prof.time_interval = hci_env_int("HEAP_PROFILE_TIME_INTERVAL", 0, 0, 1ll << 31);
  read_report_option();
  const char *p = hci_env_get("HEAPPROFILE");
  if (p && *p) {
    if (start(p) == 0) install_signal();
    else hci_warn("HEAPPROFILE=\"%s\": prefix too long; heap profiling off", p);
  }
}

void hci_profiler_init(void) {
  pthread_atfork(fork_prepare, fork_parent, fork_child);
  /* The first malloc may come before libc has set environ: read the options
   * from the constructor below then. */
  if (environ != NULL) read_options();
}

__attribute__((constructor)) static void profile_constructor(void) {
  hci_ensure_init();
  read_options();
}

/* Live bytes for the exit message: exact with the checker on (nothing is
 * sampled then), else the sampled estimate. */
static int64_t exit_inuse(void) {
  if (!hci_record_all) return inuse_now();
  hci_prof_snap_t snap;
  if (hci_profile_snapshot(&snap, true) < 0) return 0;
  int64_t sum = 0;
  for (size_t i = 0; i < snap.n; i++) sum += (int64_t)snap.v[i].bytes;
  hci_profile_snapshot_free(&snap);
  return sum;
}

__attribute__((destructor)) static void profile_at_exit(void) {
  if (report_top_n > 0) hc_report_top(diag_fd(), report_top_n);
  if (!atomic_load_explicit(&prof.running, memory_order_acquire)) return;
  char reason[64];
  int64_t inuse = exit_inuse();
  if (inuse >> 20) {
    hci_snprintf(reason, sizeof reason, "Exiting, %lld MB in use", (long long)(inuse >> 20));
  } else if (inuse >> 10) {
    hci_snprintf(reason, sizeof reason, "Exiting, %lld kB in use", (long long)(inuse >> 10));
  } else {
    hci_snprintf(reason, sizeof reason, "Exiting, %lld bytes in use", (long long)inuse);
  }
  hc_heap_profile_dump(reason);
}

// ---- public API ----

hc_public size_t hc_set_sample_interval(size_t bytes) {
  hci_ensure_init();
  uint64_t old = atomic_exchange_explicit(&hci_sample_interval, (uint64_t)bytes, memory_order_relaxed);
  if (hci_record_all) return (size_t)old;
  hc_tcache_t *me = hci_tc;
  if (!me->is_static) hci_sampler_reset(me); /* this thread draws with the new mean now */
  if (bytes) {
    /* Other threads: cut a longer pending gap (e.g. "never" while sampling
     * was off) to the new mean; they redraw when it runs out. */
    hci_lock(&hci_tc_registry_lock);
    for (hc_tcache_t *tc = hci_tc_registry; tc; tc = tc->next) {
      if (tc == me) continue;
      if (__atomic_load_n(&tc->sample_left, __ATOMIC_RELAXED) > (int64_t)bytes)
        __atomic_store_n(&tc->sample_left, (int64_t)bytes, __ATOMIC_RELAXED);
    }
    hci_unlock(&hci_tc_registry_lock);
  }
  return (size_t)old;
}

hc_public int hc_heap_profile_start(const char *prefix) {
  hci_ensure_init();
  return start(prefix);
}

hc_public void hc_heap_profile_stop(void) {
  hci_lock(&prof.lock);
  atomic_store_explicit(&prof.running, 0, memory_order_release);
  hci_unlock(&prof.lock);
}

hc_public int hc_heap_profile_running(void) { return atomic_load_explicit(&prof.running, memory_order_acquire); }

hc_public int hc_heap_profile_dump(const char *reason) {
  if (!atomic_load_explicit(&prof.running, memory_order_acquire)) return -1;
  hci_lock(&prof.lock);
  int rc = -1;
  if (atomic_load_explicit(&prof.running, memory_order_relaxed)) rc = dump_locked(reason ? reason : "");
  hci_unlock(&prof.lock);
  return rc;
}

/* gperftools' <gperftools/heap-profiler.h>. */
hc_public void HeapProfilerStart(const char *prefix) { (void)hc_heap_profile_start(prefix); }
hc_public void HeapProfilerStop(void) { hc_heap_profile_stop(); }
hc_public void HeapProfilerDump(const char *reason) { (void)hc_heap_profile_dump(reason); }
hc_public int IsHeapProfilerRunning(void) { return hc_heap_profile_running(); }
hc_public char *GetHeapProfile(void) { return hc_heap_profile_get(); }

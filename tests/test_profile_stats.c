/* test_profile_stats.c - sampled heap profiles estimate the live heap.
 *
 * Runs with a small sampling interval and a fixed sampler seed
 * (HEAPCHECK_SAMPLE_PARAMETER, HEAPCHECK_SAMPLE_SEED; it re-executes itself
 * with them when unset), so the result is the same on every run.  Five call
 * sites build known live heaps of megabytes each, with sizes from 100 B to
 * 1 MiB, while a sixth site churns through far more memory than is live and
 * the sites free part of what they allocated.  The profile is read back and
 * un-sampled exactly as google-pprof does for `heap_v2/<rate>` (each line
 * scaled by 1 / (1 - exp(-avg/rate)), computed here with libm), and the
 * estimate per site must be within 15% of the truth, the total within 10%.
 * Allocated totals (the bracketed columns) are checked the same way.
 *
 * Call sites are told apart by the first frame of each stack, which lies in
 * the site function; each site function has a section of its own.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "heapcheck.h"
#include "hc_check.h"

#define INTERVAL "16384"
#define SEED "20240917"

enum { NSITES = 6, CHURN = 5 };
static const char *const site_name[NSITES + 1] = {"small",  "medium", "large", "huge",
                                                 "mixed",  "churn",  "other"};

#define SITE(sec) __attribute__((noinline, used, section(sec)))
extern char __start_hcst_0[], __stop_hcst_0[], __start_hcst_1[], __stop_hcst_1[];
extern char __start_hcst_2[], __stop_hcst_2[], __start_hcst_3[], __stop_hcst_3[];
extern char __start_hcst_4[], __stop_hcst_4[], __start_hcst_5[], __stop_hcst_5[];
/* The store after the call keeps malloc from being a tail call, so its
 * return address lies in the site function. */
static void *volatile last;
SITE("hcst_0") void *alloc_small(size_t n) { return last = malloc(n); }
SITE("hcst_1") void *alloc_medium(size_t n) { return last = malloc(n); }
SITE("hcst_2") void *alloc_large(size_t n) { return last = malloc(n); }
SITE("hcst_3") void *alloc_huge(size_t n) { return last = malloc(n); }
SITE("hcst_4") void *alloc_mixed(size_t n) { return last = malloc(n); }
SITE("hcst_5") void *alloc_churn(size_t n) { return last = malloc(n); }
static void *(*const site_fn[NSITES])(size_t) = {alloc_small, alloc_medium, alloc_large,
                                                alloc_huge,  alloc_mixed,  alloc_churn};

static int site_of(unsigned long pc) {
  char *p = (char *)pc;
  char *lo[NSITES] = {__start_hcst_0, __start_hcst_1, __start_hcst_2, __start_hcst_3, __start_hcst_4, __start_hcst_5};
  char *hi[NSITES] = {__stop_hcst_0, __stop_hcst_1, __stop_hcst_2, __stop_hcst_3, __stop_hcst_4, __stop_hcst_5};
  for (int i = 0; i < NSITES; i++)
    if (p > lo[i] && p <= hi[i]) return i;
  return NSITES;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}
static size_t uniform(size_t lo, size_t hi) { return lo + (size_t)(rnd() % (hi - lo + 1)); }

/* log-uniform-ish: a random octave between 64 B and 1 MiB, uniform in it */
static size_t mixed_size(void) {
  unsigned k = (unsigned)uniform(6, 19);
  size_t s = ((size_t)1 << k) + (size_t)(rnd() % ((size_t)1 << k));
  if (s < 100) s = 100;
  if (s > ((size_t)1 << 20)) s = (size_t)1 << 20;
  return s;
}

static size_t site_size(int site) {
  switch (site) {
    case 0: return uniform(100, 200);
    case 1: return uniform(1000, 8000);
    case 2: return uniform(16 << 10, 128 << 10);
    case 3: return uniform(256 << 10, 1 << 20);
    case 4: return mixed_size();
    default: return uniform(100, 64 << 10);
  }
}

typedef struct obj {
  void *p;
  size_t size;
} obj_t;
typedef struct site {
  obj_t *live;
  size_t n, cap;
  double live_bytes, alloc_bytes, live_objs, alloc_objs;
} site_t;
static site_t sites[NSITES];

static void do_alloc(int s) {
  site_t *st = &sites[s];
  size_t size = site_size(s);
  void *p = site_fn[s](size);
  if (!p) {
    fprintf(stderr, "out of memory\n");
    exit(1);
  }
  memset(p, 0x5a, size < 64 ? size : 64);
  if (st->n == st->cap) {
    st->cap = st->cap ? st->cap * 2 : 1024;
    st->live = realloc(st->live, st->cap * sizeof *st->live);
  }
  st->live[st->n++] = (obj_t){p, size};
  st->live_bytes += (double)size;
  st->alloc_bytes += (double)size;
  st->live_objs++;
  st->alloc_objs++;
}

static void do_free_random(int s) {
  site_t *st = &sites[s];
  if (!st->n) return;
  size_t i = (size_t)(rnd() % st->n);
  free(st->live[i].p);
  st->live_bytes -= (double)st->live[i].size;
  st->live_objs--;
  st->live[i] = st->live[--st->n];
}

/* Live target per site at the end, in MiB; each site allocates twice that. */
static const double target_mib[NSITES] = {8, 8, 10, 16, 12, 0};

static void workload(void) {
  const int rounds = 100;
  for (int r = 1; r <= rounds; r++) {
    for (int s = 0; s < CHURN; s++) {
      site_t *st = &sites[s];
      double goal_alloc = 2 * target_mib[s] * 1048576.0 * r / rounds;
      double goal_live = target_mib[s] * 1048576.0 * r / rounds;
      while (st->alloc_bytes < goal_alloc) do_alloc(s);
      while (st->live_bytes > goal_live + 0.5 * 1048576.0 && st->n > 1) do_free_random(s);
    }
    /* churn: 3 MiB per round through a ring of 200 objects */
    site_t *c = &sites[CHURN];
    double stop = c->alloc_bytes + 3 * 1048576.0;
    while (c->alloc_bytes < stop) {
      if (c->n >= 200) do_free_random(CHURN);
      do_alloc(CHURN);
    }
  }
}

typedef struct est {
  double live_objs, live_bytes, alloc_objs, alloc_bytes;
  double raw_samples;
} est_t;

/* pprof's ReadHeapProfile, version-2 branch. */
static void unsample(double *n, double *s, double rate) {
  if (*n == 0) return;
  double ratio = (*s / *n) / rate;
  double scale = 1 / (1 - exp(-ratio));
  *n *= scale;
  *s *= scale;
}

static int parse(const char *text, est_t *e, double *rate_out) {
  unsigned long long h[4], rate = 0;
  if (sscanf(text, "heap profile: %llu: %llu [%llu: %llu] @ heap_v2/%llu", &h[0], &h[1], &h[2], &h[3], &rate) != 5 ||
      rate == 0) {
    fprintf(stderr, "bad header: %.80s\n", text);
    return -1;
  }
  *rate_out = (double)rate;
  int lines = 0;
  for (const char *l = strchr(text, '\n'); l && *++l && *l != '\n'; l = strchr(l, '\n')) {
    unsigned long long c[4];
    unsigned long pc;
    int used = 0;
    if (sscanf(l, "%llu: %llu [%llu: %llu] @%n", &c[0], &c[1], &c[2], &c[3], &used) != 4 ||
        sscanf(l + used, " 0x%lx", &pc) != 1) {
      fprintf(stderr, "bad line: %.80s\n", l);
      return -1;
    }
    double n1 = (double)c[0], s1 = (double)c[1], n2 = (double)c[2], s2 = (double)c[3];
    est_t *x = &e[site_of(pc)];
    x->raw_samples += n1;
    unsample(&n1, &s1, (double)rate);
    unsample(&n2, &s2, (double)rate);
    x->live_objs += n1;
    x->live_bytes += s1;
    x->alloc_objs += n2;
    x->alloc_bytes += s2;
    lines++;
  }
  return lines;
}

/* The libm-free un-sampling estimate (profile_snapshot.c) against libm, from
 * 1 byte (where 1 - e^-x cancels) to far beyond the interval. */
double hci_profile_estimate(size_t size, uint64_t weight);
static void check_estimate(void) {
  double worst = 0, at = 0;
  for (double s = 1; s < 1e10; s = s * 1.01 + 1) {
    size_t size = (size_t)s;
    double w = 524288, want = (double)size / -expm1(-(double)size / w);
    double err = fabs(hci_profile_estimate(size, (uint64_t)w) - want) / want;
    if (err > worst) worst = err, at = (double)size;
  }
  CHECK(worst < 1e-12, "estimate off by %.3g (relative) at %.0f bytes", worst, at);
  CHECK(hci_profile_estimate(1000, 1) == 1000, "interval 1: every object stands for itself");
}

static double rel(double est, double truth) { return truth > 0 ? (est - truth) / truth : (est > 0 ? 1 : 0); }

int main(int argc, char **argv) {
  (void)argc;
  const char *p = getenv("HEAPCHECK_SAMPLE_PARAMETER"), *sd = getenv("HEAPCHECK_SAMPLE_SEED");
  if (!p || strcmp(p, INTERVAL) != 0 || !sd || strcmp(sd, SEED) != 0) {
    setenv("HEAPCHECK_SAMPLE_PARAMETER", INTERVAL, 1);
    setenv("HEAPCHECK_SAMPLE_SEED", SEED, 1);
    unsetenv("HEAPCHECK");
    unsetenv("HEAPPROFILE");
    execv("/proc/self/exe", argv);
    perror("execv");
    return 1;
  }
  check_estimate();
  workload();
  char *text = hc_heap_profile_get();
  if (!text) {
    fprintf(stderr, "FAIL: hc_heap_profile_get returned NULL\n");
    return 1;
  }
  est_t e[NSITES + 1];
  memset(e, 0, sizeof e);
  double rate = 0;
  int lines = parse(text, e, &rate);
  CHECK(lines > 0, "no profile lines");
  CHECK(rate == atof(INTERVAL), "header rate %.0f, want %s", rate, INTERVAL);

  double tot_est = 0, tot_truth = 0;
  printf("%-7s %12s %12s %7s %9s %12s %12s %7s\n", "site", "live", "estimate", "error", "samples", "allocated",
         "estimate", "error");
  for (int s = 0; s < NSITES; s++) {
    site_t *st = &sites[s];
    double err = rel(e[s].live_bytes, st->live_bytes), aerr = rel(e[s].alloc_bytes, st->alloc_bytes);
    printf("%-7s %12.0f %12.0f %+6.1f%% %9.0f %12.0f %12.0f %+6.1f%%\n", site_name[s], st->live_bytes,
           e[s].live_bytes, 100 * err, e[s].raw_samples, st->alloc_bytes, e[s].alloc_bytes, 100 * aerr);
    tot_est += e[s].live_bytes;
    tot_truth += st->live_bytes;
    if (s != CHURN) { /* the churn site has only ~200 objects live: too few samples to judge */
      CHECK(fabs(err) <= 0.15, "site %s: live estimate %.0f vs %.0f (%+.1f%%)", site_name[s], e[s].live_bytes,
            st->live_bytes, 100 * err);
      double oerr = rel(e[s].live_objs, st->live_objs);
      CHECK(fabs(oerr) <= 0.15, "site %s: object estimate %.0f vs %.0f (%+.1f%%)", site_name[s], e[s].live_objs,
            st->live_objs, 100 * oerr);
    }
    CHECK(fabs(aerr) <= 0.15, "site %s: allocated estimate %.0f vs %.0f (%+.1f%%)", site_name[s], e[s].alloc_bytes,
          st->alloc_bytes, 100 * aerr);
  }
  /* Everything else live (libc, this test's own arrays) is small next to the sites. */
  double terr = rel(tot_est + e[NSITES].live_bytes, tot_truth);
  printf("%-7s %12.0f %12.0f %+6.1f%%   (other call sites: %.0f bytes)\n", "total", tot_truth,
         tot_est + e[NSITES].live_bytes, 100 * terr, e[NSITES].live_bytes);
  CHECK(fabs(terr) <= 0.10, "total live estimate off by %+.1f%%", 100 * terr);

  hc_stats_t st;
  hc_get_stats(&st);
  CHECK(st.sampled_objects > 100, "only %zu live samples", st.sampled_objects);
  free(text);
  fflush(stdout);
  hc_report_top(1, 3);
  printf("%s: %d failures\n", failures ? "FAIL" : "PASS", failures);
  return failures != 0;
}

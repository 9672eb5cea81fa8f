/* heap_top.c - hc_report_top: the call sites holding the most live heap.
 *
 * Two lists from one snapshot (profile.c): the top N stacks by estimated
 * live bytes and the top N by estimated live objects.  Each entry shows the
 * estimate, its share of the total, how many samples it rests on, the age of
 * its oldest live sample (a leak suspect grows old; churn stays young) and
 * the symbolized allocation stack.
 *
 * Runs with the world going and no allocator lock held (the symbolizer
 * takes the loader lock and may call the C++ demangler, which mallocs), so
 * never from inside malloc or a signal handler.  Output goes straight to fd
 * with hci_fdprintf (one write per line); the snapshot and the ranking live
 * in the metadata arena.
 */
#include "hc_profiler.h"
#include "hc_symbolize.h"
#include "heapcheck.h"

#define TOP_FRAMES 16 /* frames printed per site */

/* "123 B", "4.5 KiB", "12.3 MiB", "1.2 GiB" without floating-point printf. */
static void fmt_bytes(char *buf, size_t size, double v) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (v >= 1024 * 0.95 && u < 4) {
    v /= 1024;
    u++;
  }
  if (u == 0) {
    hci_snprintf(buf, size, "%llu B", (unsigned long long)(v + 0.5));
    return;
  }
  unsigned long long t = (unsigned long long)(v * 10 + 0.5);
  hci_snprintf(buf, size, "%llu.%llu %s", t / 10, t % 10, unit[u]);
}

/* "3.250 s", "12 ms" */
static void fmt_age(char *buf, size_t size, uint64_t ns) {
  if (ns >= 1000000000ull)
    hci_snprintf(buf, size, "%llu.%03llu s", (unsigned long long)(ns / 1000000000ull),
                 (unsigned long long)(ns / 1000000ull % 1000));
  else hci_snprintf(buf, size, "%llu ms", (unsigned long long)(ns / 1000000ull));
}

static unsigned long long pct10(double part, double whole) {
  return whole > 0 ? (unsigned long long)(part * 1000 / whole + 0.5) : 0;
}

/* hci_stack_lines to a file descriptor. */
static void fd_line(void *fd, const char *line) { hci_fdprintf(*(int *)fd, "%s", line); }

static void print_site(int fd, int rank, const hci_prof_site_t *l, const hci_prof_snap_t *s, double tot_bytes,
                       double tot_n, uint64_t now) {
  char bytes[32], age[40];
  fmt_bytes(bytes, sizeof bytes, l->est_bytes);
  if (l->oldest_ns && now > l->oldest_ns) {
    char a[32];
    fmt_age(a, sizeof a, now - l->oldest_ns);
    hci_snprintf(age, sizeof age, "oldest %s", a);
  } else {
    hci_snprintf(age, sizeof age, "age unknown");
  }
  unsigned long long pb = pct10(l->est_bytes, tot_bytes), pn = pct10(l->est_n, tot_n);
  if (s->exact)
    hci_fdprintf(fd, "#%d: %s (%llu.%llu%%) in %llu objects (%llu.%llu%%), %s\n", rank, bytes, pb / 10, pb % 10,
                 (unsigned long long)l->n, pn / 10, pn % 10, age);
  else
    hci_fdprintf(fd, "#%d: ~%s (%llu.%llu%%) in ~%llu objects (%llu.%llu%%) from %llu samples, %s\n", rank, bytes,
                 pb / 10, pb % 10, (unsigned long long)(l->est_n + 0.5), pn / 10, pn % 10,
                 (unsigned long long)l->n, age);
  int d = hci_stack_lines(l->stack_id, TOP_FRAMES, fd_line, &fd);
  if (d > TOP_FRAMES) hci_fdprintf(fd, "    ... %d more frames\n", d - TOP_FRAMES);
}

/* Indices of the sites with live objects, ranked by estimated count
 * (insertion into a sorted prefix: n is small). */
static size_t rank_by_count(const hci_prof_snap_t *s, uint32_t *idx, size_t n) {
  size_t k = 0;
  for (size_t i = 0; i < s->n; i++) {
    if (!s->v[i].n) continue;
    double c = s->v[i].est_n;
    if (k == n && c <= s->v[idx[k - 1]].est_n) continue;
    size_t j = k < n ? k++ : n - 1;
    while (j > 0 && s->v[idx[j - 1]].est_n < c) {
      idx[j] = idx[j - 1];
      j--;
    }
    idx[j] = (uint32_t)i;
  }
  return k;
}

hc_public void hc_report_top(int fd, int n) {
  if (n <= 0) n = 10;
  hci_ensure_init();
  hci_prof_snap_t s;
  if (hci_profile_snapshot(&s, true) < 0) {
    hci_fdprintf(fd, "heapcheck: top: out of memory\n");
    return;
  }
  uint64_t now = hci_os_now_ns();
  double tot_bytes = 0, tot_n = 0;
  size_t sites = 0;
  for (size_t i = 0; i < s.n; i++) {
    if (!s.v[i].n) continue;
    sites++;
    tot_bytes += s.v[i].est_bytes;
    tot_n += s.v[i].est_n;
  }
  char tb[32];
  fmt_bytes(tb, sizeof tb, tot_bytes);
  if (s.exact)
    hci_fdprintf(fd, "heapcheck: %s live in %llu objects from %zu call sites (exact)\n", tb,
                 (unsigned long long)(tot_n + 0.5), sites);
  else
    hci_fdprintf(fd,
                 "heapcheck: ~%s live in ~%llu objects from %zu call sites "
                 "(estimated from %llu samples, 1 per %llu bytes on average)\n",
                 tb, (unsigned long long)(tot_n + 0.5), sites, (unsigned long long)s.samples,
                 (unsigned long long)s.rate);
  size_t shown = (size_t)n < sites ? (size_t)n : sites;
  if (shown == 0) {
    hci_profile_snapshot_free(&s);
    return;
  }
  hci_fdprintf(fd, "heapcheck: top %zu call sites by live bytes:\n", shown);
  int rank = 0;
  for (size_t i = 0; i < s.n && rank < (int)shown; i++)
    if (s.v[i].n) print_site(fd, ++rank, &s.v[i], &s, tot_bytes, tot_n, now);
  size_t ib = shown * sizeof(uint32_t);
  uint32_t *idx = hci_meta_alloc(ib);
  if (idx) {
    size_t k = rank_by_count(&s, idx, shown);
    hci_fdprintf(fd, "heapcheck: top %zu call sites by live objects:\n", k);
    for (size_t i = 0; i < k; i++) print_site(fd, (int)i + 1, &s.v[idx[i]], &s, tot_bytes, tot_n, now);
    hci_meta_free(idx, ib);
  }
  hci_profile_snapshot_free(&s);
}

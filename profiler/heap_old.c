/* heap_old.c - old allocations in a running program, from the live samples
 * (poireau's workflow, in process; docs/profiling.md, "Old allocations").
 *
 *   HEAPCHECK_REPORT=old:AGE[:PERIOD]  every PERIOD, the live sampled
 *                                      allocations older than AGE, per stack
 *   HEAPCHECK_LIVE_SIGNAL=N            on signal N: every live sample, per stack
 *   HEAPCHECK_ACK_SIGNAL=N             on signal N: the allocations old now are
 *                                      acknowledged; later "old" reports show
 *                                      only those allocated after them
 *   HEAPCHECK_REPORT=peak              a snapshot of the live samples each time
 *                                      the estimated heap passes its high-water
 *                                      mark by 10% (and 1 MiB)
 * Each report goes to the report stream (stderr or HEAPCHECK_LOG_PATH) and,
 * with json:FILE, to the JSON file (schema heapcheck-live-samples/1).
 *
 * Where the work runs: reports are symbolized, which cannot happen in a
 * signal handler or inside malloc (the HEAPPROFILESIGNAL dump runs in the
 * sampled malloc path, which is fine for raw addresses but not for names).
 * So, as for HEAPPROFILESIGNAL, a handler (and the sample path for "peak")
 * only sets a flag; the work is deferred to a reporter thread the library
 * starts from its constructor when one of these is asked for.  The thread
 * sleeps on a semaphore (sem_post is async-signal-safe) with a timeout at
 * the next period; it blocks every signal but the real-time ones (the leak
 * checker stops threads with one).
 * A forked child has no reporter thread (documented).
 *
 * Locks: the sample lock (hci_heap_samples_lock) while copying the samples (no allocation under
 * it: the table is sized before), then none but the symbolizer's.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hc_profiler.h"
#include "hc_symbolize.h"

#define OLD_FRAMES 16

enum { REQ_LIVE = 1, REQ_ACK = 2, REQ_PEAK = 4 };

static struct {
  bool on;                      /* the reporter thread runs */
  uint64_t age_ns, period_ns;   /* old:AGE:PERIOD (0 = no periodic report) */
  bool peak;
  sem_t wake;
  _Atomic int req;              /* REQ_* from handlers and the sample path */
  uint64_t ack_cut;             /* samples allocated at or before this are acknowledged */
  _Atomic int64_t peak_mark;    /* estimated in-use bytes of the last peak snapshot */
  unsigned seq;
} O;
HC_PRIVATE_STATE(O);

typedef struct old_site {
  uint32_t stack_id;
  uint64_t samples;
  double est_bytes, est_n;
  uint64_t oldest, youngest;    /* allocation times (ns) */
} old_site_t;

// ---- collecting ----

static bool before_site(const old_site_t *x, const old_site_t *y) {
  if (x->est_bytes != y->est_bytes) return x->est_bytes > y->est_bytes;
  return x->stack_id < y->stack_id;
}

/* Shell sort, largest estimate first (no qsort: it may allocate). */
static void sort_sites(old_site_t *v, size_t n) {
  for (size_t gap = n / 2; gap > 0; gap /= 2)
    for (size_t i = gap; i < n; i++) {
      old_site_t t = v[i];
      size_t j = i;
      for (; j >= gap && before_site(&t, &v[j - gap]); j -= gap) v[j] = v[j - gap];
      v[j] = t;
    }
}

typedef struct collect_ctx {
  old_site_t *t;
  size_t cap, used;
  uint64_t after, before;
  uint64_t *total_samples;
  bool overflow;
} collect_ctx_t;

static bool collect_sample(void *arg, const hci_heap_sample_t *s) {
  collect_ctx_t *c = arg;
  old_site_t *t = c->t;
  uint64_t at = s->alloc_time;
  if (at <= c->after || at > c->before) return true;
  uint32_t id = s->stack_id;
  size_t i = (id * 2654435761u) & (c->cap - 1);
  while (t[i].samples && t[i].stack_id != id) i = (i + 1) & (c->cap - 1);
  if (!t[i].samples) {
    if ((c->used + 1) * 4 > c->cap * 3) {
      c->overflow = true;
      return false;
    }
    c->used++;
    t[i].stack_id = id;
    t[i].oldest = t[i].youngest = at;
  }
  t[i].samples++;
  double est = s->est ? (double)s->est : (double)s->size;
  t[i].est_bytes += est;
  t[i].est_n += s->size ? est / (double)s->size : 1;
  if (at < t[i].oldest) t[i].oldest = at;
  if (at > t[i].youngest) t[i].youngest = at;
  (*c->total_samples)++;
  return true;
}

/* The live samples allocated in (after, before], per stack, sorted by
 * estimated bytes; *n sites, *map bytes to free.  NULL when there are none
 * or memory ran out (*n = 0). */
static old_site_t *collect(uint64_t after, uint64_t before, size_t *n, size_t *map, uint64_t *total_samples) {
  *n = 0;
  *total_samples = 0;
  size_t cap = 64;
  while (cap < 2 * (hci_depot_count() + 64)) cap *= 2;
  for (;;) {
    size_t bytes = cap * sizeof(old_site_t);
    old_site_t *t = hci_meta_alloc(bytes);
    if (!t) return NULL;
    collect_ctx_t c = {t, cap, 0, after, before, total_samples, false};
    hci_heap_samples_lock();
    hci_heap_for_each_sample(collect_sample, &c);
    hci_heap_samples_unlock();
    if (c.overflow) {
      hci_meta_free(t, bytes);
      cap *= 4;
      *total_samples = 0;
      continue;
    }
    size_t k = 0;
    for (size_t i = 0; i < cap; i++)
      if (t[i].samples) t[k++] = t[i];
    sort_sites(t, k);
    *n = k;
    *map = bytes;
    return t;
  }
}

// ---- printing ----

static void fmt_age(char *buf, size_t size, uint64_t ns) {
  uint64_t s = ns / 1000000000ull;
  if (s >= 3600) hci_snprintf(buf, size, "%lluh%02llum", (unsigned long long)(s / 3600), (unsigned long long)(s / 60 % 60));
  else if (s >= 60) hci_snprintf(buf, size, "%llum%02llus", (unsigned long long)(s / 60), (unsigned long long)(s % 60));
  else hci_snprintf(buf, size, "%llu.%03llus", (unsigned long long)s, (unsigned long long)(ns / 1000000ull % 1000));
}

/* hci_stack_lines to a buffered writer. */
static void out_line(void *o, const char *line) { hci_out_puts(o, line); }

static void print_text(const char *what, const char *head, const old_site_t *v, size_t n, uint64_t now, double total) {
  int fd = hci_log_stream_fd();
  if (fd < 0) return;
  hci_out_t *o = hci_out_new(fd);
  if (!o) return;
  hci_out_printf(o, "heapcheck: %s: %s: ~%llu bytes in %zu call sites\n", what, head, (unsigned long long)(total + 0.5), n);
  for (size_t i = 0; i < n; i++) {
    char a1[32], a2[32];
    fmt_age(a1, sizeof a1, now - v[i].oldest);
    fmt_age(a2, sizeof a2, now - v[i].youngest);
    hci_out_printf(o, "#%zu: ~%llu bytes in ~%llu objects from %llu samples, ages %s to %s\n", i + 1,
                   (unsigned long long)(v[i].est_bytes + 0.5), (unsigned long long)(v[i].est_n + 0.5),
                   (unsigned long long)v[i].samples, a2, a1);
    hci_stack_lines(v[i].stack_id, OLD_FRAMES, out_line, o);
    hci_out_flush(o);
  }
  hci_out_flush(o);
  hci_os_unmap(o, sizeof *o);
}

static void print_json(const char *kind, const old_site_t *v, size_t n, uint64_t now, double total, uint64_t samples) {
  hci_out_t *o = hci_fmt_json_open(kind);
  if (!o) return;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  hci_out_puts(o, "{\"schema\":\"heapcheck-live-samples/1\",\"tool\":\"heapcheck\",\"program\":");
  hci_out_json_str(o, hci_prog_name());
  hci_out_printf(o, ",\"pid\":%d,\"time\":%lld,\"kind\":\"%s\",\"seq\":%u,\"min_age_ms\":%llu,", (int)getpid(),
                 (long long)ts.tv_sec, kind, O.seq, (unsigned long long)(strcmp(kind, "old") == 0 ? O.age_ns / 1000000 : 0));
  hci_out_printf(o, "\"totals\":{\"est_bytes\":%llu,\"samples\":%llu,\"sites\":%zu},\"sites\":[",
                 (unsigned long long)(total + 0.5), (unsigned long long)samples, n);
  for (size_t i = 0; i < n; i++) {
    hci_out_printf(o,
                   "%s{\"stack_id\":%u,\"samples\":%llu,\"est_bytes\":%llu,\"est_objects\":%llu,"
                   "\"oldest_age_ms\":%llu,\"youngest_age_ms\":%llu,\"frames\":",
                   i ? "," : "", v[i].stack_id, (unsigned long long)v[i].samples,
                   (unsigned long long)(v[i].est_bytes + 0.5), (unsigned long long)(v[i].est_n + 0.5),
                   (unsigned long long)((now - v[i].oldest) / 1000000), (unsigned long long)((now - v[i].youngest) / 1000000));
    hci_json_frames(o, v[i].stack_id);
    hci_out_puts(o, "}");
    if (o->len > sizeof o->buf / 2) hci_out_flush(o);
  }
  hci_out_puts(o, "]}\n");
  hci_fmt_json_close(o);
}

/* One report: kind "old" (older than AGE, not acknowledged), "live" or "peak". */
static void report(const char *kind) {
  uint64_t now = hci_os_now_coarse_ns();
  bool old = strcmp(kind, "old") == 0;
  uint64_t after = old ? O.ack_cut : 0, before = old ? (now > O.age_ns ? now - O.age_ns : 0) : now;
  size_t n = 0, map = 0;
  uint64_t samples;
  old_site_t *v = before > after ? collect(after, before, &n, &map, &samples) : NULL;
  if (!v) samples = 0;
  double total = 0;
  for (size_t i = 0; i < n; i++) total += v[i].est_bytes;
  O.seq++;
  char head[96], a[32];
  if (old) {
    fmt_age(a, sizeof a, O.age_ns);
    hci_snprintf(head, sizeof head, "live sampled allocations older than %s%s", a,
                 O.ack_cut ? " (not acknowledged)" : "");
  } else {
    hci_snprintf(head, sizeof head, "%s", strcmp(kind, "peak") == 0 ? "new high-water mark, all live samples"
                                                                     : "all live samples");
  }
  print_text(old ? "old allocations" : kind, head, v, n, now, total);
  if (hci_report_opts()->json) print_json(kind, v, n, now, total, samples);
  if (v) hci_meta_free(v, map);
}

// ---- the reporter thread ----

static void *reporter(void *arg) {
  (void)arg;
  /* The program's signals are not ours to take (a program may sigwait for
   * them in a thread of its own); real-time signals stay open, the leak
   * checker stops threads with one (HEAP_CHECK_STOP_SIGNAL, SIGRTMAX-3). */
  sigset_t all;
  sigfillset(&all);
  for (int s = SIGRTMIN; s <= SIGRTMAX; s++) sigdelset(&all, s);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  uint64_t next = O.period_ns ? hci_os_now_ns() + O.period_ns : 0;
  for (;;) {
    int rc;
    if (next) {
      struct timespec ts;
      clock_gettime(CLOCK_MONOTONIC, &ts);
      uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
      uint64_t wait = next > hci_os_now_ns() ? next - hci_os_now_ns() : 0;
      now += wait;
      ts.tv_sec = (time_t)(now / 1000000000ull);
      ts.tv_nsec = (long)(now % 1000000000ull);
      rc = sem_clockwait(&O.wake, CLOCK_MONOTONIC, &ts);
    } else {
      rc = sem_wait(&O.wake);
    }
    if (rc != 0 && errno == EINTR) continue;
    int req = atomic_exchange(&O.req, 0);
    if (req & REQ_LIVE) report("live");
    if (req & REQ_PEAK) report("peak");
    if (req & REQ_ACK) {
      O.ack_cut = hci_os_now_coarse_ns();
      O.ack_cut = O.ack_cut > O.age_ns ? O.ack_cut - O.age_ns : 0;
      char a[32];
      fmt_age(a, sizeof a, O.age_ns);
      int fd = hci_log_stream_fd();
      if (fd >= 0)
        hci_fdprintf(fd, "heapcheck: old allocations: the ones older than %s now are acknowledged; later reports show "
                         "only newer ones\n", a);
    }
    if (next && hci_os_now_ns() >= next) {
      report("old");
      next += O.period_ns;
      if (next < hci_os_now_ns()) next = hci_os_now_ns() + O.period_ns;
    }
  }
  return NULL;
}

static int sig_live, sig_ack;

static void handler(int sig) {
  int saved = errno;
  atomic_fetch_or(&O.req, sig == sig_live ? REQ_LIVE : REQ_ACK);
  sem_post(&O.wake);
  errno = saved;
}

static int install(hci_opt_t var) {
  long long sig = hci_opt_int(var);
  if (sig <= 0) return 0;
  if (sig == SIGKILL || sig == SIGSTOP) {
    hci_warn("%s=%lld cannot be used; ignored", hci_options[var].name, sig);
    return 0;
  }
  if (!hci_os_claim_signal((int)sig, handler)) {
    hci_warn("%s: signal %lld is already in use; ignored", hci_options[var].name, sig);
    return 0;
  }
  return (int)sig;
}

void hci_old_start(void) {
  static bool started;
  if (started) return;
  started = true;
  const hci_report_opts_t *ro = hci_report_opts();
  O.age_ns = ro->old_age_ns;
  O.period_ns = ro->old_period_ns;
  O.peak = ro->peak;
  bool want_live = hci_opt_str(HCO_HEAPCHECK_LIVE_SIGNAL) != NULL, want_ack = hci_opt_str(HCO_HEAPCHECK_ACK_SIGNAL) != NULL;
  if (!O.period_ns && !O.peak && !want_live && !want_ack) return;
  if (want_ack && !O.age_ns) {
    hci_warn("HEAPCHECK_ACK_SIGNAL needs HEAPCHECK_REPORT=old:AGE[:PERIOD]; ignored");
    want_ack = false;
  }
  if (hci_alloc_recording() && (O.period_ns || O.peak))
    hci_warn("HEAPCHECK_REPORT=old/peak: the checker is on, so nothing is sampled and the reports will be empty");
  if (sem_init(&O.wake, 0, 0) != 0) return;
  hci_log_stream_open();
  if (want_live) sig_live = install(HCO_HEAPCHECK_LIVE_SIGNAL);
  if (want_ack) sig_ack = install(HCO_HEAPCHECK_ACK_SIGNAL);
  if (!O.period_ns && !O.peak && !sig_live && !sig_ack) return;
  atomic_store(&O.peak_mark, 1 << 20);
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
  pthread_t t;
  if (pthread_create(&t, &at, reporter, NULL) != 0) {
    hci_warn("HEAPCHECK_REPORT=old/peak: cannot start the reporter thread; no reports");
    return;
  }
  pthread_attr_destroy(&at);
  O.on = true;
}

/* From the sampled malloc path (hci_profiler_on_sample): no lock, no
 * malloc; a new high-water mark wakes the reporter. */
void hci_old_on_sample(void) {
  if (!O.on || !O.peak) return;
  int64_t inuse = hci_profile_inuse_estimate();
  int64_t mark = atomic_load_explicit(&O.peak_mark, memory_order_relaxed);
  if (inuse <= mark + mark / 10) return;
  if (!atomic_compare_exchange_strong(&O.peak_mark, &mark, inuse)) return;
  atomic_fetch_or(&O.req, REQ_PEAK);
  sem_post(&O.wake);
}

void hci_old_fork_child(void) { O.on = false; }

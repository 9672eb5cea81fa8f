/* profile.c - heap profiles from sampled stacks: the gperftools text format,
 * HEAPPROFILE dumps, hc_heap_profile_* and gperftools' HeapProfiler* calls.
 *
 * Data:
 *  - live samples: the sampled objects of the heap view (hci_heap_for_each_sample), each with its
 *    stack id, requested size, weight (the mean sampling interval it was
 *    taken with) and allocation time;
 *  - cumulative sample counters per (stack id, size bin), kept by
 *    hci_profile_note_alloc in profile_snapshot.c;
 *  - with the checker on every object has a record: the snapshot walks all
 *    of them (hci_heap_for_each_object) and the profile is exact.
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
 * the sample lock -> tab.lock (counters) -> metadata arena.  tab.lock is
 * taken in malloc's sampled slow path with no allocator lock held; the two
 * are never nested the other way.  Fork: the runtime's one handler
 * (runtime/init.c) takes prof.lock and tab.lock in that order.
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
#include <strings.h>
#include <unistd.h>

#include "gperftools/heap-profiler.h"
#include "hc_profiler.h"
#include "heapcheck.h"

extern char **environ;

// ---- the writer: buffered, to a file descriptor or to memory ----

#define PW_BUF ((size_t)32 << 10)
typedef struct pw {
  int fd;          /* >= 0: write here; < 0: collect in mem */
  bool failed;
  int err;         /* errno of the first failure */
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
    int err = hci_write_err(w->fd, w->buf, w->len); /* never SIGPIPE */
    if (err) {
      w->failed = true;
      w->err = err;
    }
  } else {
    if (w->mem_len + w->len + 1 > w->mem_cap) {
      size_t cap = w->mem_cap ? w->mem_cap : PW_BUF;
      while (cap < w->mem_len + w->len + 1) cap *= 2;
      char *m = hci_meta_alloc(cap);
      if (!m) {
        w->failed = true;
        w->err = ENOMEM;
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
  int fd = hci_os_open_proc("maps", O_RDONLY);
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
  if (s->exact || n == 0 || hci_profile_pure(n, wsum, s->rate)) return;
  double avg = (double)bytes / (double)n;
  double per = hci_profile_estimate_d(avg, (double)s->rate);
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
  if (fd < 0) {
    errno = EBADF;
    return -1;
  }
  hci_ensure_init();
  pw_t *w = pw_new(fd);
  if (!w) {
    errno = ENOMEM;
    return -1;
  }
  int rc = write_profile(w);
  int err = w->err;
  pw_delete(w);
  if (rc < 0) errno = err ? err : EIO; /* the reason, for the caller's message */
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
  uint64_t free_base;             /* free_est_total at start */
  uint64_t last_alloc;            /* alloc_est_total at the last dump */
  uint64_t last_free;             /* free_est_total at the last dump */
  int64_t high_water;             /* in-use bytes at the last high-water dump */
  uint64_t last_time_ns;
  long long alloc_interval, inuse_interval, time_interval; /* 0 = off */
  long long dealloc_interval;     /* HEAP_PROFILE_DEALLOCATION_INTERVAL; 0 = off */
  bool warned_secure;
} prof = {.lock = HCI_LOCK_INIT(HC_RANK_PROFILER)};
HC_PRIVATE_STATE(prof);
static _Atomic int sig_pending;   /* HEAPPROFILESIGNAL arrived; the next sample dumps */
static bool options_read;
static int report_top_n;          /* HEAPCHECK_REPORT=top[:N] */

static int diag_fd(void) { return hci_log_stream_fd(); }

static int64_t inuse_now(void) {
  int64_t v = hci_profile_inuse_estimate();
  return v > 0 ? v : 0;
}

static int profile_formats;       /* HEAP_PROFILE_FORMAT: bit 0 svg, bit 1 folded */

/* The flame graph / folded stacks next to a dump (symbolized: only for dumps
 * made outside malloc). */
static void dump_graphs(const char *name) {
  size_t len = strlen(name);
  for (int k = 0; k < 2; k++) {
    if (!(profile_formats & (1 << k)) || len < 5) continue;
    char path[PATH_MAX + 8];
    hci_snprintf(path, sizeof path, "%.*s.%s", (int)(len - 5), name, k == 0 ? "svg" : "folded");
    int fd = hci_fmt_create(path, k == 0 ? "flame graph" : "folded stacks");
    if (fd < 0) continue;
    char title[PATH_MAX + 64];
    hci_snprintf(title, sizeof title, "Heap profile %s", name);
    int rc = hci_fg_write_profile(fd, k == 0, title);
    if (close(fd) != 0) rc = -1;
    if (rc < 0) hci_printf("Failed writing %s\n", path);
  }
}

/* requires: prof.lock, prof.running.  outside_malloc: the caller is the
 * program (an explicit dump, the exit dump), not malloc's sampled path. */
static int dump_work(const char *reason, bool outside_malloc) {
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
  /* 0600: a profile holds the process's memory map (addresses of every
   * module, the heap, the stacks), which is nobody else's business. */
  int fd = hci_create_own(name);
  int rc = -1, err = errno;
  if (fd >= 0) {
    rc = hc_heap_profile_write(fd);
    err = errno;
    if (close(fd) != 0 && rc == 0) {
      rc = -1;
      err = errno;
    }
    if (rc < 0) unlink(name); /* no half-written profile left behind */
  }
  if (rc < 0)
    hci_printf("Failed dumping heap profile to %s: %s. Numeric errno is %d\n", name, hci_errno_text(err), err);
  else if (outside_malloc && profile_formats) dump_graphs(name);
  prof.last_alloc = hci_profile_alloc_estimate();
  prof.last_free = hci_profile_free_estimate();
  int64_t inuse = inuse_now();
  if (inuse > prof.high_water) prof.high_water = inuse;
  prof.last_time_ns = hci_os_now_ns();
  return rc;
}

/* A dump runs on the library's own stack (base/own_stack.c): the sampled
 * malloc that triggers it may be on a 16 KiB thread stack. */
struct dump_call {
  const char *reason;
  bool outside_malloc;
  int rc;
};

static void dump_call(void *arg) {
  struct dump_call *c = arg;
  c->rc = dump_work(c->reason, c->outside_malloc);
}

static int dump_locked(const char *reason, bool outside_malloc) {
  struct dump_call c = {reason, outside_malloc, -1};
  hci_own_stack_call(dump_call, &c);
  return c.rc;
}

/* gperftools' MaybeDumpProfileLocked, on estimated totals. */
static bool dump_due(char *reason, size_t size) {
  uint64_t alloc = hci_profile_alloc_estimate();
  int64_t inuse = inuse_now();
  if (prof.alloc_interval > 0 && alloc >= prof.last_alloc + (uint64_t)prof.alloc_interval) {
    hci_snprintf(reason, size, "%llu MB allocated cumulatively, %lld MB currently in use",
                 (unsigned long long)((alloc - prof.alloc_base) >> 20), (long long)(inuse >> 20));
    return true;
  }
  /* gperftools checks this on every free; here at the next sample. */
  uint64_t freed = hci_profile_free_estimate();
  if (prof.dealloc_interval > 0 && freed >= prof.last_free + (uint64_t)prof.dealloc_interval) {
    hci_snprintf(reason, size, "%llu MB freed cumulatively, %lld MB currently in use",
                 (unsigned long long)((freed - prof.free_base) >> 20), (long long)(inuse >> 20));
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
  hci_old_on_sample(); /* HEAPCHECK_REPORT=peak */
  if (!atomic_load_explicit(&prof.running, memory_order_relaxed)) return;
  if (!hci_trylock(&prof.lock)) return; /* another thread is dumping */
  if (atomic_load_explicit(&prof.running, memory_order_relaxed)) {
    char reason[160];
    if (atomic_exchange_explicit(&sig_pending, 0, memory_order_acq_rel)) dump_locked("signal", false);
    else if (dump_due(reason, sizeof reason)) dump_locked(reason, false);
  }
  hci_unlock(&prof.lock);
}

/* HEAPPROFILESIGNAL: writing a profile takes locks the interrupted code may
 * hold, so the handler only raises a flag and makes this thread's next
 * allocation take a sample, whose slow path does the dump. */
static void on_profile_signal(int sig) {
  (void)sig;
  atomic_store_explicit(&sig_pending, 1, memory_order_release);
  hci_sampler_sample_next();
}

static void install_signal(void) {
  long long sig = hci_opt_int(HCO_HEAPPROFILESIGNAL);
  if (sig <= 0) return;
  if (sig == SIGKILL || sig == SIGSTOP) {
    hci_warn("HEAPPROFILESIGNAL=%lld cannot be caught; no signal-triggered dumps", sig);
    return;
  }
  /* A fault's signal: the handler returns to the faulting instruction,
   * which faults again, for ever (a program that crashed looped instead of
   * dying). */
  if (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP || sig == SIGSYS) {
    hci_warn("HEAPPROFILESIGNAL=%lld is a fault's signal; no signal-triggered dumps", sig);
    return;
  }
  if (!hci_os_claim_signal((int)sig, on_profile_signal)) {
    hci_warn("HEAPPROFILESIGNAL: signal %lld is already in use; no signal-triggered dumps", sig);
    return;
  }
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
  prof.alloc_base = prof.last_alloc = hci_profile_alloc_estimate();
  prof.free_base = prof.last_free = hci_profile_free_estimate();
  prof.high_water = 0;
  prof.last_time_ns = hci_os_now_ns();
  atomic_store_explicit(&prof.running, 1, memory_order_release);
  hci_unlock(&prof.lock);
  hci_printf("Starting tracking the heap\n");
  if (hci_sampler_interval() == 0 && !hci_alloc_recording())
    hci_warn("heap profiling with sampling off (HEAPCHECK_SAMPLE_PARAMETER=0): profiles will be empty");
  return 0;
}

// ---- init, fork, exit ----

void hci_profiler_fork_locks(hci_lock_fn *each) { each(&prof.lock); }

void hci_profiler_fork_child(void) {
  prof.pid = (int)getpid(); /* the child's files carry its own pid */
  hci_old_fork_child();
  atomic_store_explicit(&sig_pending, 0, memory_order_relaxed);
}

static void read_report_option(void) {
  report_top_n = hci_report_opts()->top_n;
  const char *f = hci_opt_str(HCO_HEAP_PROFILE_FORMAT);
  if (!f || !*f) return;
  for (const char *p = f; *p;) {
    const char *e = p;
    while (*e && *e != ',') e++;
    size_t n = (size_t)(e - p);
    if (n == 3 && strncasecmp(p, "svg", 3) == 0) profile_formats |= 1;
    else if (n == 6 && strncasecmp(p, "folded", 6) == 0) profile_formats |= 2;
    else if (!(n == 4 && strncasecmp(p, "heap", 4) == 0))
      hci_warn("HEAP_PROFILE_FORMAT=\"%s\": \"%.*s\" is not heap, svg or folded; ignored", f, (int)n, p);
    p = *e ? e + 1 : e;
  }
}

static void read_options(void) {
  if (options_read) return;
  options_read = true;
  prof.alloc_interval = hci_opt_int(HCO_HEAP_PROFILE_ALLOCATION_INTERVAL);
  prof.inuse_interval = hci_opt_int(HCO_HEAP_PROFILE_INUSE_INTERVAL);
  prof.time_interval = hci_opt_int(HCO_HEAP_PROFILE_TIME_INTERVAL);
  prof.dealloc_interval = hci_opt_int(HCO_HEAP_PROFILE_DEALLOCATION_INTERVAL);
  read_report_option();
  /* gperftools deletes <prefix>.*.heap at start; our files carry the pid,
   * so runs never overwrite each other, and that would delete the profiles
   * of a parent or sibling writing with the same prefix. */
  if (hci_opt_str(HCO_HEAP_PROFILE_CLEANUP))
    hci_warn("HEAP_PROFILE_CLEANUP is not supported (profiles are named <prefix>.<pid>.<seq>.heap); no file is "
             "deleted");
  const char *p = hci_opt_str(HCO_HEAPPROFILE);
  if (p && *p) {
    if (start(p) == 0) install_signal();
    else hci_warn("HEAPPROFILE=\"%s\": prefix too long; heap profiling off", p);
  }
  /* What is printed at exit must reach the original stderr even if the
   * program closes fd 2 first (coreutils' close_stdout does), as the leak
   * checker's report does. */
  const hci_report_opts_t *ro = hci_report_opts();
  if (report_top_n > 0 || prof.running || ro->svg || ro->folded) hci_log_stream_open();
}

void hci_profiler_init(void) {
  /* The first malloc may come before libc has set environ: read the options
   * from the constructor below then. */
  if (environ != NULL) read_options();
}

__attribute__((constructor)) static void profile_constructor(void) {
  hci_ensure_init();
  read_options();
  hci_old_start(); /* a thread: from the constructor, never from inside malloc */
}

/* Live bytes for the exit message: exact with the checker on (nothing is
 * sampled then), else the sampled estimate. */
static int64_t exit_inuse(void) {
  if (!hci_alloc_recording()) return inuse_now();
  hci_prof_snap_t snap;
  if (hci_profile_snapshot(&snap, true) < 0) return 0;
  int64_t sum = 0;
  for (size_t i = 0; i < snap.n; i++) sum += (int64_t)snap.v[i].bytes;
  hci_profile_snapshot_free(&snap);
  return sum;
}

/* HEAPCHECK_REPORT=svg:FILE / folded:FILE without the checker: the live heap at exit. */
static void report_graphs_at_exit(void) {
  const hci_report_opts_t *ro = hci_report_opts();
  for (int k = 0; k < 2; k++) {
    const char *tmpl = k == 0 ? ro->svg : ro->folded;
    if (!tmpl) continue;
    char path[PATH_MAX];
    hci_fmt_path(path, sizeof path, tmpl, "heap");
    int fd = hci_fmt_create(path, k == 0 ? "flame graph" : "folded stacks");
    if (fd < 0) continue;
    char title[256];
    hci_snprintf(title, sizeof title, "Live heap of %s (pid %d) at exit",
                 *hci_prog_short_name() ? hci_prog_short_name() : "?", (int)getpid());
    int rc = hci_fg_write_profile(fd, k == 0, title);
    if (close(fd) != 0) rc = -1;
    if (rc < 0) hci_warn("writing %s failed", path);
  }
}

__attribute__((destructor)) static void profile_at_exit(void) {
  if (hci_os_memory_borrowed()) return; /* a vfork child: the parent writes its own */
  if (report_top_n > 0) hc_report_top(diag_fd(), report_top_n);
  if (!hci_alloc_recording()) report_graphs_at_exit(); /* with the checker on, each check writes its own */
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

hc_public size_t hc_set_sample_interval(size_t bytes) { return hci_sampler_set_interval(bytes); }

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
  if (atomic_load_explicit(&prof.running, memory_order_relaxed)) rc = dump_locked(reason ? reason : "", true);
  hci_unlock(&prof.lock);
  return rc;
}

/* gperftools' <gperftools/heap-profiler.h>. */
hc_public void HeapProfilerStart(const char *prefix) { (void)hc_heap_profile_start(prefix); }
hc_public void HeapProfilerStop(void) { hc_heap_profile_stop(); }
hc_public void HeapProfilerDump(const char *reason) { (void)hc_heap_profile_dump(reason); }
hc_public int IsHeapProfilerRunning(void) { return hc_heap_profile_running(); }
hc_public char *GetHeapProfile(void) { return hc_heap_profile_get(); }

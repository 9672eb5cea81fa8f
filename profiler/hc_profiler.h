/* hc_profiler.h - the heap profiler's hidden interface (profiler/).
 *
 * profile.c (HEAPPROFILE dumps, the gperftools and heapcheck profile API),
 * profile_snapshot.c (sampled-object buckets, snapshots, estimates) and
 * heap_top.c (the "top sites" summary).  The profiler runs without
 * HEAPCHECK; it sees base/, stacks/, allocator/ and symbolizer/, never the
 * checker (its include path does not name checker/).  It hears about
 * sampled objects through the allocator's sample listener, which
 * hci_profiler_attach registers.
 */
#ifndef HC_PROFILER_H
#define HC_PROFILER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hc_internal.h"

/* ======================= profile_snapshot.c (snapshot shared with profile.c, heap_top.c) ======================= */
/* One call site (stack id), or one (stack id, size bin) pair of it, of a
 * heap snapshot.  Raw numbers are samples as recorded; est_* are the
 * un-sampled estimates (equal to the raw numbers for exact data). */
typedef struct hci_prof_site {
  uint32_t stack_id;
  uint32_t bin;              /* size bin (0 when grouped per stack) */
  uint64_t n, bytes;         /* live: samples (objects) and their requested bytes */
  uint64_t wsum;             /* live: sum of the samples' weights */
  double est_n, est_bytes;   /* live: estimated objects and bytes */
  uint64_t an, abytes;       /* allocated since start: samples and bytes */
  uint64_t awsum;            /* allocated: sum of weights */
  double est_abytes;         /* allocated: estimated bytes */
  uint64_t oldest_ns;        /* alloc_time of the oldest live sample; 0 = unknown */
} hci_prof_site_t;
typedef struct hci_prof_snap {
  hci_prof_site_t *v;        /* hci_meta_alloc'ed, sorted by est_bytes, largest first */
  size_t n;
  size_t alloc_bytes;        /* for hci_meta_free */
  uint64_t rate;             /* sampling interval of the header (1 when exact) */
  bool exact;                /* every live object is in (checker on, or interval 1) */
  uint64_t samples;          /* live samples (objects) seen */
} hci_prof_snap_t;
/* Takes a snapshot of the live heap: with the checker on, every object
 * (hci_lock_all held while walking); otherwise the sampled objects plus the
 * cumulative sample counters.  per_stack merges the size bins of a stack.
 * No malloc; returns 0 or -1 (out of memory). */
int hci_profile_snapshot(hci_prof_snap_t *s, bool per_stack);
void hci_profile_snapshot_free(hci_prof_snap_t *s);
/* profile_snapshot.c, for profile.c: estimates and counters. */
double hci_profile_estimate_d(double size, double weight); /* bytes a sample of `size` stands for */
bool hci_profile_pure(uint64_t n, uint64_t wsum, uint64_t rate); /* all n samples taken at `rate` */
uint64_t hci_profile_alloc_estimate(void);  /* estimated bytes allocated since start */
uint64_t hci_profile_free_estimate(void);   /* estimated bytes freed since start */
int64_t hci_profile_inuse_estimate(void);   /* estimated bytes live */
void hci_profile_counters_locks(hci_lock_fn *each); /* fork handlers */

/* ======================= profile_snapshot.c: the sample listener ======================= */
/* The listener (see hci_sample_listener_t for the rules): count a sampled
 * allocation in its bucket and return the bytes it stands for; take back a
 * sampled free's estimate.  profile.c's hci_profiler_on_sample is its
 * after_alloc: the HEAPPROFILE dump thresholds and HEAPPROFILESIGNAL. */
uint64_t hci_profile_note_alloc(uint32_t stack_id, size_t size, uint64_t weight);
void hci_profile_note_free(uint64_t est);
void hci_profiler_on_sample(void);
/* Registers that listener with the allocator (runtime start-up, first). */
void hci_profiler_attach(void);
/* Bytes a sample of `size` bytes taken with mean interval `weight` stands
 * for: size / (1 - exp(-size / weight)); size itself when weight <= 1. */
double hci_profile_estimate(size_t size, uint64_t weight);

/* ======================= profile_graph.c ======================= */
/* The same of the live heap (a per-stack snapshot); never inside malloc. */
int hci_fg_write_profile(int fd, bool svg, const char *title);

/* ======================= heap_old.c ======================= */
/* Starts the reporter thread when HEAPCHECK_REPORT has old:/peak or a
 * HEAPCHECK_LIVE_SIGNAL / HEAPCHECK_ACK_SIGNAL is set (from the profiler's
 * constructor, never inside malloc). */
void hci_old_start(void);
void hci_old_on_sample(void);      /* sampled malloc path: no lock, no malloc */
void hci_old_fork_child(void);

/* ======================= profile.c: process start-up (runtime/init.c) ======================= */
/* Reads HEAPPROFILE and friends, starts dumping when asked. */
void hci_profiler_init(void);
/* Fork (the runtime's handler, in the lock order of docs/design.md): prof.lock
 * to the handler's visitor; the child hook takes the child's pid. */
void hci_profiler_fork_locks(hci_lock_fn *each);
void hci_profiler_fork_child(void);

/* ======================= heap_growth.c ======================= */
/* Registers the heap-growth recorder with the page heap (start-up). */
void hci_heap_growth_attach(void);

#endif

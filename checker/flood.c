/* flood.c - the stopped-world part of a leak check: mark everything that is
 * reachable from the roots, then classify what is not (design D13, D14).
 *
 *   1. lock every allocator lock, stop the world (hci_world_stop);
 *   2. list the spans in use (the heap view) and give each with records its
 *      marks (one byte per carved object, one per large span) in the
 *      checker's own table, indexed by span id, from hci_os_map;
 *   3. roots: ignored objects, registered regions, globals and threads (as
 *      the mode says); each root range is scanned and the frontier drained;
 *   4. objects allocated by ld.so (DTV, dynamic TLS) and objects whose stack
 *      is suppressed are roots too: they are found among the objects still
 *      unmarked, so the common case pays nothing per object;
 *   5. what stays unmarked is unreachable: in scope (epoch) it is a leak,
 *      else an old object that is neither reported nor scanned;
 *   6. direct/indirect: one leak per leaked structure is direct (the lowest
 *      member of each strongly connected component of the leak graph that
 *      no other leak points to, flood_scc.c); what it reaches is indirect
 *      and counted in the bytes it owns (flood_classify.c);
 *   7. copy the leaks out, drop the marks, resume the world, unlock.
 *
 * The scan loop is the hot spot (a 1 GiB heap is 134 M words): one unsigned
 * range compare per word, then the inline pagemap lookup, a mark byte and
 * the object's record; no function call per word, no lock.
 *
 * This file: the driver (stop, steps 1-7 in order, resume), the flood's
 * memory and the marks.  The scan loop is in flood_scan.c, the roots in
 * flood_roots.c, steps 5-6 in flood_classify.c and flood_scc.c (flood_internal.h: what they
 * share and the invariants).
 * Locks: requires the checker lock; takes all allocator locks itself.
 */
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "flood_internal.h"

// ---- memory ----

void *hci_fl_grow(void *old, size_t old_bytes, size_t new_bytes) {
  void *n = hci_os_map(new_bytes);
  if (!n) return NULL;
  if (old) {
    memcpy(n, old, old_bytes);
    hci_os_unmap(old, old_bytes);
  }
  return n;
}

bool hci_fl_grow_stack(flood_t *f) {
  size_t ncap = f->cap ? f->cap * 2 : 65536;
  work_t *n = hci_fl_grow(f->stack, f->cap * sizeof(work_t), ncap * sizeof(work_t));
  if (!n) {
    f->r->oom = true;
    return false;
  }
  f->stack = n;
  f->cap = ncap;
  return true;
}

/* Appends a record to *arr (n used, *map bytes mapped). */
static bool append(flood_t *f, hci_leak_t **arr, size_t *n, size_t *map, uintptr_t addr, size_t size,
                   uint32_t stack) {
  if ((*n + 1) * sizeof(hci_leak_t) > *map) {
    size_t nb = *map ? *map * 2 : 65536 * sizeof(hci_leak_t);
    hci_leak_t *g = hci_fl_grow(*arr, *map, nb);
    if (!g) {
      f->r->oom = true;
      return false;
    }
    *arr = g;
    *map = nb;
  }
  hci_leak_t *l = &(*arr)[(*n)++];
  l->addr = addr;
  l->size = size;
  l->stack_id = stack;
  l->kind = HCI_LEAK_DIRECT;
  l->owned_bytes = l->owned_objects = 0;
  return true;
}

bool hci_fl_add_leak(flood_t *f, uintptr_t addr, size_t size, uint32_t stack) {
  hci_flood_result_t *r = f->r;
  return append(f, &r->leaks, &r->nleaks, &r->leaks_map, addr, size, stack);
}

bool hci_fl_add_possible(flood_t *f, uintptr_t addr, size_t size, uint32_t stack) {
  hci_flood_result_t *r = f->r;
  return append(f, &r->possible, &r->npossible, &r->possible_map, addr, size, stack);
}

// ---- spans and marks ----

static void count_span(void *ctx, hc_span_t *s) {
  (void)s;
  ((flood_t *)ctx)->nspans++;
}

static void collect_span(void *ctx, hc_span_t *s) {
  flood_t *f = ctx;
  if (f->nspans * sizeof(hc_span_t *) < f->spans_map) f->spans[f->nspans++] = s;
}

/* The marks are the checker's own: one byte per slot in f->marks, found
 * through f->slot0, indexed by the span's id (the heap view's key); the
 * allocator keeps nothing of them.  slot0[id] == NULL: no marks (a span
 * without records, or an id not in use). */
static bool setup_marks(flood_t *f) {
  f->nspans = 0;
  hci_heap_for_each_span(count_span, f);
  size_t n = f->nspans + 16;
  f->spans_map = (n * sizeof(hc_span_t *) + 4095) & ~(size_t)4095;
  f->spans = hci_os_map(f->spans_map);
  if (!f->spans) return false;
  f->nspans = 0;
  hci_heap_for_each_span(collect_span, f);
  size_t ids = hci_heap_span_ids();
  f->slot0_map = ((ids + 1) * sizeof(uint8_t *) + 4095) & ~(size_t)4095;
  f->slot0 = hci_os_map(f->slot0_map); /* zeroed: no span has marks */
  if (!f->slot0) return false;
  size_t total = 0;
  for (size_t i = 0; i < f->nspans; i++) total += hci_heap_span_slots(f->spans[i]);
  f->marks_map = (total + 4096) & ~(size_t)4095;
  f->marks = hci_os_map(f->marks_map);
  if (!f->marks) return false;
  size_t at = 0;
  for (size_t i = 0; i < f->nspans; i++) {
    size_t k = hci_heap_span_slots(f->spans[i]); /* 0: no records, nothing to mark or report */
    if (!k) continue;
    f->slot0[hci_heap_span_id(f->spans[i])] = f->marks + at;
    at += k;
  }
  f->mk.slot0 = f->slot0;
  return true;
}

static void drop_marks(flood_t *f) {
  if (f->pagemap_fd > 0) close(f->pagemap_fd - 1);
  f->pagemap_fd = 0;
  if (f->pm_cache) hci_os_unmap(f->pm_cache, HCI_FL_PM_BYTES);
  f->pm_cache = NULL;
  if (f->marks) hci_os_unmap(f->marks, f->marks_map);
  if (f->slot0) hci_os_unmap(f->slot0, f->slot0_map);
  if (f->spans) hci_os_unmap(f->spans, f->spans_map);
  if (f->stack) hci_os_unmap(f->stack, f->cap * sizeof(work_t));
  if (f->ldso) hci_os_unmap(f->ldso, LDSO_CACHE * sizeof(ldso_ent_t));
  hci_readable_free(&f->rd);
  if (f->pcache) hci_os_unmap(f->pcache, PCACHE * 4096 + PCACHE * sizeof(uintptr_t));
  if (f->scratch) hci_os_unmap(f->scratch, SCRATCH_MAP);
}

// ---- the stopped-world driver ----

static void flood_all(hci_world_t *w, flood_t *f) {
  const hci_flood_params_t *p = f->p;
  hci_flood_result_t *r = f->r;
  uint64_t t0 = hci_os_now_ns();
  if (!setup_marks(f)) {
    r->oom = true;
    return;
  }
  uintptr_t heap_hi;
  hci_heap_bounds(&f->heap_lo, &heap_hi);
  f->heap_span = heap_hi - f->heap_lo;
  f->maxoff = p->max_offset < 0 ? UINTPTR_MAX : (uintptr_t)p->max_offset;
  hci_fl_setup_readable(f, &w->maps);
  int pm = hci_os_open_proc("pagemap", O_RDONLY);
  f->pagemap_fd = pm >= 0 ? pm + 1 : 0;
  f->track_possible = p->max_offset < 0;
  f->live_mark = M_LIVE;
  uint64_t t1 = hci_os_now_ns();
  if (atomic_load_explicit(&hci_api_any_ignored, memory_order_relaxed)) hci_fl_push_ignored(f);
  const hci_region_t *regions;
  int nreg = hci_api_root_regions(&regions);
  for (int i = 0; i < nreg && !p->no_regions; i++) hci_fl_scan_region(f, &w->maps, regions[i].lo, regions[i].hi);
  if (p->scan_globals) hci_roots_globals(hci_fl_root_cb, f);
  else hci_roots_runtime(hci_fl_root_cb, f);
  if (p->scan_threads)
    hci_roots_threads_parts(w, p->self_sp, p->thread_parts ? p->thread_parts : HCI_ROOTS_THREADS, hci_fl_root_cb, f);
  if (p->scan_threads) hci_roots_dead_threads(w, hci_fl_root_cb, f);
  if (p->scan_globals && !p->no_mappings) hci_roots_mappings(w, hci_fl_root_cb, f);
  uint64_t t2 = hci_os_now_ns();
  hci_fl_push_extra_roots(f);
  hci_fl_flood_possible(f);
  uint64_t t3 = hci_os_now_ns();
  hci_fl_collect_leaks(f);
  hci_fl_classify(f);
  uint64_t t4 = hci_os_now_ns();
  r->t_setup_ns = t1 - t0;
  r->t_roots_ns = t2 - t1;
  r->t_extra_ns = t3 - t2;
  r->t_classify_ns = t4 - t3;
}

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

typedef struct stopped_call {
  hci_world_t *w;
  const hci_flood_params_t *p;
  hci_flood_result_t *r;
} stopped_call_t;

static int stopped_check(void *arg) {
  stopped_call_t *c = arg;
  flood_t f;
  memset(&f, 0, sizeof f);
  f.p = c->p;
  f.r = c->r;
  hci_lock_all();
  uint64_t t0 = hci_os_now_ns();
  c->r->not_stopped = hci_world_stop(c->w);
  c->r->nthreads = c->w->nthreads;
  if (c->p->wait_exiting && (c->r->exiting_tid = hci_exiting_thread(c->w)) != 0) {
    hci_world_release(c->w); /* the caller waits for that thread's end and stops the world again */
    hci_unlock_all();
    return 0;
  }
  hci_world_why_incomplete(c->w, c->r->incomplete, sizeof c->r->incomplete);
  if (c->p->self_nregs > 0) hci_world_set_self_regs(c->w, c->p->self_regs, c->p->self_nregs);
  uint64_t t1 = hci_os_now_ns(), c1 = thread_cpu_ns();
  flood_all(c->w, &f);
  drop_marks(&f);
  uint64_t t2 = hci_os_now_ns();
  c->r->t_flood_cpu_ns = thread_cpu_ns() - c1;
  if (c->r->oom && !c->r->incomplete[0])
    hci_snprintf(c->r->incomplete, sizeof c->r->incomplete,
                 "out of memory for the check's own buffers (RLIMIT_AS or RLIMIT_DATA, RLIMIT_MEMLOCK under mlockall(MCL_FUTURE), or the address space is full)");
  if (!c->p->hold) hci_world_release(c->w); /* signals stay blocked: the locks are still held */
  hci_unlock_all();
  c->r->t_stop_ns = (t1 - t0) + (hci_os_now_ns() - t2);
  c->r->t_flood_ns = t2 - t1;
  return 0;
}

int hci_flood_check(hci_world_t *w, const hci_flood_params_t *p, hci_flood_result_t *r) {
  memset(r, 0, sizeof *r);
  stopped_call_t c = {w, p, r};
  hci_world_block_signals(w);
  int rc = hci_with_loader_lock(stopped_check, &c);
  if (!w->active) hci_world_unblock_signals(w); /* else when the held world is resumed */
  return rc;
}

void hci_flood_result_free(hci_flood_result_t *r) {
  if (r->leaks) hci_os_unmap(r->leaks, r->leaks_map);
  r->leaks = NULL;
  r->nleaks = r->leaks_map = 0;
  if (r->possible) hci_os_unmap(r->possible, r->possible_map);
  r->possible = NULL;
  r->npossible = r->possible_map = 0;
}

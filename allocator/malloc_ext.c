/* malloc_ext.c - gperftools' MallocExtension C functions
 * (<gperftools/malloc_extension_c.h>), tc_version (<gperftools/tcmalloc.h>)
 * and the stack walk behind <gperftools/stacktrace.h>.
 *
 * The C++ class MallocExtension is header only (include/gperftools/
 * malloc_extension.h): every member calls one of these functions, so the
 * library stays C.  Numbers come from the allocator's own counters
 * (hci_stats_get), read without stopping anyone: each is exact on its own,
 * the set is a snapshot only when no other thread allocates.
 *
 * Properties: the table `props` below (docs/profiling.md says what each
 * is); writable are tcmalloc's three (thread caches' total budget,
 * aggressive decommit, heap limit) and heapcheck.sample_interval.  Also
 * nallocx, Ranges (hc_malloc_ranges), the system allocator the heap grows
 * from (SetSystemAllocator).
 *
 * Locks: those hci_stats_get takes, the page-heap lock (Ranges), release_lock
 * (ReleaseToSystem's account) before the page heap; none held across calls.
 * No malloc.
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hc_heap_view.h"
#include "hc_internal.h"
#include "gperftools/malloc_extension_c.h"
#include "gperftools/nallocx.h"
#include "heapcheck.h"


// ---- properties ----

enum {
  P_ALLOCATED, P_HEAP_SIZE, P_PHYSICAL, P_PH_FREE, P_PH_UNMAPPED, P_PH_COMMITTED, P_SLACK, P_CENTRAL,
  P_TRANSFER, P_THREAD, P_MAX_TC, P_MIN_TC, P_METADATA, P_AGGRESSIVE, P_HEAP_LIMIT, P_SAMPLE_INTERVAL
};
static const struct {
  const char *name;
  int which;
  bool writable;
} props[] = {
    {"generic.current_allocated_bytes", P_ALLOCATED, false},
    {"generic.heap_size", P_HEAP_SIZE, false},
    {"generic.total_physical_bytes", P_PHYSICAL, false},
    {"tcmalloc.pageheap_free_bytes", P_PH_FREE, false},
    {"tcmalloc.pageheap_unmapped_bytes", P_PH_UNMAPPED, false},
    {"tcmalloc.pageheap_committed_bytes", P_PH_COMMITTED, false},
    {"tcmalloc.slack_bytes", P_SLACK, false},
    {"tcmalloc.central_cache_free_bytes", P_CENTRAL, false},
    {"tcmalloc.transfer_cache_free_bytes", P_TRANSFER, false},
    {"tcmalloc.thread_cache_free_bytes", P_THREAD, false},
    {"tcmalloc.current_total_thread_cache_bytes", P_THREAD, false},
    {"tcmalloc.max_total_thread_cache_bytes", P_MAX_TC, true},
    {"tcmalloc.min_per_thread_cache_bytes", P_MIN_TC, false},
    {"tcmalloc.metadata_bytes", P_METADATA, false},
    {"tcmalloc.aggressive_memory_decommit", P_AGGRESSIVE, true},
    {"tcmalloc.heap_limit_mb", P_HEAP_LIMIT, true},
    {"heapcheck.sample_interval", P_SAMPLE_INTERVAL, true},
};

static int find_property(const char *name) {
  for (size_t i = 0; i < sizeof props / sizeof props[0]; i++)
    if (strcmp(name, props[i].name) == 0) return (int)i;
  return -1;
}

static size_t property(int which, const hc_stats_t *st) {
  size_t slots = hci_central_slot_bytes(), limit;
  bool aggressive;
  switch (which) {
    case P_ALLOCATED: return st->in_use;
    case P_HEAP_SIZE: return st->heap_mapped;
    case P_PHYSICAL: return st->heap_mapped - st->heap_released + st->metadata;
    case P_PH_FREE: return st->page_heap_free;
    case P_PH_UNMAPPED: return st->heap_released;
    case P_PH_COMMITTED: return st->heap_mapped - st->heap_released;
    case P_SLACK: return st->page_heap_free + st->heap_released;
    case P_CENTRAL: return st->central_free > slots ? st->central_free - slots : 0;
    case P_TRANSFER: return slots;
    case P_THREAD: return st->thread_cache_free;
    case P_MAX_TC: return hci_tc_budget_total();
    case P_MIN_TC: return HC_TC_BUDGET_MIN;
    case P_METADATA: return st->metadata;
    case P_AGGRESSIVE: hci_ph_get_limits(&limit, &aggressive); return aggressive;
    case P_HEAP_LIMIT: hci_ph_get_limits(&limit, &aggressive); return limit >> 20;
    default: return (size_t)atomic_load_explicit(&hci_sample_interval, memory_order_relaxed);
  }
}

hc_public int MallocExtension_GetNumericProperty(const char *name, size_t *value) {
  if (!name || !value) return 0;
  int i = find_property(name);
  if (i < 0) return 0;
  hc_stats_t st;
  if (props[i].which <= P_METADATA) hci_stats_get(&st); /* the counters only when one is asked */
  *value = property(props[i].which, &st);
  return 1;
}

/* The writable properties are tcmalloc's three (the thread caches' total
 * budget, aggressive decommit, the heap limit) and heapcheck's sampling
 * interval; any other name, known or not, returns false, as in tcmalloc. */
hc_public int MallocExtension_SetNumericProperty(const char *name, size_t value) {
  if (!name) return 0;
  int i = find_property(name);
  if (i < 0 || !props[i].writable) return 0;
  size_t limit;
  bool aggressive;
  hci_ph_get_limits(&limit, &aggressive);
  switch (props[i].which) {
    case P_MAX_TC: hci_tc_set_budget_total(value); break;
    case P_AGGRESSIVE: hci_ph_set_limits(limit, value != 0); break;
    case P_HEAP_LIMIT:
      hci_ph_set_limits(value > (SIZE_MAX >> 20) ? SIZE_MAX & ~(((size_t)1 << 20) - 1) : value << 20, aggressive);
      break;
    default: hci_sampler_set_interval(value); break;
  }
  return 1;
}

// ---- statistics ----

hc_public void MallocExtension_GetStats(char *buffer, int length) {
  if (!buffer || length <= 0) return;
  buffer[0] = 0;
  /* The malloc_stats() text, written to an anonymous file and read back
   * (the report is written with write(2), never into a buffer). */
  int fd = memfd_create("heapcheck-stats", MFD_CLOEXEC);
  if (fd < 0) return;
  hci_stats_print(fd);
  ssize_t n = pread(fd, buffer, (size_t)length - 1, 0);
  close(fd);
  buffer[n > 0 ? n : 0] = 0;
}

// ---- memory ----

hc_public void MallocExtension_MarkThreadIdle(void) {
  hc_tcache_t *tc = hci_tc;
  if (tc->is_real) hci_tc_flush(tc); /* the cache's objects go back to the central lists */
}

hc_public void MallocExtension_MarkThreadTemporarilyIdle(void) { MallocExtension_MarkThreadIdle(); }

hc_public void MallocExtension_MarkThreadBusy(void) {}

/* Spans go back whole, so a call may release more than asked: the excess
 * counts against the next calls (tcmalloc's extra_bytes_released_), and a
 * program calling ReleaseToSystem(n) periodically releases n per period. */
static size_t extra_released;
static hci_lock_t release_lock = HCI_LOCK_INIT(HC_RANK_RELEASE);
void hci_release_locks(hci_lock_fn *each) { each(&release_lock); }

hc_public void MallocExtension_ReleaseToSystem(size_t num_bytes) {
  hci_lock(&release_lock);
  if (num_bytes <= extra_released) {
    extra_released -= num_bytes;
  } else {
    num_bytes -= extra_released;
    /* at least one page: less would release nothing (tcmalloc's rule) */
    size_t done = hci_ph_release(num_bytes < HC_PAGE_SIZE ? HC_PAGE_SIZE : num_bytes);
    extra_released = done > num_bytes ? done - num_bytes : 0;
  }
  hci_unlock(&release_lock);
}

hc_public void MallocExtension_ReleaseFreeMemory(void) {
  hci_ensure_init();
  hc_tcache_t *tc = hci_tc;
  /* Checker mode: quarantined blocks are free memory too (as malloc_trim). */
  if (hci_quarantine_budget) hci_alloc_quarantine_flush(tc->is_real ? tc : NULL, true);
  hci_tc_drain_remote();
  hci_central_drain();
  hci_sample_stash_drain();
  hci_lock(&release_lock);
  hci_ph_release(0);
  extra_released = 0;
  hci_unlock(&release_lock);
}

static double release_rate = 1.0; /* accepted and reported; release is by threshold here */

hc_public void MallocExtension_SetMemoryReleaseRate(double rate) {
  if (rate >= 0) release_rate = rate;
}

hc_public double MallocExtension_GetMemoryReleaseRate(void) { return release_rate; }

hc_public size_t MallocExtension_GetEstimatedAllocatedSize(size_t size) { return hci_alloc_size_for(size, 0); }

/* <gperftools/nallocx.h>: only MALLOCX_LG_ALIGN (the low 6 bits), as gperftools. */
hc_public size_t tc_nallocx(size_t size, int flags) {
  int lg = flags & 63;
  return hci_alloc_size_for(size, lg < 63 ? (size_t)1 << lg : 0);
}
hc_public size_t nallocx(size_t size, int flags) __attribute__((alias("tc_nallocx")));

hc_public size_t MallocExtension_GetAllocatedSize(const void *p) { return p ? hci_usable_slot((void *)p) : 0; }
/* tcmalloc's malloc_usable_size; not an alias of ours in checker mode (hci_usable_slot). */
hc_public size_t tc_malloc_size(void *p) { return hci_usable_slot(p); }

hc_public MallocExtension_Ownership MallocExtension_GetOwnership(const void *p) {
  return p && hci_pagemap_span((uintptr_t)p) ? MallocExtension_kOwned : MallocExtension_kNotOwned;
}

hc_public size_t MallocExtension_GetThreadCacheSize(void) {
  hc_tcache_t *tc = hci_tc;
  if (!tc->is_real) return 0;
  return hci_tc_bytes(tc);
}

// ---- Ranges ----

/* The heap's page runs in address order: in use (small-object spans with
 * the fraction of their bytes allocated), free, free and given back.  The
 * stash of sample spans counts as free.  Read under the page-heap
 * lock 16 at a time, fn called without it (as tcmalloc). */
static int next_ranges(uintptr_t *page, hc_malloc_range_t *out, int max) {
  int n = 0;
  hci_lock(&hci_pageheap.lock);
  uintptr_t end = hci_pageheap.hi >> HC_PAGE_SHIFT;
  if (*page < (hci_pageheap.lo >> HC_PAGE_SHIFT)) *page = hci_pageheap.lo >> HC_PAGE_SHIFT;
  while (n < max && *page < end) {
    hc_pm_entry_t *leaf =
        hci_pagemap_leaf(*page >> HC_PM_LEAF_BITS);
    if (!leaf) {
      *page = ((*page >> HC_PM_LEAF_BITS) + 1) << HC_PM_LEAF_BITS;
      continue;
    }
    hc_span_t *s = (hc_span_t *)leaf[*page & (HC_PM_LEAF_LEN - 1)].span;
    if (!s) {
      ++*page;
      continue;
    }
    hc_malloc_range_t *r = &out[n++];
    r->address = s->start;
    r->length = s->npages << HC_PAGE_SHIFT;
    r->fraction = 0;
    switch (s->state) {
      case HC_SPAN_FREE: r->type = s->is_released ? HC_RANGE_UNMAPPED : HC_RANGE_FREE; break;
      case HC_SPAN_STASHED: r->type = HC_RANGE_FREE; break;
      case HC_SPAN_SMALL:
        r->type = HC_RANGE_INUSE;
        r->fraction = (double)s->allocated * hci_classes[s->cls].size / (double)r->length;
        break;
      default: r->type = HC_RANGE_INUSE; break;
    }
    *page = (s->start >> HC_PAGE_SHIFT) + s->npages;
  }
  hci_unlock(&hci_pageheap.lock);
  return n;
}

hc_public void hc_malloc_ranges(void (*fn)(void *arg, const hc_malloc_range_t *r), void *arg) {
  if (!fn) return;
  uintptr_t page = 0;
  hc_malloc_range_t batch[16];
  int n;
  while ((n = next_ranges(&page, batch, 16)) > 0)
    for (int i = 0; i < n; i++) fn(arg, &batch[i]);
}

// ---- ReadStackTraces ----

typedef struct traces {
  void **out;
  size_t cap, used, need;
} traces_t;

static bool add_trace(void *ctx, const hci_heap_sample_t *smp) {
  traces_t *t = ctx;
  const uintptr_t *pcs;
  int depth = hci_depot_get(smp->stack_id, &pcs);
  t->need += 3 + (size_t)depth;
  if (!t->out || t->used + 3 + (size_t)depth >= t->cap) return true; /* room for the terminator */
  t->out[t->used++] = (void *)(uintptr_t)1;
  t->out[t->used++] = (void *)(uintptr_t)smp->size;
  t->out[t->used++] = (void *)(uintptr_t)depth;
  for (int i = 0; i < depth; i++) t->out[t->used++] = (void *)pcs[i];
  return true;
}

/* The live sampled objects in gperftools' layout ({1, size, depth,
 * pc...} each, then 0) into up to cap slots; returns the slots they need. */
hc_public size_t hc_heap_sample_traces(void **out, size_t cap, int *period) {
  traces_t t = {out, cap, 0, 1};
  hci_heap_samples_lock();
  hci_heap_for_each_sample(add_trace, &t);
  hci_heap_samples_unlock();
  if (out && cap) out[t.used] = NULL;
  if (period) {
    uint64_t v = atomic_load_explicit(&hci_sample_interval, memory_order_relaxed);
    *period = v > INT32_MAX ? INT32_MAX : (int)v;
  }
  return t.need;
}

// ---- the system allocator (MallocExtension::Get/SetSystemAllocator) ----

hc_public void *hc_system_alloc_default(size_t size, size_t *actual, size_t align) {
  if (align < HC_PAGE_SIZE) align = HC_PAGE_SIZE;
  void *p = hci_os_map_aligned(size, align);
  if (p && actual) *actual = size;
  return p;
}

hc_public void hc_set_system_allocator(void *(*fn)(void *ctx, size_t size, size_t *actual, size_t align),
                                       void *ctx) {
  hci_ph_set_sys_alloc(fn, ctx);
}

// ---- tc_version ----

hc_public const char *tc_version(int *major, int *minor, const char **patch) {
  /* gperftools' API level served, in gperftools' own words: programs (and
   * gperftools' unit test) compare it with "gperftools 2.10".  heapcheck's
   * version is in heapcheck.h (HC_VERSION_*). */
  if (major) *major = 2;
  if (minor) *minor = 10;
  if (patch) *patch = "";
  return "gperftools 2.10";
}

// ---- stack traces (<gperftools/stacktrace.h>) ----

/* The frames before the first that cannot be a return address: one in the
 * heap, or outside every loaded module when modules can be told.  A
 * frame-pointer walk that went through code without frame pointers took
 * whatever that code left in rbp (a pointer argument) for a frame record,
 * and its "return address" is stale data: a pointer to the library's
 * metadata in gperftools' heap-checker_unittest linked statically, where
 * no module boundary tells the walk it went astray (the allocation path's
 * two-frame test, alloc.c, needs two modules).  Cut there, the DWARF walk
 * below gets its turn.  (Code a JIT generated is in no module: a stack
 * through it ends there.) */
static int code_prefix(const uintptr_t *pcs, int n) {
  bool modules = hci_eh_available();
  for (int i = 0; i < n; i++) {
    hci_eh_obj_t o;
    if (hci_pagemap_span(pcs[i]) != NULL || (modules && !hci_eh_find(pcs[i], &o))) return i;
  }
  return n;
}

hc_public hc_noinline int hc_stack_trace(void **result, int *sizes, int max_depth, int skip_count) {
  if (!result || max_depth <= 0) return 0;
  if (skip_count < 0) skip_count = 0;
  uintptr_t pcs[HC_MAX_STACK_DEPTH];
  size_t fsz[HC_MAX_STACK_DEPTH];
  int want = max_depth + skip_count < HC_MAX_STACK_DEPTH ? max_depth + skip_count : HC_MAX_STACK_DEPTH;
  /* pcs[0]: the return address into our caller (the inline GetStackTrace
   * is part of it).  Frame pointers (with each frame's size, the distance
   * between successive frame records, as gperftools' x86 walk), and the
   * DWARF walk when they stop early (code built without them) and it sees
   * further; frames only it found have size 0. */
  int n;
  if (sizes && hci_unwinder != HC_UNWIND_DWARF) {
    uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
    n = hci_unwind_fp_sizes(pcs, fsz, want, 0, fp, fp);
  } else {
    n = hci_backtrace(pcs, want, 0);
    for (int i = 0; i < n; i++) fsz[i] = 0;
  }
  n = code_prefix(pcs, n);
  uintptr_t ra = (uintptr_t)__builtin_return_address(0);
  if (hci_unwind_dwarf_available() && (hci_unwinder == HC_UNWIND_DWARF || hci_unwind_fallback) && n < want) {
    uintptr_t dw[HC_MAX_STACK_DEPTH];
    int m = hci_unwind_dwarf_at(dw, want, ra, NULL);
    if (m > n) {
      for (int i = 0; i < m; i++)
        if (i >= n || dw[i] != pcs[i]) fsz[i] = 0;
      memcpy(pcs, dw, (size_t)m * sizeof dw[0]);
      n = code_prefix(pcs, m);
    }
  }
  int k = 0;
  for (int i = skip_count; i < n && k < max_depth; i++, k++) {
    result[k] = (void *)pcs[i];
    if (sizes) sizes[k] = fsz[i] > INT32_MAX ? 0 : (int)fsz[i];
  }
  __asm__ volatile("" ::: "memory"); /* keeps our frame (no tail call) */
  return k;
}

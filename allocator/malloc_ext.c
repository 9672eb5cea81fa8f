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
 * Properties (GetNumericProperty), as tcmalloc defines them:
 *   generic.current_allocated_bytes   bytes held by the program
 *   generic.heap_size                 bytes mapped for the heap (in use, free, released)
 *   generic.total_physical_bytes      mapped - released + metadata
 *   tcmalloc.pageheap_free_bytes      free pages still backed by memory
 *   tcmalloc.pageheap_unmapped_bytes  free pages given back to the OS
 *   tcmalloc.slack_bytes              the two together
 *   tcmalloc.central_cache_free_bytes free objects in the central lists' spans
 *   tcmalloc.transfer_cache_free_bytes free objects in the transfer slots
 *   tcmalloc.thread_cache_free_bytes, tcmalloc.current_total_thread_cache_bytes
 *                                     free objects in thread caches
 *   tcmalloc.max_total_thread_cache_bytes  the thread caches' total budget
 *   tcmalloc.min_per_thread_cache_bytes    one cache's least budget
 *   tcmalloc.metadata_bytes           bytes mapped for metadata
 *   heapcheck.sample_interval         mean bytes between samples (writable)
 * Only heapcheck.sample_interval is writable; the budgets are compile-time
 * constants here, so SetNumericProperty on them returns false.
 *
 * Locks: those hci_stats_get takes; none held across calls.  No malloc.
 */
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hc_internal.h"
#include "heapcheck.h"

typedef enum { OWN_UNKNOWN = 0, OWN_OWNED, OWN_NOT_OWNED } ownership_t;

// ---- properties ----

static bool property(const char *name, const hc_stats_t *st, size_t *v) {
  size_t slots = hci_central_slot_bytes();
  static const struct {
    const char *name;
    int which;
  } props[] = {
      {"generic.current_allocated_bytes", 0}, {"generic.heap_size", 1},
      {"generic.total_physical_bytes", 2},    {"tcmalloc.pageheap_free_bytes", 3},
      {"tcmalloc.pageheap_unmapped_bytes", 4}, {"tcmalloc.slack_bytes", 5},
      {"tcmalloc.central_cache_free_bytes", 6}, {"tcmalloc.transfer_cache_free_bytes", 7},
      {"tcmalloc.thread_cache_free_bytes", 8}, {"tcmalloc.current_total_thread_cache_bytes", 8},
      {"tcmalloc.max_total_thread_cache_bytes", 9}, {"tcmalloc.min_per_thread_cache_bytes", 10},
      {"tcmalloc.metadata_bytes", 11},         {"heapcheck.sample_interval", 12},
  };
  for (size_t i = 0; i < sizeof props / sizeof props[0]; i++) {
    if (strcmp(name, props[i].name) != 0) continue;
    switch (props[i].which) {
      case 0: *v = st->in_use; break;
      case 1: *v = st->heap_mapped; break;
      case 2: *v = st->heap_mapped - st->heap_released + st->metadata; break;
      case 3: *v = st->page_heap_free; break;
      case 4: *v = st->heap_released; break;
      case 5: *v = st->page_heap_free + st->heap_released; break;
      case 6: *v = st->central_free > slots ? st->central_free - slots : 0; break;
      case 7: *v = slots; break;
      case 8: *v = st->thread_cache_free; break;
      case 9: *v = HC_TC_BUDGET_TOTAL; break;
      case 10: *v = HC_TC_BUDGET_MIN; break;
      case 11: *v = st->metadata; break;
      default: *v = (size_t)atomic_load_explicit(&hci_sample_interval, memory_order_relaxed); break;
    }
    return true;
  }
  return false;
}

hc_public int MallocExtension_GetNumericProperty(const char *name, size_t *value) {
  if (!name || !value) return 0;
  hc_stats_t st;
  hci_stats_get(&st);
  return property(name, &st, value);
}

hc_public int MallocExtension_SetNumericProperty(const char *name, size_t value) {
  if (!name) return 0;
  if (strcmp(name, "heapcheck.sample_interval") == 0) {
    hci_sampler_set_interval(value);
    return 1;
  }
  return 0; /* unknown, or read-only here */
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

hc_public int MallocExtension_MallocMemoryStats(int *blocks, size_t *total, int histogram[64]) {
  /* tcmalloc keeps no per-block census (its debug allocator does): the
   * totals are the bytes in use and no blocks, as tcmalloc reports. */
  hc_stats_t st;
  hci_stats_get(&st);
  if (blocks) *blocks = 0;
  if (total) *total = st.in_use;
  if (histogram) memset(histogram, 0, 64 * sizeof histogram[0]);
  return 1;
}

// ---- memory ----

hc_public void MallocExtension_MarkThreadIdle(void) {
  hc_tcache_t *tc = hci_tc;
  if (!tc->is_static) hci_tc_flush(tc); /* the cache's objects go back to the central lists */
}

hc_public void MallocExtension_MarkThreadTemporarilyIdle(void) { MallocExtension_MarkThreadIdle(); }

hc_public void MallocExtension_MarkThreadBusy(void) {}

hc_public void MallocExtension_ReleaseToSystem(size_t num_bytes) {
  if (num_bytes) hci_ph_release(num_bytes);
}

hc_public void MallocExtension_ReleaseFreeMemory(void) {
  hci_central_drain();
  hci_sample_stash_drain();
  hci_ph_release(0);
}

static double release_rate = 1.0; /* accepted and reported; release is by threshold here */

hc_public void MallocExtension_SetMemoryReleaseRate(double rate) {
  if (rate >= 0) release_rate = rate;
}

hc_public double MallocExtension_GetMemoryReleaseRate(void) { return release_rate; }

hc_public size_t MallocExtension_GetEstimatedAllocatedSize(size_t size) {
  if (size <= HC_MAX_SMALL) return hci_classes[hci_size_class(size ? size : 1)].size;
  return (size + HC_PAGE_SIZE - 1) & ~(HC_PAGE_SIZE - 1);
}

hc_public size_t MallocExtension_GetAllocatedSize(const void *p) { return p ? hci_usable_size(p) : 0; }

hc_public int MallocExtension_GetOwnership(const void *p) {
  return p && hci_pagemap_span((uintptr_t)p) ? OWN_OWNED : OWN_NOT_OWNED;
}

hc_public size_t MallocExtension_GetThreadCacheSize(void) {
  hc_tcache_t *tc = hci_tc;
  if (tc->is_static) return 0;
  size_t bytes = 0;
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) bytes += (size_t)tc->lists[c].len * hci_classes[c].size;
  return bytes;
}

/* heapcheck has no debug allocator: every pointer the program holds is as
 * valid as the allocator's own checks on free make it. */
hc_public int MallocExtension_VerifyAllMemory(void) { return 1; }
hc_public int MallocExtension_VerifyNewMemory(const void *p) { return !p || hci_pagemap_span((uintptr_t)p) != NULL; }
hc_public int MallocExtension_VerifyArrayNewMemory(const void *p) { return MallocExtension_VerifyNewMemory(p); }
hc_public int MallocExtension_VerifyMallocMemory(const void *p) { return MallocExtension_VerifyNewMemory(p); }

// ---- tc_version ----

#define HC_STR2(x) #x
#define HC_STR(x) HC_STR2(x)

hc_public const char *tc_version(int *major, int *minor, const char **patch) {
  /* gperftools' API level served (2.10), and who serves it. */
  if (major) *major = 2;
  if (minor) *minor = 10;
  if (patch) *patch = "";
  return "gperftools 2.10 (heapcheck " HC_STR(HC_VERSION_MAJOR) "." HC_STR(HC_VERSION_MINOR) "." HC_STR(
      HC_VERSION_PATCH) ")";
}

static int new_mode;

hc_public int tc_set_new_mode(int flag) {
  int old = new_mode;
  new_mode = flag; /* recorded; malloc never calls the new-handler (glibc's behaviour) */
  return old;
}

// ---- stack traces (<gperftools/stacktrace.h>) ----

hc_public hc_noinline int hc_stack_trace(void **result, int *sizes, int max_depth, int skip_count) {
  if (!result || max_depth <= 0) return 0;
  if (skip_count < 0) skip_count = 0;
  uintptr_t pcs[HC_MAX_STACK_DEPTH];
  int want = max_depth + skip_count < HC_MAX_STACK_DEPTH ? max_depth + skip_count : HC_MAX_STACK_DEPTH;
  /* pcs[0]: the return address into our caller (the inline GetStackTrace
   * is part of it).  Frame pointers, and the DWARF walk when they stop
   * early (code built without them) and it sees further. */
  int n = hci_backtrace(pcs, want, 0);
  uintptr_t ra = (uintptr_t)__builtin_return_address(0);
  if (hci_unwind_dwarf_available() && (hci_unwinder == HC_UNWIND_DWARF || hci_unwind_fallback) && n < want) {
    uintptr_t dw[HC_MAX_STACK_DEPTH];
    int m = hci_unwind_dwarf_at(dw, want, ra, NULL);
    if (m > n) {
      memcpy(pcs, dw, (size_t)m * sizeof dw[0]);
      n = m;
    }
  }
  int k = 0;
  for (int i = skip_count; i < n && k < max_depth; i++, k++) {
    result[k] = (void *)pcs[i];
    if (sizes) sizes[k] = 0; /* frame sizes are not computed */
  }
  __asm__ volatile("" ::: "memory"); /* keeps our frame (no tail call) */
  return k;
}

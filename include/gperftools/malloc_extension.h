/* gperftools/malloc_extension.h - gperftools' MallocExtension C++ class,
 * served by libheapcheck.  Header only: every member is an inline function
 * over the C API of gperftools/malloc_extension_c.h (and heapcheck.h for the
 * heap samples), so libheapcheck stays a C library with no C++ runtime.
 * Code written for gperftools compiles unchanged; objects compiled against
 * gperftools' own header must be recompiled.
 *
 * What each member does here (see docs/profiling.md):
 *  - GetNumericProperty: generic.current_allocated_bytes, generic.heap_size,
 *    generic.total_physical_bytes, tcmalloc.pageheap_free_bytes,
 *    tcmalloc.pageheap_unmapped_bytes, tcmalloc.slack_bytes,
 *    tcmalloc.central_cache_free_bytes, tcmalloc.transfer_cache_free_bytes,
 *    tcmalloc.thread_cache_free_bytes, tcmalloc.current_total_thread_cache_bytes,
 *    tcmalloc.max_total_thread_cache_bytes, tcmalloc.min_per_thread_cache_bytes,
 *    tcmalloc.metadata_bytes, heapcheck.sample_interval.
 *    tcmalloc.pageheap_committed_bytes, tcmalloc.aggressive_memory_decommit,
 *    tcmalloc.heap_limit_mb.  SetNumericProperty:
 *    tcmalloc.max_total_thread_cache_bytes, tcmalloc.aggressive_memory_decommit,
 *    tcmalloc.heap_limit_mb, heapcheck.sample_interval; false for any other.
 *  - GetStats: malloc_stats()'s text.  MallocMemoryStats: bytes in use, no
 *    per-block census (blocks = 0, histogram zero), true.
 *  - ReleaseFreeMemory / ReleaseToSystem(n): free pages back to the OS
 *    (what a call releases beyond n counts against the next, as tcmalloc).
 *  - Ranges: every run of heap pages (INUSE, FREE, UNMAPPED).
 *    MarkThreadIdle / MarkThreadTemporarilyIdle: this thread's cache goes
 *    back to the central lists; MarkThreadBusy: nothing to do.
 *  - GetAllocatedSize(p): tc_malloc_size(p) (in checker mode the block's
 *    whole slot, as nallocx; malloc_usable_size says the requested size
 *    there); GetEstimatedAllocatedSize(n):
 *    the size class (or page-rounded size) n would get; GetOwnership(p):
 *    kOwned when p lies in heapcheck's heap.
 *  - VerifyAllMemory and the Verify*Memory family: true (no debug
 *    allocator; the Verify*Memory(p) forms are false for a non-null pointer
 *    outside the heap).
 *  - GetHeapSample: the heap profile of the live sampled objects (the text
 *    hc_heap_profile_get / GetHeapProfile returns, pprof's format).
 *    GetHeapGrowthStacks / ReadHeapGrowthStackTraces: one entry per growth
 *    of the heap from the OS (bytes and the allocation stack), as tcmalloc.
 *  - GetSystemAllocator / SetSystemAllocator: the heap grows from the
 *    given SysAllocator instead of mmap.
 */
#ifndef HEAPCHECK_GPERFTOOLS_MALLOC_EXTENSION_H
#define HEAPCHECK_GPERFTOOLS_MALLOC_EXTENSION_H

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "../heapcheck.h"
#include "malloc_extension_c.h"

#ifndef PERFTOOLS_DLL_DECL
#define PERFTOOLS_DLL_DECL
#endif

static const int kMallocHistogramSize = 64;

typedef std::string MallocExtensionWriter;

namespace base {
struct MallocRange;
}

class SysAllocator {
 public:
  SysAllocator() {}
  virtual ~SysAllocator() {}
  virtual void *Alloc(size_t size, size_t *actual_size, size_t alignment) = 0;
};

class MallocExtension {
 public:
  virtual ~MallocExtension() {}
  static void Initialize() {}

  virtual bool VerifyAllMemory() { return MallocExtension_VerifyAllMemory() != 0; }
  virtual bool VerifyNewMemory(const void *p) { return MallocExtension_VerifyNewMemory(p) != 0; }
  virtual bool VerifyArrayNewMemory(const void *p) { return MallocExtension_VerifyArrayNewMemory(p) != 0; }
  virtual bool VerifyMallocMemory(const void *p) { return MallocExtension_VerifyMallocMemory(p) != 0; }
  virtual bool MallocMemoryStats(int *blocks, size_t *total, int histogram[kMallocHistogramSize]) {
    return MallocExtension_MallocMemoryStats(blocks, total, histogram) != 0;
  }
  virtual void GetStats(char *buffer, int buffer_length) { MallocExtension_GetStats(buffer, buffer_length); }
  virtual void GetHeapSample(MallocExtensionWriter *writer) {
    char *p = hc_heap_profile_get();
    if (!p) return;
    writer->append(p);
    free(p);
  }
  /* One line per growth of the heap from the OS, newest first: gperftools'
   * "heap profile: ... growth" text, then the address map. */
  virtual void GetHeapGrowthStacks(MallocExtensionWriter *writer) {
    void **entries = ReadHeapGrowthStackTraces();
    uintptr_t count = 0, bytes = 0;
    for (void **e = entries; e[0]; e += 3 + reinterpret_cast<uintptr_t>(e[2])) {
      count += reinterpret_cast<uintptr_t>(e[0]);
      bytes += reinterpret_cast<uintptr_t>(e[1]);
    }
    writer->append("heap profile: ");
    append_count_size_(writer, count, bytes);
    writer->append(" growth\n");
    for (void **e = entries; e[0]; e += 3 + reinterpret_cast<uintptr_t>(e[2])) {
      append_count_size_(writer, reinterpret_cast<uintptr_t>(e[0]), reinterpret_cast<uintptr_t>(e[1]));
      for (uintptr_t i = 0; i < reinterpret_cast<uintptr_t>(e[2]); i++) {
        char pc[32];
        snprintf(pc, sizeof pc, " %p", e[3 + i]);
        writer->append(pc);
      }
      writer->append("\n");
    }
    delete[] entries;
    append_maps_(writer);
  }

  typedef void(RangeFunction)(void *, const base::MallocRange *);
  /* Every run of heap pages, in address order: in use, free, unmapped. */
  virtual void Ranges(void *arg, RangeFunction func);

  virtual bool GetNumericProperty(const char *property, size_t *value) {
    return MallocExtension_GetNumericProperty(property, value) != 0;
  }
  virtual bool SetNumericProperty(const char *property, size_t value) {
    return MallocExtension_SetNumericProperty(property, value) != 0;
  }
  virtual void MarkThreadIdle() { MallocExtension_MarkThreadIdle(); }
  virtual void MarkThreadBusy() { MallocExtension_MarkThreadBusy(); }
  /* The allocator the heap grows from: heapcheck's mmap, or the one given
   * to SetSystemAllocator (called with the page-heap lock held: it must
   * not allocate; its memory is never given back). */
  virtual SysAllocator *GetSystemAllocator() { return *sys_slot_(); }
  virtual void SetSystemAllocator(SysAllocator *a) {
    if (!a) return;
    *sys_slot_() = a;
    hc_set_system_allocator(&sys_alloc_call_, a);
  }
  virtual void ReleaseToSystem(size_t num_bytes) { MallocExtension_ReleaseToSystem(num_bytes); }
  virtual void ReleaseFreeMemory() { MallocExtension_ReleaseFreeMemory(); }
  virtual void SetMemoryReleaseRate(double rate) { MallocExtension_SetMemoryReleaseRate(rate); }
  virtual double GetMemoryReleaseRate() { return MallocExtension_GetMemoryReleaseRate(); }
  virtual size_t GetEstimatedAllocatedSize(size_t size) { return MallocExtension_GetEstimatedAllocatedSize(size); }
  virtual size_t GetAllocatedSize(const void *p) { return MallocExtension_GetAllocatedSize(p); }

  enum Ownership { kUnknownOwnership = 0, kOwned, kNotOwned };
  virtual Ownership GetOwnership(const void *p) { return static_cast<Ownership>(MallocExtension_GetOwnership(p)); }

  /* The process's extension: heapcheck's, or the one given to Register(). */
  static MallocExtension *instance() { return *slot_(); }
  static void Register(MallocExtension *implementation) {
    if (implementation) *slot_() = implementation;
  }

  struct FreeListInfo {
    size_t min_object_size;
    size_t max_object_size;
    size_t total_bytes_free;
    const char *type;
  };
  /* One entry per kind of free memory: the page heap (mapped and
   * released), the central lists and transfer slots, the thread caches. */
  virtual void GetFreeListSizes(std::vector<FreeListInfo> *v) {
    static const struct {
      const char *property, *type;
    } kinds[] = {{"tcmalloc.pageheap_free_bytes", "tcmalloc.page"},
                 {"tcmalloc.pageheap_unmapped_bytes", "tcmalloc.page_unmapped"},
                 {"tcmalloc.central_cache_free_bytes", "tcmalloc.central"},
                 {"tcmalloc.transfer_cache_free_bytes", "tcmalloc.transfer"},
                 {"tcmalloc.thread_cache_free_bytes", "tcmalloc.thread"}};
    v->clear();
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
      FreeListInfo f = {0, static_cast<size_t>(-1), 0, kinds[i].type};
      MallocExtension_GetNumericProperty(kinds[i].property, &f.total_bytes_free);
      v->push_back(f);
    }
  }
  /* The live sampled objects, gperftools' layout: {1, size, depth, pc...}
   * each, then 0; the caller deletes it with delete[]. */
  virtual void **ReadStackTraces(int *sample_period) {
    for (;;) {
      size_t need = hc_heap_sample_traces(NULL, 0, NULL) + 256; /* room for samples meanwhile */
      void **r = new void *[need];
      if (hc_heap_sample_traces(r, need, sample_period) <= need) return r;
      delete[] r;
    }
  }
  /* gperftools' layout, newest growth first: {1, bytes, depth, pc...}
   * per growth, then 0; the caller deletes it with delete[]. */
  virtual void **ReadHeapGrowthStackTraces() {
    for (;;) {
      size_t need = hc_heap_growth_traces(NULL, 0) + 64; /* room for growths meanwhile */
      void **r = new void *[need];
      if (hc_heap_growth_traces(r, need) <= need) return r;
      delete[] r;
    }
  }
  virtual size_t GetThreadCacheSize() { return MallocExtension_GetThreadCacheSize(); }
  virtual void MarkThreadTemporarilyIdle() { MallocExtension_MarkThreadTemporarilyIdle(); }

 private:
  static void append_count_size_(MallocExtensionWriter *w, uintptr_t count, uintptr_t bytes) {
    char buf[100];
    snprintf(buf, sizeof buf, "%6" PRIu64 ": %8" PRIu64 " [%6" PRIu64 ": %8" PRIu64 "] @", (uint64_t)count,
             (uint64_t)bytes, (uint64_t)count, (uint64_t)bytes);
    w->append(buf);
  }
  static void append_maps_(MallocExtensionWriter *w) {
    w->append("\nMAPPED_LIBRARIES:\n");
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) w->append(buf, n);
    fclose(f);
  }
  class DefaultSysAllocator_ : public SysAllocator {
   public:
    virtual void *Alloc(size_t size, size_t *actual_size, size_t alignment) {
      return hc_system_alloc_default(size, actual_size, alignment);
    }
  };
  static SysAllocator **sys_slot_() {
    static DefaultSysAllocator_ builtin;
    static SysAllocator *current = &builtin;
    return &current;
  }
  static void *sys_alloc_call_(void *ctx, size_t size, size_t *actual, size_t align) {
    return static_cast<SysAllocator *>(ctx)->Alloc(size, actual, align);
  }
  static MallocExtension **slot_() {
    static MallocExtension builtin;
    static MallocExtension *current = &builtin;
    return &current;
  }
};

namespace base {
struct MallocRange {
  enum Type { INUSE, FREE, UNMAPPED, UNKNOWN };
  uintptr_t address;
  size_t length;
  Type type;
  double fraction;
};
}  // namespace base

namespace heapcheck_detail_ {
struct RangeCall {
  void *arg;
  MallocExtension::RangeFunction *func;
};
inline void range_call(void *ctx, const hc_malloc_range_t *r) {
  RangeCall *c = static_cast<RangeCall *>(ctx);
  base::MallocRange m;
  m.address = r->address;
  m.length = r->length;
  m.type = static_cast<base::MallocRange::Type>(r->type);
  m.fraction = r->fraction;
  c->func(c->arg, &m);
}
}  // namespace heapcheck_detail_

inline void MallocExtension::Ranges(void *arg, RangeFunction func) {
  heapcheck_detail_::RangeCall c = {arg, func};
  hc_malloc_ranges(&heapcheck_detail_::range_call, &c);
}

#endif

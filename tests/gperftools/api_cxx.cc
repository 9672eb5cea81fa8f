// api_cxx.cc - a gperftools user's C++ program: every gperftools header
// heapcheck ships, compiled against include/ only and linked with
// -lheapcheck alone.  Checks the documented semantics of gperftools' API
// (MallocExtension, tc_*, stacktrace) as heapcheck serves them.  Exits 0
// when every check holds; prints one line per failure.
#include <google/heap-checker.h>
#include <google/heap-profiler.h>
#include <google/malloc_extension.h>
#include <google/malloc_extension_c.h>
#include <google/stacktrace.h>
#include <google/tcmalloc.h>
#include <gperftools/heap-checker.h>
#include <gperftools/heap-profiler.h>
#include <gperftools/malloc_extension.h>
#include <gperftools/malloc_extension_c.h>
#include <gperftools/stacktrace.h>
#include <gperftools/tcmalloc.h>

#include <pthread.h>
#include <sanitizer/lsan_interface.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <new>
#include <string>
#include <vector>

#include "../hc_check.h"
#define EXPECT(c) CHECK((c), "expected")

static size_t prop(const char *name) {
  size_t v = 0;
  EXPECT(MallocExtension::instance()->GetNumericProperty(name, &v));
  return v;
}

static void test_tc() {
  int major = 0, minor = 0;
  const char *patch = NULL;
  const char *v = tc_version(&major, &minor, &patch);
  EXPECT(major == TC_VERSION_MAJOR && minor == TC_VERSION_MINOR);
  EXPECT(patch && strcmp(patch, "") == 0);
  EXPECT(v && strcmp(v, "gperftools 2.10") == 0); /* as gperftools says it (its unit test compares) */
  char *p = static_cast<char *>(tc_malloc(100));
  EXPECT(p && tc_malloc_size(p) >= 100);
  memset(p, 7, 100);
  p = static_cast<char *>(tc_realloc(p, 5000));
  EXPECT(p && p[99] == 7);
  tc_free(p);
  int *z = static_cast<int *>(tc_calloc(10, sizeof(int)));
  EXPECT(z && z[0] == 0 && z[9] == 0);
  tc_cfree(z);
  void *a = tc_memalign(256, 10);
  EXPECT(a && (reinterpret_cast<uintptr_t>(a) & 255) == 0);
  tc_free(a);
  void *b = NULL;
  EXPECT(tc_posix_memalign(&b, 64, 100) == 0 && b && (reinterpret_cast<uintptr_t>(b) & 63) == 0);
  tc_free_sized(b, 100);
  void *c = tc_valloc(10);
  EXPECT(c && (reinterpret_cast<uintptr_t>(c) & 4095) == 0);
  tc_free(c);
  c = tc_pvalloc(10);
  EXPECT(c && tc_malloc_size(c) >= 10);
  tc_free(c);
  void *n = tc_new(40);
  EXPECT(n);
  tc_delete(n);
  n = tc_newarray(40);
  tc_deletearray_sized(n, 40);
  n = tc_new_nothrow(40, std::nothrow);
  EXPECT(n);
  tc_delete_nothrow(n, std::nothrow);
  n = tc_new_aligned(100, std::align_val_t(512));
  EXPECT(n && (reinterpret_cast<uintptr_t>(n) & 511) == 0);
  tc_delete_aligned(n, std::align_val_t(512));
  // Any pointer from any entry point goes to any other.
  n = malloc(10);
  tc_delete(n);
  n = tc_malloc(10);
  free(n);
  struct mallinfo2 mi = tc_mallinfo2();
  EXPECT(mi.arena > 0);
  EXPECT(tc_mallopt(1, 1) == 1);
  EXPECT(tc_set_new_mode(1) == 0 && tc_set_new_mode(0) == 1);
}

class Custom : public MallocExtension {
 public:
  bool VerifyAllMemory() override { return false; }
};

static void test_extension() {
  MallocExtension *ext = MallocExtension::instance();
  EXPECT(ext && ext == MallocExtension::instance());
  size_t before = prop("generic.current_allocated_bytes");
  char *big = static_cast<char *>(malloc(8 << 20));
  memset(big, 1, 8 << 20);
  size_t during = prop("generic.current_allocated_bytes");
  EXPECT(during >= before + (8 << 20));
  EXPECT(prop("generic.heap_size") >= during);
  EXPECT(prop("generic.total_physical_bytes") >= during);
  EXPECT(ext->GetAllocatedSize(big) >= (8u << 20));
  EXPECT(ext->GetOwnership(big) == MallocExtension::kOwned);
  int local = 0;
  EXPECT(ext->GetOwnership(&local) == MallocExtension::kNotOwned);
  EXPECT(MallocExtension_GetOwnership(&local) == MallocExtension_kNotOwned);
  free(big);
  EXPECT(prop("generic.current_allocated_bytes") < during);
  // Freed pages go back to the OS on request.
  ext->ReleaseFreeMemory();
  EXPECT(prop("tcmalloc.pageheap_unmapped_bytes") >= (8u << 20));
  EXPECT(prop("tcmalloc.pageheap_free_bytes") < (8u << 20));
  ext->ReleaseToSystem(1 << 20);
  // Every documented property answers; unknown and read-only ones do not.
  const char *names[] = {"tcmalloc.slack_bytes", "tcmalloc.central_cache_free_bytes",
                         "tcmalloc.transfer_cache_free_bytes", "tcmalloc.thread_cache_free_bytes",
                         "tcmalloc.current_total_thread_cache_bytes", "tcmalloc.metadata_bytes"};
  for (const char *nm : names) (void)prop(nm);
  EXPECT(prop("tcmalloc.max_total_thread_cache_bytes") == (32u << 20));
  EXPECT(prop("tcmalloc.min_per_thread_cache_bytes") > 0);
  size_t v = 0;
  EXPECT(!ext->GetNumericProperty("no.such_property", &v));
  EXPECT(!ext->SetNumericProperty("generic.heap_size", 1));
  EXPECT(!ext->SetNumericProperty("tcmalloc.pageheap_free_bytes", 1));
  EXPECT(!ext->SetNumericProperty("no.such_property", 1));
  EXPECT(ext->SetNumericProperty("tcmalloc.max_total_thread_cache_bytes", 64u << 20));
  EXPECT(prop("tcmalloc.max_total_thread_cache_bytes") == (64u << 20));
  EXPECT(ext->SetNumericProperty("tcmalloc.max_total_thread_cache_bytes", 32u << 20));
  size_t rate = prop("heapcheck.sample_interval");
  EXPECT(ext->SetNumericProperty("heapcheck.sample_interval", 1 << 20));
  EXPECT(prop("heapcheck.sample_interval") == (1u << 20));
  EXPECT(ext->SetNumericProperty("heapcheck.sample_interval", rate));
  // Sizes.
  char *s = static_cast<char *>(malloc(100));
  EXPECT(ext->GetEstimatedAllocatedSize(100) >= 100);
  EXPECT(ext->GetAllocatedSize(s) >= 100 && ext->GetAllocatedSize(s) <= ext->GetEstimatedAllocatedSize(100));
  // Checker mode: a block takes a byte more than asked (a page more here).
  EXPECT(HeapLeakChecker::IsActive() ? ext->GetEstimatedAllocatedSize(1 << 20) == (1u << 20) + 8192
                                     : ext->GetEstimatedAllocatedSize(1 << 20) == (1u << 20));
  EXPECT(ext->GetEstimatedAllocatedSize((1 << 20) + 1) == (1u << 20) + 8192 ||
        ext->GetEstimatedAllocatedSize((1 << 20) + 1) > (1u << 20));
  free(s);
  // Thread caches: an idle thread's cache is empty.
  void *ptrs[64];
  for (void *&p : ptrs) p = malloc(48);
  for (void *p : ptrs) free(p);
  ext->MarkThreadIdle();
  EXPECT(ext->GetThreadCacheSize() == 0);
  ext->MarkThreadBusy();
  ext->MarkThreadTemporarilyIdle();
  // Statistics and verification.
  char buf[8192];
  ext->GetStats(buf, sizeof buf);
  EXPECT(strstr(buf, "MALLOC:") && strstr(buf, "Bytes in use by application"));
  char tiny[8];
  ext->GetStats(tiny, sizeof tiny);
  EXPECT(strlen(tiny) == 7);
  int blocks = -1, hist[kMallocHistogramSize];
  size_t total = 0;
  EXPECT(ext->MallocMemoryStats(&blocks, &total, hist));
  EXPECT(blocks > 0 && total > 0); /* a census (hooks_ext checks it exactly) */
  EXPECT(ext->VerifyAllMemory());
  void *m = malloc(10);
  EXPECT(ext->VerifyMallocMemory(m) && ext->VerifyNewMemory(NULL) && !ext->VerifyArrayNewMemory(&local));
  free(m);
  std::vector<MallocExtension::FreeListInfo> lists;
  ext->GetFreeListSizes(&lists);
  EXPECT(lists.size() == 5 && strcmp(lists[0].type, "tcmalloc.page") == 0);
  ext->SetMemoryReleaseRate(3.5);
  EXPECT(ext->GetMemoryReleaseRate() == 3.5);
  int period = -1;
  void **traces = ext->ReadStackTraces(&period);
  EXPECT(traces != NULL && period == (int)prop("heapcheck.sample_interval"));
  delete[] traces;
  EXPECT(ext->GetSystemAllocator() != NULL); /* heapcheck's mmap */
  // Heap samples: pprof's heap profile text.
  MallocExtensionWriter w;
  ext->GetHeapSample(&w);
  EXPECT(w.compare(0, 13, "heap profile:") == 0);
  MallocExtensionWriter g;
  ext->GetHeapGrowthStacks(&g);
  EXPECT(g.compare(0, 13, "heap profile:") == 0);
  // Register replaces the instance.
  static Custom custom;
  MallocExtension::Register(&custom);
  EXPECT(MallocExtension::instance() == &custom && !MallocExtension::instance()->VerifyAllMemory());
  MallocExtension::Register(ext);
}

// Stack traces: result[0] lies in the caller of GetStackTrace.
static void *where_level1;
__attribute__((noinline)) static int level2(void **r, int *sizes, int skip, bool frames, bool ctx) {
  where_level1 = __builtin_return_address(0);
  int n;
  if (frames) n = ctx ? GetStackFramesWithContext(r, sizes, 8, skip, NULL) : GetStackFrames(r, sizes, 8, skip);
  else n = ctx ? GetStackTraceWithContext(r, 8, skip, NULL) : GetStackTrace(r, 8, skip);
  __asm__ volatile("" ::: "memory");
  return n;
}
__attribute__((noinline)) static int level1(void **r, int *sizes, int skip, bool frames, bool ctx) {
  int n = level2(r, sizes, skip, frames, ctx);
  __asm__ volatile("" ::: "memory");
  return n;
}

static void test_stacktrace() {
  for (int variant = 0; variant < 4; variant++) {
    bool frames = variant & 1, ctx = variant & 2;
    void *r[8];
    int sizes[8];
    memset(sizes, 0x55, sizeof sizes);
    int n = level1(r, sizes, 0, frames, ctx);
    EXPECT(n >= 3);
    EXPECT(n >= 2 && r[1] == where_level1);  // r[0] in level2, r[1] its return into level1
    EXPECT(reinterpret_cast<uintptr_t>(r[0]) != 0 && r[0] != r[1]);
    if (frames) EXPECT(sizes[0] > 0 && sizes[1] > 0); /* frame sizes (hooks_ext checks them) */
    int m = level1(r, sizes, 1, frames, ctx);
    EXPECT(m == n - 1 && r[0] == where_level1);
  }
  void *one[1];
  EXPECT(GetStackTrace(one, 1, 0) == 1);
  EXPECT(GetStackTrace(one, 0, 0) == 0);
}

// The heap-checker and heap-profiler headers work through either path.
static void test_checker_headers() {
  HeapLeakChecker::Disabler d;
  EXPECT(IsHeapProfilerRunning() == 0 || IsHeapProfilerRunning() == 1);
}

// LeakSanitizer's C++ helper: what is allocated under a ScopedDisabler is
// never a leak (the _checker run of this program fails if it is).
static void *volatile lsan_sink;
static void test_lsan_scoped_disabler() {
  __lsan::ScopedDisabler d;
  lsan_sink = malloc(123);
  lsan_sink = NULL;
}

int main() {
  test_lsan_scoped_disabler();
  test_tc();
  test_extension();
  test_stacktrace();
  test_checker_headers();
  printf("%s: %d failures\n", __FILE__, failures);
  return failures ? 1 : 0;
}

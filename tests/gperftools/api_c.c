/* api_c.c - the C headers gperftools ships (malloc_extension_c.h,
 * tcmalloc.h, heap-profiler.h; stacktrace.h is C++ in gperftools but works
 * in C here), compiled as C against include/ only, linked with -lheapcheck. */
#include <gperftools/heap-profiler.h>
#include <gperftools/malloc_extension_c.h>
#include <gperftools/stacktrace.h>
#include <gperftools/tcmalloc.h>
#include <google/malloc_extension_c.h>
#include <google/tcmalloc.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../hc_check.h"
#define EXPECT(c) CHECK((c), "expected")

#if defined(__x86_64__) || defined(__aarch64__)
/* GetStackTrace from a frame whose saved frame pointer leads to a record
 * {end, not a return address}: what a frame-pointer walk finds when code
 * without frame pointers left a pointer in rbp.  Asked for exactly as
 * many frames as the walk finds (so no other walk is tried), the library
 * returned the bogus address (gperftools' heap-checker_unittest, linked
 * statically, got a pointer to the library's metadata as mmap's caller). */
static __attribute__((noinline)) int trace_through(uintptr_t *rec, void **r, int max) {
  uintptr_t *volatile fr = (uintptr_t *)__builtin_frame_address(0); /* {saved fp, return address} */
  uintptr_t saved = fr[0];
  fr[0] = (uintptr_t)rec;
  __asm__ volatile("" ::: "memory");
  int n = GetStackTrace(r, max, 0);
  __asm__ volatile("" ::: "memory");
  fr[0] = saved;
  return n;
}

static __attribute__((noinline)) int bogus_frames(void) {
  uintptr_t rec[2];
  rec[0] = 0;                    /* the walk ends after this record */
  rec[1] = (uintptr_t)&rec[1];   /* a stack address: in no module */
  void *r[3];
  int n = trace_through(rec, r, 3), bad = 0;
  for (int i = 0; i < n; i++) bad += r[i] == (void *)rec[1];
  __asm__ volatile("" ::: "memory");
  return n >= 1 && !bad;
}
#endif

int main(void) {
  size_t v = 0, before;
  EXPECT(MallocExtension_GetNumericProperty("generic.current_allocated_bytes", &before));
  void *p = tc_malloc(1 << 20);
  EXPECT(MallocExtension_GetNumericProperty("generic.current_allocated_bytes", &v) && v >= before + (1 << 20));
  EXPECT(MallocExtension_GetAllocatedSize(p) >= (1 << 20));
  EXPECT(MallocExtension_GetOwnership(p) == MallocExtension_kOwned);
  EXPECT(MallocExtension_GetOwnership(&v) == MallocExtension_kNotOwned);
  tc_free(p);
  EXPECT(!MallocExtension_GetNumericProperty("generic.nothing", &v));
  EXPECT(!MallocExtension_SetNumericProperty("generic.heap_size", 1));
  char buf[4096];
  MallocExtension_GetStats(buf, sizeof buf);
  EXPECT(strstr(buf, "MALLOC:") != NULL);
  /* Freed objects stay in this thread's cache and are counted there, and in
   * the total over every cache. */
  void *objs[8];
  /* Sampling off: a sampled object has a span of its own and is freed to
   * no cache (HEAPCHECK_SAMPLE_PARAMETER=64 in the environment sampled
   * them all). */
  size_t interval = 0;
  EXPECT(MallocExtension_GetNumericProperty("heapcheck.sample_interval", &interval));
  EXPECT(MallocExtension_SetNumericProperty("heapcheck.sample_interval", 0));
  for (int i = 0; i < 8; i++) objs[i] = tc_malloc(200);
  EXPECT(MallocExtension_SetNumericProperty("heapcheck.sample_interval", interval));
  size_t cached = MallocExtension_GetThreadCacheSize();
  for (int i = 0; i < 8; i++) tc_free(objs[i]);
  size_t all = 0;
  EXPECT(MallocExtension_GetThreadCacheSize() >= cached + 8 * 200);
  EXPECT(MallocExtension_GetNumericProperty("tcmalloc.current_total_thread_cache_bytes", &all) &&
         all >= MallocExtension_GetThreadCacheSize());
  MallocExtension_ReleaseFreeMemory();
  MallocExtension_MarkThreadIdle();
  EXPECT(MallocExtension_GetThreadCacheSize() == 0);
  EXPECT(MallocExtension_VerifyAllMemory() == 1);
  EXPECT(MallocExtension_GetEstimatedAllocatedSize(1) >= 1);
  int major = 0;
  EXPECT(strcmp(tc_version(&major, NULL, NULL), "gperftools 2.10") == 0 && major == 2);
  void *r[4];
  EXPECT(GetStackTrace(r, 4, 0) >= 2);
#if defined(__x86_64__) || defined(__aarch64__)
  CHECK(bogus_frames(), "GetStackTrace returned a frame record's bogus return address");
#endif
  char *prof = GetHeapProfile();
  EXPECT(prof && strncmp(prof, "heap profile:", 13) == 0);
  free(prof);
  printf("%s: %d failures\n", __FILE__, failures);
  return failures ? 1 : 0;
}

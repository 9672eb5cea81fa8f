/* gperftools/malloc_extension_c.h - gperftools' MallocExtension C API,
 * served by libheapcheck (same names and signatures as gperftools 2.10).
 * Booleans are ints (1 = true).  See gperftools/malloc_extension.h for
 * what each function does here, and docs/profiling.md. */
#ifndef HEAPCHECK_GPERFTOOLS_MALLOC_EXTENSION_C_H
#define HEAPCHECK_GPERFTOOLS_MALLOC_EXTENSION_C_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifndef PERFTOOLS_DLL_DECL
#define PERFTOOLS_DLL_DECL
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define kMallocExtensionHistogramSize 64

PERFTOOLS_DLL_DECL int MallocExtension_VerifyAllMemory(void);
PERFTOOLS_DLL_DECL int MallocExtension_VerifyNewMemory(const void *p);
PERFTOOLS_DLL_DECL int MallocExtension_VerifyArrayNewMemory(const void *p);
PERFTOOLS_DLL_DECL int MallocExtension_VerifyMallocMemory(const void *p);
PERFTOOLS_DLL_DECL int MallocExtension_MallocMemoryStats(int *blocks, size_t *total,
                                                         int histogram[kMallocExtensionHistogramSize]);
PERFTOOLS_DLL_DECL void MallocExtension_GetStats(char *buffer, int buffer_length);
PERFTOOLS_DLL_DECL int MallocExtension_GetNumericProperty(const char *property, size_t *value);
PERFTOOLS_DLL_DECL int MallocExtension_SetNumericProperty(const char *property, size_t value);
PERFTOOLS_DLL_DECL void MallocExtension_MarkThreadIdle(void);
PERFTOOLS_DLL_DECL void MallocExtension_MarkThreadBusy(void);
PERFTOOLS_DLL_DECL void MallocExtension_ReleaseToSystem(size_t num_bytes);
PERFTOOLS_DLL_DECL void MallocExtension_ReleaseFreeMemory(void);
PERFTOOLS_DLL_DECL void MallocExtension_SetMemoryReleaseRate(double rate);
PERFTOOLS_DLL_DECL double MallocExtension_GetMemoryReleaseRate(void);
PERFTOOLS_DLL_DECL size_t MallocExtension_GetEstimatedAllocatedSize(size_t size);
PERFTOOLS_DLL_DECL size_t MallocExtension_GetAllocatedSize(const void *p);
PERFTOOLS_DLL_DECL size_t MallocExtension_GetThreadCacheSize(void);
PERFTOOLS_DLL_DECL void MallocExtension_MarkThreadTemporarilyIdle(void);

typedef enum {
  MallocExtension_kUnknownOwnership = 0,
  MallocExtension_kOwned,
  MallocExtension_kNotOwned
} MallocExtension_Ownership;
PERFTOOLS_DLL_DECL MallocExtension_Ownership MallocExtension_GetOwnership(const void *p);

/* heapcheck's own, behind MallocExtension::Ranges: fn is called once per
 * run of heap pages, in address order (types as base::MallocRange's). */
enum { HC_RANGE_INUSE, HC_RANGE_FREE, HC_RANGE_UNMAPPED, HC_RANGE_UNKNOWN };
typedef struct hc_malloc_range {
  uintptr_t address;
  size_t length;
  int type;
  double fraction; /* in-use small-object runs: the part of the bytes allocated */
} hc_malloc_range_t;
void hc_malloc_ranges(void (*fn)(void *arg, const hc_malloc_range_t *r), void *arg);

/* heapcheck's own, behind MallocExtension::ReadStackTraces: the live
 * sampled objects, same layout and contract as below; *period gets the
 * mean sampling interval. */
size_t hc_heap_sample_traces(void **out, size_t cap, int *period);

/* heapcheck's own, behind MallocExtension::ReadHeapGrowthStackTraces:
 * writes up to cap slots (gperftools' layout, 0-terminated) when out is not
 * NULL; returns the slots all growths need. */
size_t hc_heap_growth_traces(void **out, size_t cap);

/* heapcheck's own, behind MallocExtension::Get/SetSystemAllocator: the
 * default (mmap) and the function the heap grows from. */
void *hc_system_alloc_default(size_t size, size_t *actual, size_t align);
void hc_set_system_allocator(void *(*fn)(void *ctx, size_t size, size_t *actual, size_t align), void *ctx);

#ifdef __cplusplus
}
#endif

#endif

/* gperftools/heap-profiler.h - gperftools' heap-profiler C API, served by
 * libheapcheck (same names and signatures as gperftools 2.10, so programs
 * written for -ltcmalloc build and link unchanged against -lheapcheck).
 *
 * heapcheck samples allocations all the time (about one per
 * HEAPCHECK_SAMPLE_PARAMETER bytes, 512 KiB by default), so these calls
 * only decide when profile files are written; the data is always there.
 * See docs/profiling.md.  Differences from gperftools:
 *  - file names are <prefix>.<pid>.<seq>.heap (gperftools: <prefix>.<seq>.heap);
 *  - sampled profiles carry the `heap_v2/<interval>` header, which pprof
 *    un-samples; exact ones (checker on, or interval 1) `heapprofile`;
 *  - GetHeapProfile() returns the current profile even when the profiler
 *    was never started (gperftools returns an empty string).
 */
#ifndef HEAPCHECK_GPERFTOOLS_HEAP_PROFILER_H
#define HEAPCHECK_GPERFTOOLS_HEAP_PROFILER_H

#include <stddef.h>

#ifndef PERFTOOLS_DLL_DECL
#define PERFTOOLS_DLL_DECL
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Starts writing profiles to <prefix>.<pid>.0001.heap, .0002 ... when the
 * HEAP_PROFILE_*_INTERVAL thresholds are crossed, on HeapProfilerDump(),
 * and at exit.  Does nothing when a profiler is already running. */
PERFTOOLS_DLL_DECL void HeapProfilerStart(const char *prefix);

/* Non-zero between HeapProfilerStart() (or HEAPPROFILE=...) and HeapProfilerStop(). */
PERFTOOLS_DLL_DECL int IsHeapProfilerRunning(void);

/* Stops writing files.  A later HeapProfilerStart() continues the numbering. */
PERFTOOLS_DLL_DECL void HeapProfilerStop(void);

/* Writes the next profile file now (when running); reason goes into the
 * "Dumping heap profile to <file> (<reason>)" line on stderr. */
PERFTOOLS_DLL_DECL void HeapProfilerDump(const char *reason);

/* The current heap profile as a NUL-terminated string allocated with
 * malloc(); the caller free()s it.  NULL when out of memory. */
PERFTOOLS_DLL_DECL char *GetHeapProfile(void);

#ifdef __cplusplus
}
#endif

#endif

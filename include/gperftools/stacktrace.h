/* gperftools/stacktrace.h - gperftools' stack walks, served by libheapcheck.
 * Header only: each function is an always-inline call of hc_stack_trace()
 * (heapcheck.h), so result[0] is a return address in the function that
 * called GetStackTrace, as in gperftools; skip_count drops that many more
 * innermost frames.  Frame pointers first, heapcheck's DWARF unwinder where
 * they stop early.  The WithContext forms ignore uc (they walk from the
 * caller, which inside a signal handler continues through the signal frame
 * when its unwind data is there).  Frame sizes (GetStackFrames): the
 * distance between a frame's record and the next one's, as gperftools'
 * frame-pointer walk; 0 for the outermost frame and for frames only the
 * DWARF walk found. */
#ifndef HEAPCHECK_GPERFTOOLS_STACKTRACE_H
#define HEAPCHECK_GPERFTOOLS_STACKTRACE_H

#include "../heapcheck.h"

#ifndef PERFTOOLS_DLL_DECL
#define PERFTOOLS_DLL_DECL
#endif

#ifdef __cplusplus
#define HC_STACKTRACE_INLINE_ inline __attribute__((always_inline))
#else
#define HC_STACKTRACE_INLINE_ static inline __attribute__((always_inline, unused))
#endif

HC_STACKTRACE_INLINE_ int GetStackFrames(void **result, int *sizes, int max_depth, int skip_count) {
  return hc_stack_trace(result, sizes, max_depth, skip_count);
}
HC_STACKTRACE_INLINE_ int GetStackFramesWithContext(void **result, int *sizes, int max_depth, int skip_count,
                                                    const void *uc) {
  (void)uc;
  return hc_stack_trace(result, sizes, max_depth, skip_count);
}
HC_STACKTRACE_INLINE_ int GetStackTrace(void **result, int max_depth, int skip_count) {
  return hc_stack_trace(result, 0, max_depth, skip_count);
}
HC_STACKTRACE_INLINE_ int GetStackTraceWithContext(void **result, int max_depth, int skip_count, const void *uc) {
  (void)uc;
  return hc_stack_trace(result, 0, max_depth, skip_count);
}

#undef HC_STACKTRACE_INLINE_

#endif

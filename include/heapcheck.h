/* heapcheck.h - the public C API of libheapcheck.
 *
 * Link with -lheapcheck (or preload libheapcheck.so) and the whole malloc
 * family is served by heapcheck's allocator.  This header adds:
 *   - allocator statistics           (hc_get_stats, hc_print_stats)
 *   - heap profiles from samples     (hc_heap_profile_*, hc_report_top)
 *   - the leak checker               (hc_check_*, hc_ignore_object, ...)
 * Every function is safe to call whether or not HEAPCHECK is set; checker
 * functions do nothing (and report "no leaks") when the checker is off.
 */
#ifndef HEAPCHECK_H
#define HEAPCHECK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HC_VERSION_MAJOR 0
#define HC_VERSION_MINOR 1
#define HC_VERSION_PATCH 0

/* ---- allocator statistics ---- */
typedef struct hc_stats {
  size_t heap_mapped;        /* bytes mapped from the OS for the heap */
  size_t heap_released;      /* of those, bytes currently given back (MADV_DONTNEED) */
  size_t in_use;             /* bytes held by the program (class sizes, large spans) */
  size_t small_in_use;       /* of in_use, in size-class objects */
  size_t large_in_use;       /* of in_use, in large objects (page granular) */
  size_t page_heap_free;     /* free pages in the page heap still backed by memory */
  size_t central_free;       /* bytes free in central lists and transfer caches */
  size_t thread_cache_free;  /* bytes free in thread caches */
  size_t metadata;           /* bytes mapped for metadata (spans, pagemap, depot, caches) */
  size_t thread_caches;      /* live thread caches */
  size_t sampled_objects;    /* live sampled objects */
  size_t sampled_bytes;      /* estimated live bytes they stand for */
  size_t stacks;             /* distinct stacks in the stack depot */
} hc_stats_t;

/* Fills *out with a consistent snapshot.  Never allocates. */
void hc_get_stats(hc_stats_t *out);
/* Writes malloc_stats()'s report (per-class table and totals) to fd. */
void hc_print_stats(int fd);

/* ---- sampling and heap profiles ---- */
/* Sets the mean sampling interval in bytes (0 = off, 1 = every allocation);
 * returns the previous one.  Affects each thread's next draw. */
size_t hc_set_sample_interval(size_t bytes);
/* Starts writing <prefix>.<pid>.<seq>.heap files like HEAPPROFILE=<prefix>.
 * Returns 0, or -1 when a profiler is already running or prefix is bad. */
int hc_heap_profile_start(const char *prefix);
void hc_heap_profile_stop(void);
int hc_heap_profile_running(void);
/* Writes the next profile file now; reason appears in the log line. Returns 0 or -1. */
int hc_heap_profile_dump(const char *reason);
/* Writes a gperftools text heap profile of the live sampled heap to fd. */
int hc_heap_profile_write(int fd);
/* The same profile as a malloc'd string; the caller frees it.  NULL on failure. */
char *hc_heap_profile_get(void);
/* Prints the top n call sites by live bytes and by count, with stacks and
 * the age of their oldest live sample, to fd. */
void hc_report_top(int fd, int n);

/* ---- stack traces ---- */
/* Return addresses of the caller's stack: result[0] is in the function that
 * called hc_stack_trace, after dropping skip_count more innermost frames;
 * up to max_depth entries (at most 64); sizes (may be NULL) get each
 * frame's size in bytes (distance to the next frame record; 0 unknown).
 * Frame pointers, and the DWARF unwinder where they stop early.  Never
 * allocates.  Returns the number of entries.  (gperftools/stacktrace.h) */
int hc_stack_trace(void **result, int *sizes, int max_depth, int skip_count);
/* The first frame of the recorded allocation stack of the heap object
 * holding p (checker mode, or a sampled object), else NULL. */
const void *hc_alloc_caller(const void *p);

/* ---- messages ---- */
/* Sets the message level (PERFTOOLS_VERBOSE, gperftools' FLAGS_verbose: a
 * message of level L prints when the level is >= L; -4 silences the checker
 * and the profiler) for every message from now on; returns the old level. */
int hc_set_verbosity(int level);

/* ---- the leak checker ---- */
/* Nonzero when HEAPCHECK is set to a mode (including "local"). */
int hc_is_active(void);
/* Nonzero when a whole-program check runs at exit (active, mode not
 * "local"; stays nonzero after hc_cancel_global_check). */
int hc_has_global_check(void);

typedef struct hc_check hc_check_t;
/* Starts a named scoped check: objects allocated from now on that are
 * unreachable at hc_check_end are leaks.  Never NULL (an inactive check
 * when the checker is off or memory is short). */
hc_check_t *hc_check_begin(const char *name);
enum {
  HC_CHECK_REPORT = 1,       /* print the gperftools-style report when leaks are found */
  HC_CHECK_SYMBOLIZE = 2,    /* symbolize frames in the report */
};
/* Runs the check.  Returns 1 when nothing leaked, 0 otherwise.  May be called
 * again later (each call is a new check against the same start). */
int hc_check_end(hc_check_t *check, int flags);
/* Totals of the last hc_check_end on this check; -1 if none ran. */
ssize_t hc_check_bytes_leaked(const hc_check_t *check);
ssize_t hc_check_objects_leaked(const hc_check_t *check);
const char *hc_check_name(const hc_check_t *check);
void hc_check_free(hc_check_t *check);

/* Runs the whole-program check now (report printed, process continues).
 * Returns 1 when no leaks (or no whole-program checker), 0 otherwise. */
int hc_no_global_leaks(void);
/* Totals of the last whole-program check. */
ssize_t hc_global_bytes_leaked(void);
ssize_t hc_global_objects_leaked(void);
/* Cancels the automatic at-exit check. */
void hc_cancel_global_check(void);

/* Marks the live object containing p (interior pointers allowed) as a root:
 * it and what it points to are never leaks.  Returns 0, or -1 when p is not
 * in a live heap object (a message is printed). */
int hc_ignore_object(const void *p);
int hc_unignore_object(const void *p);
/* Objects allocated by this thread between begin and end are roots. Nests. */
void hc_disable_begin(void);
void hc_disable_end(void);
/* A block scope whose allocations are ignored: { HC_DISABLE_SCOPE; ... } */
static inline void hc_disable_scope_end_(int *unused) { (void)unused; hc_disable_end(); }
#define HC_DISABLE_SCOPE \
  __attribute__((cleanup(hc_disable_scope_end_), unused)) int hc_disable_scope_ = (hc_disable_begin(), 0)
/* Memory the checker should scan for pointers (custom stacks, arenas made
 * with mmap).  Returns 0 or -1 (bad arguments, not found). */
int hc_register_root_region(const void *begin, size_t size);
int hc_unregister_root_region(const void *begin, size_t size);
/* Functions run, in registration order, before the whole-program check. */
int hc_register_cleanup(void (*fn)(void));

#ifdef __cplusplus
}
#endif

#endif

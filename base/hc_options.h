/* hc_options.h - every environment variable the library reads, in one table.
 *
 * HC_OPTIONS(INT, BOOL, STR) expands to one entry per variable:
 *   INT(name, default, min, max, default_text, owner, doc)
 *   BOOL(name, default, owner, doc)
 *   STR(name, default_text, owner, doc)
 * owner: the layer whose module reads it; doc: one line (the generated table
 * of docs/options.md, checked by the test options_doc).  default_text: how
 * the docs print a default that is not a constant here (NULL: the number).
 *
 * Every layer reads its variables through hci_opt_* (options.c) by id
 * (HCO_<name>): the value, or the table's default when the variable is unset,
 * or, for a bad value, a warning naming the variable and then the default.
 * A default that depends on the mode (LSan's, a computed signal) is given
 * at the call (hci_opt_int_or / hci_opt_bool_or).  No getenv, no malloc:
 * the allocator reads its options before main.
 *
 * Second level: HC_LSAN_OPTIONS, the keys of LSAN_OPTIONS (and of
 * __lsan_default_options()), with the same columns and the same row types,
 * ids HCL_<key>, rows in hci_lsan_options[]; checker/lsan.c parses the
 * string and reads each key's type, range and default here (a bad value: a
 * warning naming the key, then the default, which is LeakSanitizer's), and
 * docs/options.md has a second generated table for them.
 */
#ifndef HC_OPTIONS_H
#define HC_OPTIONS_H

#include <stdbool.h>

#define HC_OPTIONS(INT, BOOL, STR)                                                                         \
  /* base/ */                                                                                              \
  STR(HEAPCHECK_LOG_PATH, "unset (stderr)", base, "reports go to `<prefix>.<pid>` files; stderr names the stream (the default)") \
  STR(HEAPCHECK_REPORT, "unset", base, "report files and reports: json:, sarif:, svg:, folded:, suppressions[:FILE], top[:N], old:AGE[:PERIOD], peak") \
  STR(HEAPCHECK_TREE, "unset", base, "set by the launcher: its private directory for the tree's records and reports") \
  INT(HEAPCHECK_TREE_PID, -1, -1, 1ll << 31, NULL, base, "set by the launcher: its pid (its own children report on stderr)") \
  INT(HEAPCHECK_TREE_PPID, -1, -1, 1ll << 31, NULL, base, "set by the launcher: its parent's pid at its start (where the program's signals to its parent go when /proc cannot name the parent now)") \
  STR(HEAPCHECK_CHILD_REPORTS, "unset", base, "set by the launcher: stderr for --child-reports=stderr")      \
  STR(HEAPCHECK_TREE_STDERR, "unset", base, "set by the launcher: its stderr's device:inode (a descendant's one-line notice goes there only)") \
  /* stacks/ */                                                                                            \
  STR(HEAPCHECK_UNWINDER, "auto", stacks, "how stacks are walked: fp (frame pointers), dwarf (.eh_frame) or auto") \
  /* allocator/ */                                                                                         \
  INT(HEAPCHECK_SAMPLE_PARAMETER, HC_DEFAULT_SAMPLE_INTERVAL, 0, 1ll << 40, NULL, allocator,               \
      "mean bytes between samples; 0 = none, 1 = every allocation; K/M/G suffixes")                        \
  INT(TCMALLOC_SAMPLE_PARAMETER, HC_DEFAULT_SAMPLE_INTERVAL, 0, 1ll << 40, NULL, allocator,                \
      "gperftools' name, read when HEAPCHECK_SAMPLE_PARAMETER is unset")                                   \
  INT(HEAPCHECK_SAMPLE_SEED, 0, 0, 0x7fffffffffffffffll, "0 (random)", allocator,                          \
      "fixed seed for the sampler: a program run twice samples the same allocations")                     \
  /* symbolizer/ */                                                                                        \
  STR(HEAPCHECK_DEBUG_DIR, "/usr/lib/debug", symbolizer, "root of separate debug files (an absolute path)") \
  /* checker/ */                                                                                           \
  STR(HEAPCHECK, "unset", checker, "the mode: minimal, normal, strict, draconian, as-is, local; empty turns checking off") \
  STR(LSAN_OPTIONS, "unset", checker, "LeakSanitizer's options; with HEAPCHECK unset it turns the checker on in LSan mode") \
  INT(PERFTOOLS_VERBOSE, 0, -1000, 1000, NULL, checker, "gperftools' message level: -4 nothing, 0 normal, 1 timings, 10 tracing lines") \
  BOOL(HEAPCHECK_VERBOSE, false, checker, "1 is PERFTOOLS_VERBOSE=1")                                      \
  INT(HEAP_CHECK_MAX_LEAKS, 20, -1000000000ll, 1000000000ll, NULL, checker,                                \
      "leak records printed; <= 0 prints all (LSan mode's default: 0)")                                    \
  BOOL(HEAP_CHECK_IDENTIFY_LEAKS, false, checker, "print every leaked object's address; a whole-program check with leaks aborts") \
  BOOL(HEAPCHECK_SHOW_POSSIBLY_LOST, true, checker, "print the records of possibly lost objects after the leaks; 0 keeps only their summary line") \
  BOOL(HEAP_CHECK_TEST_POINTER_ALIGNMENT, false, checker, "when leaks are found, redo the check with alignment 1") \
  INT(HEAP_CHECK_POINTER_SOURCE_ALIGNMENT, (long long)sizeof(void *), 1, (long long)sizeof(void *), NULL, checker,                                      \
      "alignment of the words scanned for pointers: 1, 2, 4 or 8")                                        \
  INT(HEAP_CHECK_MAX_POINTER_OFFSET, -1, -1, 1ll << 46, NULL, checker,                                     \
      "bytes into an object a pointer still keeps it alive; -1 = anywhere (interior-only: possibly lost)") \
  BOOL(HEAP_CHECK_IGNORE_THREAD_LIVE, true, checker, "as-is only: thread stacks, registers and TLS are roots") \
  BOOL(HEAP_CHECK_IGNORE_GLOBAL_LIVE, true, checker, "as-is only: writable module data are roots")         \
  BOOL(HEAP_CHECK_AFTER_DESTRUCTORS, false, checker, "as-is only: check after the global destructors")     \
  STR(HEAP_CHECK_DUMP_DIRECTORY, "unset", checker, "where leak profiles are written; setting it turns them on") \
  BOOL(HEAPCHECK_LEAK_PROFILE, false, checker, "write the leak profile (default true when HEAP_CHECK_DUMP_DIRECTORY is set)") \
  INT(HEAP_CHECK_EXIT_CODE, 1, 0, 255, NULL, checker, "exit status after a whole-program check with leaks (LSan mode: 23)") \
  INT(HEAP_CHECK_ERROR_EXIT_CODE, 125, 0, 255, NULL, checker, "exit status after a whole-program check that could not complete") \
  INT(HEAPCHECK_QUARANTINE, 0, 0, 1ll << 40, NULL, checker,                                               \
      "bytes of freed blocks held back from reuse, oldest reused first (valgrind's --freelist-vol is 20M); 0 = none; K/M/G suffixes") \
  BOOL(HEAP_CHECK_RUN_UNDER_GDB, true, checker, "0: turn the checker off when the process is ptrace()d")   \
  BOOL(HEAPCHECK_KEEP_STATUS, false, checker, "leaks do not change the exit status (the launcher sets it)") \
  INT(HEAPCHECK_FREE_HISTORY, 32768, 0, 1ll << 22, NULL, checker,                                          \
      "frees remembered for a double free's report (where the block was allocated and first freed); 0 = none") \
  BOOL(HEAPCHECK_FREE_STACKS, true, checker, "each free's whole stack for a double free's report where its caller has frame pointers (checked runs about +10 % instructions); set to 1: in code without them too (+33 % on python3); 0: its caller only") \
  STR(HEAPCHECK_SUPPRESSIONS, "unset", checker, "suppressions file")                                       \
  STR(HEAP_CHECK_SUPPRESSIONS, "unset", checker, "suppressions file, when HEAPCHECK_SUPPRESSIONS is unset") \
  STR(HEAPCHECK_SOURCE_ROOT, "working directory", checker, "SARIF file URIs are relative to it")          \
  BOOL(HEAPCHECK_NO_FOLLOW, false, checker, "the launcher's --no-follow-children: drop the library from LD_PRELOAD at start-up") \
  STR(HEAP_CHECK_STOP_METHOD, "ptrace", checker, "how a check stops the other threads: ptrace or signal")  \
  INT(HEAP_CHECK_STOP_SIGNAL, 0, 1, 64, "SIGRTMAX-3", checker, "the signal fallback's signal: a real-time signal") \
  INT(HEAP_CHECK_STOP_TIMEOUT_MS, 1000, 1, 600000, NULL, checker, "how long the signal fallback waits for a thread to stop") \
  BOOL(HEAP_CHECK_PROBE_INLINE_SECCOMP, false, checker, "probe a seccomp filter installed by an inline system call since start (a clone and the check's calls tried in a task first) instead of refusing every check: a filter that kills clone or read's neighbours then kills the process") \
  STR(HEAP_CHECK_STOP_HELPER, "auto", checker, "whose child the ptrace helper task is: orphan (init reaps it; the program's __WALL waits never see it), child (ours, the program may reap it) or auto (orphan when init catches, blocks or ignores SIGCHLD, else child)") \
  /* runtime/ */                                                                                           \
  BOOL(HEAPCHECK_REDIRECT_LIBC, true, runtime, "libc's own malloc family jumps to ours (modules dlopen()ed with RTLD_DEEPBIND, e.g. PHP's); 0 leaves libc's code alone") \
  /* profiler/ */                                                                                          \
  STR(HEAPPROFILE, "unset", profiler, "write heap profiles to `<prefix>.<pid>.<seq>.heap`")                  \
  STR(HEAP_PROFILE_FORMAT, "heap", profiler, "with HEAPPROFILE: heap, svg, folded (comma-separated)")      \
  INT(HEAP_PROFILE_ALLOCATION_INTERVAL, 1ll << 30, 0, 1ll << 50, NULL, profiler,                           \
      "with HEAPPROFILE: dump every time this many more bytes were allocated; 0 = never")                 \
  INT(HEAP_PROFILE_DEALLOCATION_INTERVAL, 0, 0, 1ll << 50, NULL, profiler,                                 \
      "with HEAPPROFILE: dump every time this many more bytes were freed; 0 = never")                     \
  INT(HEAP_PROFILE_INUSE_INTERVAL, 100ll << 20, 0, 1ll << 50, NULL, profiler,                              \
      "with HEAPPROFILE: dump when the live heap passes the last high-water mark by this much; 0 = never") \
  INT(HEAP_PROFILE_TIME_INTERVAL, 0, 0, 1ll << 31, NULL, profiler,                                         \
      "with HEAPPROFILE: dump when this many seconds passed since the last dump; 0 = never")              \
  INT(HEAPPROFILESIGNAL, 0, 0, 64, "unset", profiler, "with HEAPPROFILE: a profile is written each time this signal arrives") \
  STR(HEAP_PROFILE_CLEANUP, "unset", profiler, "not supported (profiles carry the pid): a warning, nothing deleted") \
  INT(HEAPCHECK_LIVE_SIGNAL, 0, 0, 64, "unset", profiler, "on this signal: every live sample, per stack")  \
  INT(HEAPCHECK_ACK_SIGNAL, 0, 0, 64, "unset", profiler, "on this signal: old allocations are acknowledged (with old:)")

/* The keys of LSAN_OPTIONS (defaults: LeakSanitizer's). */
#define HC_LSAN_OPTIONS(INT, BOOL, STR)                                                                    \
  BOOL(detect_leaks, true, checker, "check for leaks at all (0: the checker stays off; HEAPCHECK overrides)") \
  BOOL(leak_check_at_exit, true, checker, "run the whole-program check at exit (__lsan_do_leak_check works either way)") \
  INT(exitcode, 23, 0, 255, NULL, checker, "exit status when the final check finds leaks (0: keep the program's)") \
  STR(suppressions, "unset", checker, "suppressions file (leak:<pattern> lines), as HEAPCHECK_SUPPRESSIONS") \
  BOOL(print_suppressions, true, checker, "print the \"Suppressions used:\" block after a report")           \
  STR(log_path, "unset (stderr)", checker, "write reports to <log_path>.<pid> (as HEAPCHECK_LOG_PATH)")     \
  BOOL(report_objects, false, checker, "list the address and size of every leaked object under its record") \
  INT(max_leaks, 0, 0, 1000000000ll, NULL, checker, "records printed per report (0: all)")                 \
  BOOL(use_globals, true, checker, "writable data of loaded modules are roots")                            \
  BOOL(use_stacks, true, checker, "thread stacks are roots")                                               \
  BOOL(use_registers, true, checker, "thread registers are roots")                                         \
  BOOL(use_tls, true, checker, "threads' static TLS is a root")                                            \
  BOOL(use_ld_allocations, true, checker, "objects the dynamic loader allocated (DTV, dynamic TLS) are roots") \
  BOOL(use_root_regions, true, checker, "regions given to __lsan_register_root_region are roots")          \
  BOOL(use_unaligned, false, checker, "look for pointers at every byte offset, not only aligned words")    \
  INT(malloc_context_size, 30, 1, 1000000, NULL, checker, "frames recorded per allocation stack, malloc's own counted as in LSan") \
  STR(strip_path_prefix, "unset", checker, "prefix cut from file and module paths in reports")             \
  INT(verbosity, 0, -1000, 1000, NULL, checker, "message level (PERFTOOLS_VERBOSE): 1 adds timings, 2 their breakdown") \
  INT(max_allocation_size_mb, 0, 0, 1ll << 26, NULL, checker, "a request above this many MiB fails (0: no limit): a report, then the exit status, or NULL (below)") \
  BOOL(allocator_may_return_null, false, checker, "a request above max_allocation_size_mb returns NULL with ENOMEM after a warning (real out-of-memory always returns NULL)") \
  INT(tries, 1, 1, 1000, NULL, checker, "each whole-program check runs this many times, each with its report; leaks count only when every run found some") \
  INT(retries, 1, 1, 1000, NULL, checker, "tries' name in LLVM before its rename (llvm-project#112037): the same option") \
  BOOL(detect_double_free, true, checker, "0: a double free passes, nothing freed twice (LSan's default); 1: its report, then the exit status") \
  INT(double_free_max_entries, 32768, -(1ll << 40), 1ll << 40, NULL, checker, "frees remembered for a double free's report (HEAPCHECK_FREE_HISTORY), at most 4194304") \
  BOOL(log_threads, false, checker, "each check prints the threads it scanned (LSan 14's Processing thread / Stack at / TLS at lines)") \
  BOOL(help, false, checker, "print this list at start-up")

#define HCO_ID_INT(name, ...) HCO_##name,
#define HCO_ID_BOOL(name, ...) HCO_##name,
#define HCO_ID_STR(name, ...) HCO_##name,
typedef enum hci_opt { HC_OPTIONS(HCO_ID_INT, HCO_ID_BOOL, HCO_ID_STR) HCO_COUNT } hci_opt_t;
#define HCL_ID(name, ...) HCL_##name,
typedef enum hci_lsan_opt { HC_LSAN_OPTIONS(HCL_ID, HCL_ID, HCL_ID) HCL_COUNT } hci_lsan_opt_t;

typedef enum { HCI_OPT_INT, HCI_OPT_BOOL, HCI_OPT_STR } hci_opt_type_t;
typedef struct hci_opt_info {
  const char *name;
  hci_opt_type_t type;
  long long def, min, max; /* INT (def, min, max), BOOL (def) */
  const char *def_text;    /* the default as the docs print it (NULL: def) */
  const char *owner;       /* the layer that reads it */
  const char *doc;         /* one line */
} hci_opt_info_t;
extern const hci_opt_info_t hci_options[HCO_COUNT];
extern const hci_opt_info_t hci_lsan_options[HCL_COUNT]; /* the second level (LSAN_OPTIONS' keys) */

/* The variable's value (NULL when unset; always NULL in a setuid process). */
const char *hci_opt_str(hci_opt_t o);
/* True when the variable is set (to anything, empty too). */
bool hci_opt_set(hci_opt_t o);
/* INT: the value in [min, max], else the table's default (a warning naming
 * the variable, then the default, for a bad value). */
long long hci_opt_int(hci_opt_t o);
long long hci_opt_int_or(hci_opt_t o, long long def);
/* BOOL: 1 t true y yes / 0 f false n no (any case; empty = true). */
bool hci_opt_bool(hci_opt_t o);
bool hci_opt_bool_or(hci_opt_t o, bool def);

#endif

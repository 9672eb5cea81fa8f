/* hc_base.h - the base layer (base/): what every other layer may use.
 *
 * Locks (lock.c), the OS layer (os.c), the allocation-free formatter and
 * diagnostics (output.c), environment options (options.c), the metadata
 * arena (meta.c), compile-time limits (hc_config.h) and small macros.
 * Nothing here knows about spans, stacks, the checker or the profiler; this
 * folder's include path names only itself (meson.build), so a base file
 * that includes a header of a layer above fails to build.
 *
 * Everything here has hidden visibility (the library is built with
 * -fvisibility=hidden); only include/heapcheck.h and the malloc family are
 * exported.
 *
 * Rules for every module (see docs/design.md):
 *  - never call malloc, stdio, getenv or anything that may take a libc lock
 *    from allocator code, signal handlers or while the world is stopped;
 *    use hci_meta_alloc, hci_printf/hci_snprintf and hci_env_* instead;
 *  - errors in the user's use of the heap go through hci_fatal (one line, abort).
 */
#ifndef HC_BASE_H
#define HC_BASE_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hc_config.h"

#define hc_likely(x) __builtin_expect(!!(x), 1)
#define hc_unlikely(x) __builtin_expect(!!(x), 0)
#define hc_noinline __attribute__((noinline))
#define hc_cold __attribute__((cold))
#define hc_unused __attribute__((unused))
#define hc_public __attribute__((visibility("default")))
#define HC_TLS __attribute__((tls_model("initial-exec"))) __thread

/* Architecture-specific bits live here and in os.c, unwind*.c, checker/tls_geometry.c, checker/stop_world.c. */
static inline void hci_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Private state that the leak checker must not scan as a root: statics that
 * may hold heap-looking values (the end of a metadata mapping that the
 * kernel later placed a heap mapping after, a span start...).  Each module
 * registers its state with HC_PRIVATE_STATE(var); the checker cuts every
 * registered range out of the global roots, in shared and static builds
 * alike (the linker collects the records between __start_/__stop_hc_state_ranges). */
typedef struct hci_state_range {
  const void *addr;
  size_t size;
} hci_state_range_t;
#define HC_PRIVATE_STATE(var)                                                                \
  static const hci_state_range_t hc_state_range_##var                                       \
      __attribute__((section("hc_state_ranges"), used, aligned(sizeof(void *)))) = {&(var), \
                                                                                    sizeof(var)}

/* The one sort: heapsort, in place, no recursion, no malloc (glibc's qsort
 * may allocate).  Inline so that a constant cmp is inlined at each caller. */
static inline void hci_sort_swap(char *a, char *b, size_t size) {
  char t[64];
  while (size) {
    size_t k = size < sizeof t ? size : sizeof t;
    __builtin_memcpy(t, a, k);
    __builtin_memcpy(a, b, k);
    __builtin_memcpy(b, t, k);
    a += k, b += k, size -= k;
  }
}
static inline void hci_sort_sift(char *v, size_t root, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
  for (;;) {
    size_t child = 2 * root + 1;
    if (child >= n) return;
    if (child + 1 < n && cmp(v + child * size, v + (child + 1) * size) < 0) child++;
    if (cmp(v + root * size, v + child * size) >= 0) return;
    hci_sort_swap(v + root * size, v + child * size, size);
    root = child;
  }
}
static inline void hci_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *)) {
  char *v = base;
  if (n < 2) return;
  for (size_t i = n / 2; i-- > 0;) hci_sort_sift(v, i, n, size, cmp);
  for (size_t end = n - 1; end > 0; end--) {
    hci_sort_swap(v, v + end * size, size);
    hci_sort_sift(v, 0, end, size, cmp);
  }
}

/* The one search of sorted ranges: of n records stride bytes apart, sorted
 * by the uint64_t start at lo_off in each (its end, exclusive, at hi_off),
 * the one that holds addr: the last that starts at or below it, or one of
 * the `back` records before that one (ranges may nest or overlap); NULL when
 * none does.  Inline so that constant offsets are folded at each caller. */
static inline const void *hci_range_find(const void *base, size_t n, size_t stride, size_t lo_off, size_t hi_off,
                                         size_t back, uint64_t addr) {
  const char *v = (const char *)base;
#define HC_RANGE_AT(i, off) (*(const uint64_t *)(v + (i) * stride + (off)))
  if (n == 0 || addr < HC_RANGE_AT(0, lo_off)) return NULL;
  size_t lo = 0, hi = n; /* invariant: start of lo <= addr, answer in [lo, hi) */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (HC_RANGE_AT(mid, lo_off) <= addr) lo = mid;
    else hi = mid;
  }
  for (size_t k = 0; k < back && k <= lo; k++)
    if (addr < HC_RANGE_AT(lo - k, hi_off)) return v + (lo - k) * stride;
#undef HC_RANGE_AT
  return NULL;
}

/* Always-on cheap integrity check. */
#define HC_CHECK(cond, ...) \
  do { if (hc_unlikely(!(cond))) hci_fatal(__VA_ARGS__); } while (0)


/* ======================= lock.c ======================= */
/* ---- lock ---- */
/* Futex-backed lock: 0 free, 1 held, 2 held with waiters.  Works before libc
 * is initialised and inside pthread_atfork handlers (no pthread_mutex).
 *
 * LOCK ORDER.  Every lock has a rank, and this enum is the order (the one
 * place it is written; docs/design.md and runtime/init.c's fork handler
 * follow it): a thread holding a lock may only take locks of a higher rank,
 * except the central lists, which nest among themselves in ascending class
 * order.  glibc's stdio list lock (_IO_list_lock) comes before all of them
 * (the fork handler takes it first); the loader lock (held inside
 * dl_iterate_phdr callbacks) sits between the symbolizer and the profile
 * buckets.  Built with -Dlock_ranks=enabled (on by default in debug builds,
 * and in CI's clang build), every hci_lock asserts the order and dies with
 * the two ranks named; otherwise the rank is a byte nobody reads. */
enum hci_lock_rank {
  HC_RANK_NONE = 0,      /* not ordered: never held while taking another lock */
  HC_RANK_CHECKER,       /* checker/leaks.c hci_chk_lock: a check, the API */
  HC_RANK_STW_INIT,      /* checker/stop_world.c: one-time set-up */
  HC_RANK_TLS_INIT,      /* checker/tls_geometry.c: one-time computation */
  HC_RANK_ROOTS,         /* checker/roots.c: writers of the exclusion table */
  HC_RANK_PROFILER,      /* profiler/profile.c: dumps */
  HC_RANK_OUT_JSON,      /* base/out.c: one JSON document at a time (symbolizes, makes its file) */
  HC_RANK_SYMBOLIZER,    /* symbolizer/symbolize.c: the module table */
  HC_RANK_PROFILE_BUCKETS, /* profiler/profile_snapshot.c: per-stack counters */
  HC_RANK_HOOKS,         /* allocator/malloc_hook.c: the hooks' on/off switch */
  HC_RANK_RELEASE,       /* allocator/malloc_ext.c: ReleaseToSystem's account */
  HC_RANK_DEPOT,         /* stacks/stackdepot.c */
  HC_RANK_QUARANTINE,    /* allocator/quarantine.c: checker mode's FIFO of freed blocks (a leaf) */
  HC_RANK_TC_REGISTRY,   /* allocator/thread_cache.c: the list of thread caches */
  HC_RANK_SAMPLES,       /* allocator/alloc.c: sampled spans and their stash */
  HC_RANK_PAGE_HEAP,     /* allocator/page_heap.c */
  HC_RANK_CENTRAL,       /* allocator/central.c: one per size class, ascending */
  HC_RANK_META,          /* base/meta.c: the metadata arena */
  HC_RANK_OUT_FILES,     /* base/out.c: the files this process made (a leaf) */
  HC_RANK_COUNT
};
typedef struct hci_lock {
  _Atomic int xstate;
  uint8_t rank; /* enum hci_lock_rank; 0 unless HC_LOCK_RANKS */
} hci_lock_t;
/* Without rank checks a lock is all zeros: the statics holding locks (the
 * central lists, the page heap, the metadata arena...) then go to .bss,
 * zero pages the kernel maps on first touch, instead of .data, which the
 * loader maps private from the file and relocations dirty (~280 KB of
 * start-up RSS). */
#if HC_LOCK_RANKS
#define HCI_LOCK_INIT(r) {.xstate = 0, .rank = (r)}
#else
#define HCI_LOCK_INIT(r) {.xstate = 0, .rank = 0 * (r)}
#endif
void hci_lock_slow(hci_lock_t *l);
void hci_unlock_slow(hci_lock_t *l);
#if HC_LOCK_RANKS
void hci_rank_acquire(const hci_lock_t *l, bool tried); /* lock.c: asserts the order, notes it held */
void hci_rank_release(const hci_lock_t *l);
#else
static inline void hci_rank_acquire(const hci_lock_t *l, bool tried) { (void)l, (void)tried; }
static inline void hci_rank_release(const hci_lock_t *l) { (void)l; }
#endif
/* The library's locks this thread holds or waits for.  A signal handler
 * that forks while its thread is inside one of them must not let fork's
 * prepare handler wait for the lock its own thread holds (runtime/init.c).
 * Counted before the lock is asked for and after it is given back, with
 * compiler fences, so a handler never sees 0 while the lock is held. */
extern HC_TLS int hci_locks_held_here;
static inline void hci_lock(hci_lock_t *l) {
  hci_locks_held_here++;
  atomic_signal_fence(memory_order_seq_cst);
  hci_rank_acquire(l, false);
  int expected = 0;
  if (hc_unlikely(!atomic_compare_exchange_strong_explicit(&l->xstate, &expected, 1,
                                                           memory_order_acquire, memory_order_relaxed)))
    hci_lock_slow(l);
}
static inline void hci_unlock(hci_lock_t *l) {
  hci_rank_release(l);
  if (hc_unlikely(atomic_exchange_explicit(&l->xstate, 0, memory_order_release) == 2))
    hci_unlock_slow(l);
  atomic_signal_fence(memory_order_seq_cst);
  hci_locks_held_here--;
}
static inline bool hci_trylock(hci_lock_t *l) {
  int expected = 0;
  hci_locks_held_here++;
  atomic_signal_fence(memory_order_seq_cst);
  bool got = atomic_compare_exchange_strong_explicit(&l->xstate, &expected, 1, memory_order_acquire,
                                                     memory_order_relaxed);
  atomic_signal_fence(memory_order_seq_cst);
  if (got) hci_rank_acquire(l, true); /* a trylock cannot deadlock: noted, not judged */
  else hci_locks_held_here--;
  return got;
}
/* A visitor of locks: modules hand each of their locks to it, in rank
 * order, so that one loop can take, try, release or reset them all (the
 * fork handler, hci_lock_all).  Functions, not the inline ones above. */
typedef void hci_lock_fn(hci_lock_t *l);
void hci_lock_fn_lock(hci_lock_t *l);
void hci_lock_fn_unlock(hci_lock_t *l);
void hci_lock_fn_reset(hci_lock_t *l);
/* After fork in the child: the lock is free whatever its state was (and,
 * with ranks, no longer held by this thread). */
static inline void hci_lock_reset(hci_lock_t *l) {
  hci_rank_release(l);
  atomic_store_explicit(&l->xstate, 0, memory_order_relaxed);
}

/* ======================= output.c ======================= */
/* A printf subset that never allocates: %s %c %d %i %u %x %X %p %%, with
 * flags '-' '0', a width, precision (.N and .* for %s), length l ll z j t. */
int hci_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
int hci_snprintf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* write(2) the whole buffer, retrying on EINTR and short writes; errno is
 * preserved; true when everything was written.  Never raises SIGPIPE (a
 * broken pipe is an error, the program's signal state is left as it was)
 * and is not a cancellation point. */
bool hci_write_all(int fd, const char *buf, size_t len);
/* The same, returning 0 or the errno of the write that failed. */
int hci_write_err(int fd, const char *buf, size_t len);
/* Set by the checker (stop_world.c) while a check keeps the other threads
 * stopped: a new nonzero number each stop, 0 once they run.  A write to a
 * pipe whose reader is a thread of this process must not wait for it then. */
extern _Atomic unsigned hci_out_world_stopped;
/* Says how much of the report was dropped in a stop whose stream did not
 * drain (output.c), once the threads run again; nothing when none was. */
void hci_out_cut_notice(int fd);
/* Whether this process holds the reading end of the FIFO or Unix socket fd
 * (st: its fstat) other than fd itself (stream_reader.c); unknown is false. */
struct stat;
bool hci_stream_reader_is_ours(int fd, const struct stat *st);
/* Writes to the report stream (hci_log_stream_fd); false when it has none
 * or the write failed. */
bool hci_diag_write(const char *buf, size_t len);
/* A short English text for an errno value (strerror may allocate and lock):
 * "permission denied", "no space left on device"...; "error" for others. */
const char *hci_errno_text(int e);
/* Formats into a stack buffer and writes once to fd (messages do not interleave). */
void hci_fdprintf(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes to the diagnostic fd (stderr, or its duplicate kept by the checker). */
void hci_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "heapcheck: <message>\n" then abort().  Never returns. */
void hci_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn, cold));
/* "heapcheck: warning: <message>\n". */
void hci_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2), cold));
/* The report stream's own descriptor (-1 until hci_log_stream_open).  Write
 * through hci_log_stream_fd(), which checks it still is the stream. */
extern int hci_diag_fd;

/* ======================= log_stream.c ======================= */
/* Chooses the report stream's destination (HEAPCHECK_LOG_PATH file, a
 * launcher tree's report file, or a duplicate of stderr) and sets
 * hci_diag_fd; idempotent.  The fork child hook opens the child's own file. */
void hci_log_stream_open(void);
void hci_log_stream_fork_child(void);
/* A destination given another way than HEAPCHECK_LOG_PATH (LSAN_OPTIONS'
 * log_path; var names it in messages), before hci_log_stream_open;
 * HEAPCHECK_LOG_PATH, when set, wins. */
void hci_log_stream_set_path(const char *prefix, const char *var);
/* The process ends after the coming report (the final check): a kept copy
 * of a piped stderr is written to even when fd 2 now points elsewhere. */
void hci_log_stream_ending(void);
bool hci_log_stream_to_file(void);
const char *hci_log_stream_path(void);   /* the log file, NULL when stderr */
int hci_log_stream_stderr(void);         /* the original stderr (a kept duplicate); -1 when gone */
/* The descriptor to write the report stream to now, -1 when it has none.
 * Before hci_log_stream_open (neither checker nor profiler on): 2.  After:
 * the kept descriptor, checked to still be the file it was opened on (a
 * program's close_range or dup2 over it is noticed; a copy of the original
 * stderr or the log file is made again when it can be), never whatever file
 * the program got on fd 2 later.  See log_stream.c for the rules. */
int hci_log_stream_fd(void);
/* No stream any more (the program sandboxed itself): both give -1. */
void hci_log_stream_mute(void);
bool hci_log_stream_muted(void); /* the process sandboxed itself: nothing is written any more */
bool hci_log_stream_in_tree(void);       /* HEAPCHECK_TREE: a launcher follows the tree */
const char *hci_log_stream_tree_dir(void); /* its directory, NULL outside a tree */
bool hci_log_stream_tree_top(void);      /* the program the launcher started */
bool hci_log_stream_tree_over(void);     /* in a tree whose launcher has ended (a daemon that outlived it) */
/* The launcher's <tree_dir>/processes, opened at start and kept (reopened
 * by its path when the program closed it); -1 outside a tree or when it
 * cannot be opened.  Never close it. */
int hci_log_stream_records_fd(void);
/* Before the program closes descriptors lo..hi: whether the kept records
 * descriptor is among them and its file could not be opened again by its
 * path now (privileges dropped, a chroot, a Landlock domain): the record
 * written at exit would be lost.  errno kept; one descriptor opened and
 * closed at most. */
bool hci_log_stream_records_lost_by(unsigned lo, unsigned hi);
int hci_log_stream_records_kept(void);
/* The program's name (program_invocation_name) and its last component, as
 * they were when the library started: argv[0] may be overwritten since
 * (process titles).  "" when unknown. */
const char *hci_prog_name(void);
const char *hci_prog_short_name(void);

/* ======================= own_stack.c ======================= */
/* Runs fn(arg) on a stack of the library's own (8 MiB, guarded), so a leak
 * check or a profile dump never overflows a small thread stack; true when
 * it did, false when it ran fn on the current stack (no mapping possible,
 * or no switch for this architecture).  fn must not rely on its own stack
 * being the thread's: the program's stack pointer comes from the caller. */
bool hci_own_stack_call(void (*fn)(void *), void *arg);
/* fn(arg) with the stack pointer at top (16-byte aligned, the caller's
 * memory); where the switch is not written (not x86-64), on the current
 * stack.  Async-signal-safe: no lock, no system call. */
void hci_call_on(void *arg, void (*fn)(void *), void *top) __attribute__((visibility("hidden")));
/* The top of the own stack the calling thread runs on when sp is on it,
 * else 0 (where a stack walk from sp must end). */
uintptr_t hci_own_stack_top(uintptr_t sp);

/* ======================= options.c ======================= */
/* The table of every variable and its readers by id: hc_options.h.  The
 * functions below are the table's own readers (and the launcher's). */
#include "hc_options.h"
/* Reads the environment by scanning environ (no getenv, no malloc).
 * Values of setuid/setgid programs are ignored (all variables read as unset). */
const char *hci_env_get(const char *name);
/* Integer with optional K/M/G suffix; a malformed or out-of-range value
 * prints a warning naming the variable and the default, then returns def. */
long long hci_env_int(const char *name, long long def, long long min, long long max);
/* Booleans, judged whole and without regard to case: 1 t true y yes and
 * the empty value (gperftools) are true, 0 f false n no are false; anything
 * else ("10", "yesplease") warns naming the variable and returns def. */
bool hci_env_bool(const char *name, bool def);
/* The one case rule for keyword values (modes, booleans, unwinder names,
 * report kinds): case-insensitive.  Variable names are case-sensitive. */
bool hci_env_word_is(const char *value, const char *word);
/* True when the process runs setuid or setgid (AT_SECURE). */
bool hci_is_secure(void);

/* ======================= os.c ======================= */
/* mmap/munmap as system calls (never the exported, hooked symbols). */
void *hci_os_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int hci_os_munmap(void *p, size_t len);
void *hci_os_map(size_t size);                 /* anonymous RW mapping or NULL; errno preserved */
void *hci_os_map_aligned(size_t size, size_t align); /* aligned anonymous RW mapping or NULL */
void *hci_os_map_near(size_t size, size_t align, uintptr_t hint); /* the same, at hint when it is free */
void hci_os_unmap(void *p, size_t size);
void *hci_os_reserve(size_t size);             /* PROT_NONE address space (remembered), or NULL */
bool hci_os_commit(void *p, size_t size);      /* part of a reservation made RW */
bool hci_os_commit_ro(void *p, size_t size);   /* ... made read-only (reads zeros; not data for RLIMIT_DATA) */
void *hci_os_map_ro(size_t size);              /* anonymous read-only mapping (remembered) or NULL */
/* The reservation [p, p + size) cut to its first keep bytes: the rest
 * unmapped and forgotten (keep 0: all of it). */
void hci_os_unreserve(void *p, size_t keep, size_t size);
/* The lowest mapping made by hci_os_map (not the heap's) that ends above
 * addr: [*lo, *hi), lo may be above addr.  Lock-free. */
bool hci_os_owned_next(uintptr_t addr, uintptr_t *lo, uintptr_t *hi);
bool hci_os_owned_complete(void);              /* every such mapping is remembered */
void hci_os_release(void *p, size_t size);     /* MADV_DONTNEED: give the pages back, keep the range */
void hci_os_zero(void *p, size_t size);        /* zeros: resident pages written, the others given back */
uint64_t hci_os_hold_signals(void);            /* blocks the signals a handler could take our locks in; the old mask */
void hci_os_release_signals(uint64_t old);     /* puts the mask hci_os_hold_signals returned back */
void hci_os_hold_not(int sig);                 /* sig is never held (the checker's stop signal) */
void hci_os_populate(void *p, size_t size);    /* made resident and writable in one call (no faults) */
int hci_os_tid(void);
/* hci_os_memory_borrowed: true in a process that runs in another's address
 * space (a vfork child): nothing of the process's end (its exit check, its
 * profile) may run there, it would act on the parent's heap and state.
 * hci_os_memory_mine marks the current process as the memory's owner. */
void hci_os_memory_mine(void);
bool hci_os_memory_borrowed(void);
/* A seccomp filter that may kill is in force: no system call that is not needed (os.c). */
extern _Atomic bool hci_os_walled;
/* The CPU this thread runs on, plus 1, from the kernel's restartable-sequences
 * area that glibc registers per thread (a load); 0 when unknown. */
unsigned hci_os_cpu(void);
/* Ends the process at once with the kernel's exit_group: no at-exit handler,
 * no stdio flush, no leak check (libc's _exit is ours, and checks). */
void hci_os_exit_now(int status) __attribute__((noreturn));
uint64_t hci_os_now_ns(void);                  /* CLOCK_MONOTONIC in ns */
uint64_t hci_os_now_coarse_ns(void);           /* CLOCK_MONOTONIC_COARSE: same clock, tick resolution, cheaper */
/* One step of a wait for another thread to leave a short section (a spin
 * word, a count), *round starting at 0: sched_yield for 128 rounds (the
 * waits as they were: sleeping after 16 moved the timing of the stop
 * handlers' turns on their shared stack), then sleeps from 1 us doubling
 * to 1 ms.  sched_yield alone never lets a
 * thread of lower real-time priority run (nor a SCHED_OTHER one beside a
 * SCHED_FIFO waiter): a checking thread at SCHED_FIFO 10 waiting for a
 * worker at 5 preempted inside the stop handler spun for good on one CPU.
 * Raw system calls: usable in signal handlers and the stop's helper. */
void hci_os_backoff(unsigned *round);
/* Installs handler for sig (SA_RESTART, nothing masked) unless the program
 * has an action of its own there; false, with nothing changed, when it has
 * or the action cannot be read.  The caller names the variable in its warning. */
bool hci_os_claim_signal(int sig, void (*handler)(int));
/* Fault-proof reads of memory we do not own (no signal handler, no lock, no
 * malloc).  hci_os_read copies [src, src + n) to dst up to the first byte
 * that cannot be read and returns how many bytes it copied: process_vm_readv
 * on ourselves, or, where that is refused, a page probe before each page's
 * memcpy.  hci_os_probe: the 8 bytes at addr are readable (one syscall). */
size_t hci_os_read(void *dst, uintptr_t src, size_t n);
/* Never process_vm_readv from now on (a seccomp filter kills it). */
void hci_os_read_no_vm_readv(void);
bool hci_os_probe(uintptr_t addr);
/* /proc/thread-self/<name> (else, where it does not exist: Linux before
 * 3.17, /proc/self/<name>) opened with flags | O_CLOEXEC by a raw openat,
 * EINTR retried: -1 on failure.  Not
 * /proc/self: it names the group leader, and once the main thread has
 * called pthread_exit its maps, pagemap and fd read as empty or fail. */
int hci_os_open_proc(const char *name, int flags);

/* The entries of the directory open at fd whose names are decimal
 * numbers (/proc's tasks and descriptors), from the directory's
 * start: fn(ctx, number, name) for each; fn returns 0 to go on, anything
 * else stops the walk and is returned.  0 when every entry was seen, -1
 * when the directory cannot be read.  Raw system calls only (EINTR
 * retried): usable from the stop-the-world helper task. */
int hci_os_dir_numbers(int fd, int (*fn)(void *ctx, int n, const char *name), void *ctx);

/* ======================= raw_syscall.c ======================= */
/* A system call, raw: the kernel's result (-errno on failure), no errno,
 * no libc (usable from the helper task and from the libc interposers). */
long hci_raw6(long n, long a, long b, long c, long d, long e, long f);
/* A raw call's result as libc returns it (the libc interposers: -1 and
 * errno on failure). */
long hci_raw_libc_result(long r);

/* ======================= meta.c ======================= */
/* Metadata arena: zeroed, 16-byte aligned memory that never comes from the
 * user heap.  Small sizes are recycled through size-binned free lists. */
void *hci_meta_alloc(size_t size);             /* NULL when the OS refuses */
/* size bytes (a multiple of 4 KiB) of zeros, read-only until parts of it
 * are made writable with hci_os_commit (page-aligned); never freed. */
void *hci_meta_alloc_ro(size_t size);
void hci_meta_free(void *p, size_t size);      /* size must equal the allocation's */
/* A growable array's next block: twice *bytes (min_bytes the first time),
 * the used bytes of old copied, old freed; *bytes updated.  NULL, with old
 * and *bytes untouched, when the OS refuses. */
void *hci_meta_grow(void *old, size_t *bytes, size_t used, size_t min_bytes);
size_t hci_meta_bytes(void);                   /* bytes mapped for metadata */
void hci_meta_populate(void);                   /* bump memory made resident ahead of use from now on */
/* Gives the reservation's uncommitted part back to the OS, when a mapping
 * for the heap was refused (an address-space limit counts all of it);
 * false when there was none left to give. */
bool hci_meta_unreserve(void);
bool hci_meta_owns(uintptr_t addr);            /* addr lies in a metadata mapping */
void hci_meta_locks(hci_lock_fn *each); /* hci_lock_all: the arena lock, last of the allocator's */

/* ======================= out.c ======================= */
/* Buffered writer on a file descriptor (reports, profile files). */
typedef struct hci_out {
  int fd;
  size_t len;
  bool failed;               /* a write failed (disk full...) */
  int err;                   /* errno of the first failed write */
  char buf[8192];
} hci_out_t;
void hci_out_printf(hci_out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void hci_out_flush(hci_out_t *o);
/* Raw output on an hci_out_t, JSON strings (NULL -> null), XML text. */
void hci_out_put(hci_out_t *o, const char *s, size_t n);
void hci_out_puts(hci_out_t *o, const char *s);
void hci_out_json_str(hci_out_t *o, const char *s);
void hci_out_xml(hci_out_t *o, const char *s);
hci_out_t *hci_out_new(int fd);            /* hci_os_map'ed writer on fd, or NULL */
bool hci_out_close(hci_out_t *o, const char *path); /* flush, close fd, free; false on error (logged at HCI_LOG_ERROR) */
/* Expands %p (pid), %n (name, '/' -> '_') and %% of a file template. */
void hci_fmt_path(char *buf, size_t size, const char *tmpl, const char *name);
/* Creates path afresh: unlink, O_CREAT|O_EXCL|O_NOFOLLOW, 0600.  -1 (logged at HCI_LOG_ERROR)
 * on failure or in a setuid program. */
int hci_fmt_create(const char *path, const char *what);
/* open(path, O_WRONLY|O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC), mode 0600
 * whatever the program's umask (under umask 0777 its owner could not read
 * the report the library wrote, nor the launcher its processes' reports):
 * a file of the library's own, never one that was there. */
int hci_create_own(const char *path);
/* Whether this process created path (json, sarif: later documents append);
 * mark = remember it now.  A fork child inherits the list. */
bool hci_fmt_made_here(const char *path, bool mark);
/* The JSON file (HEAPCHECK_REPORT json:FILE, %n = name) opened for one more
 * document: created by the first, appended to by later ones, under a lock
 * that hci_fmt_json_close releases.  NULL when json is not asked for or the
 * file cannot be opened (logged).  Leak checks and the profiler's reporter
 * thread both write it. */
hci_out_t *hci_fmt_json_open(const char *name);
/* Fork (the runtime's handler, in the lock order): the JSON document lock
 * (after the profiler's) and the made-files lock (the last of all). */
void hci_fmt_fork_json_locks(hci_lock_fn *each);
void hci_fmt_fork_files_locks(hci_lock_fn *each);
void hci_fmt_json_close(hci_out_t *o);

/* ======================= output.c: level-gated messages ======================= */
/* gperftools' message levels: a message of level L prints iff the
 * verbosity (PERFTOOLS_VERBOSE, set by the checker's options) >= L. */
enum { HCI_LOG_FATAL = -4, HCI_LOG_ERROR = -3, HCI_LOG_WARNING = -2, HCI_LOG_INFO = -1 };
extern int hci_log_verbose;
bool hci_log_on(int level);
void hci_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ======================= report_opts.c ======================= */
/* HEAPCHECK_REPORT, parsed once (docs/report-formats.md): a comma-separated
 * list of top[:N], json:FILE, sarif:FILE, svg:FILE, folded:FILE,
 * suppressions[:FILE], old:AGE[:PERIOD], peak.  No malloc. */
typedef struct hci_report_opts {
  int top_n;                 /* top[:N]: at exit; 0 = off */
  const char *json, *sarif, *svg, *folded; /* file templates (%p pid, %n check name) or NULL */
  const char *supp_file;     /* suppressions:FILE: append every record's suppression */
  bool supp_print;           /* suppressions: print one under each record of the text report */
  uint64_t old_age_ns, old_period_ns; /* old:AGE:PERIOD; 0 = off */
  bool peak;                 /* peak: a live-sample snapshot at each new high-water mark */
} hci_report_opts_t;
const hci_report_opts_t *hci_report_opts(void);

#endif

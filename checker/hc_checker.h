/* hc_checker.h - hidden interface between the leak checker's modules.
 *
 * Prototypes are grouped by the .c file that defines them, one section per
 * module (add yours with a small edit, never reformat the others).
 * Everything here has hidden visibility.  The checker (checker/) sees the
 * layers below it: base/, stacks/, allocator/ (hc_internal.h: locks; the
 * heap only through the heap view, hc_heap_view.h) and symbolizer/ (hc_symbolize.h); never the
 * profiler or the runtime (its include path names neither).
 *
 * The order of a whole-program check, as the modules below expect it:
 *
 *   hci_world_init(&w)                  before any lock: buffers, TLS geometry,
 *                                       signal handler (may malloc via dlsym)
 *   take the checker lock
 *   hci_with_loader_lock(fn, arg)       fn runs with the loader lock held:
 *     hci_lock_all()                    every allocator lock
 *     hci_world_stop(&w)                signal, wait for acks, read the maps
 *     hci_roots_globals / hci_roots_threads / flood ...
 *     hci_world_resume(&w)
 *     hci_unlock_all()
 *   release the checker lock; report (symbolize, print) with the world running
 *   hci_world_destroy(&w)
 *
 * Between hci_world_stop and hci_world_resume nothing may call malloc, stdio,
 * getenv, dl* (other than the already held dl_iterate_phdr) or take a lock a
 * stopped thread could hold.
 */
#ifndef HC_CHECKER_H
#define HC_CHECKER_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hc_internal.h"

/* ======================= proc_maps.c ======================= */
/* A snapshot of /proc/self/maps, read with open/read into memory from
 * hci_os_map (no malloc, no stdio: usable while the world is stopped). */
enum {
  HCI_MAP_R = 1u << 0,
  HCI_MAP_W = 1u << 1,
  HCI_MAP_X = 1u << 2,
  HCI_MAP_PRIVATE = 1u << 3, /* 'p' (copy-on-write), else shared */
  HCI_MAP_ANON = 1u << 4,    /* no backing file (anonymous, [stack], [heap], [anon:...]) */
  HCI_MAP_STACK = 1u << 5,   /* "[stack]": the main thread's stack */
  HCI_MAP_HEAP = 1u << 6,    /* "[heap]": the brk area */
  HCI_MAP_SPECIAL = 1u << 7, /* [vdso], [vvar], [vsyscall]...: never scanned */
  HCI_MAP_DEVICE = 1u << 8,  /* a file under /dev: reads may have side effects, never scanned */
};
typedef struct hci_map {
  uintptr_t lo, hi;          /* [lo, hi), page aligned */
  uint32_t flags;            /* HCI_MAP_* */
} hci_map_t;
typedef struct hci_maps {
  hci_map_t *v;              /* sorted by lo, non-overlapping (the kernel's order) */
  int n, cap;
  char *buf;                 /* raw text of the last read; reused */
  size_t buf_cap;
} hci_maps_t;
/* (Re)reads /proc/self/maps into m, growing its buffers with hci_os_map.
 * Returns 0, or -1 when the file cannot be read (m->n is then 0). */
int hci_maps_read(hci_maps_t *m);
/* The mapping containing addr, or NULL. */
const hci_map_t *hci_maps_find(const hci_maps_t *m, uintptr_t addr);
/* The mappings registered with userfaultfd (/proc/self/smaps' VmFlags "um",
 * "uw" or "ui"), at most cap of them, into lo[] and hi[]: how many, or -1
 * when the file cannot be read or holds more.  Streamed through buf (len
 * bytes, the caller's: nothing is mapped). */
int hci_maps_uffd(char *buf, size_t len, uintptr_t *lo, uintptr_t *hi, int cap);
/* Releases the buffers; m may be read again afterwards. */
void hci_maps_free(hci_maps_t *m);
/* What a check may read: the readable, non-device mappings of a snapshot,
 * adjacent ones merged, sorted ([lo[i], hi[i]) for i < n), in hci_os_map
 * memory.  Built while the world is stopped (no malloc, no lock); false
 * when there is none (the snapshot failed). */
typedef struct hci_readable {
  uintptr_t *lo, *hi;
  size_t n, map_bytes;
} hci_readable_t;
bool hci_readable_build(hci_readable_t *r, const hci_maps_t *m);
/* Index of the first range ending above addr (n when none). */
size_t hci_readable_first(const hci_readable_t *r, uintptr_t addr);
void hci_readable_free(hci_readable_t *r);

/* ======================= tls_geometry.c ======================= */
/* Static TLS lies at the same offsets from the thread pointer in every
 * thread (glibc: TLS variant II below TP on x86-64 with struct pthread at
 * TP; variant I above TP on aarch64 with struct pthread below TP). */
typedef struct hci_tls_geometry {
  intptr_t lo_off, hi_off;   /* a thread's static TLS + struct pthread is [tp + lo_off, tp + hi_off) */
  size_t pthread_size;       /* sizeof(struct pthread): _thread_db_sizeof_pthread or a fallback */
  size_t static_size;        /* glibc's dl_tls_static_size (TLS blocks + surplus + TCB) */
  bool exact;                /* static_size came from _dl_get_tls_static_info, not an estimate */
} hci_tls_geometry_t;
/* Computes the geometry once (dlsym, dl_iterate_phdr: may malloc, so call it
 * before taking locks; hci_world_init does).  Idempotent and thread-safe. */
void hci_tls_init(void);
const hci_tls_geometry_t *hci_tls_geometry(void);
/* The static TLS range of the thread whose thread pointer is tp. */
void hci_tls_range(uintptr_t tp, uintptr_t *lo, uintptr_t *hi);
/* The thread's dynamic thread vector (glibc's DTV: the length word dtv[-1]
 * through its last entry), read from its TCB without faulting; false when
 * the TCB names none or the length is absurd.  Its entries point to the
 * thread's dynamic TLS blocks (dlopen'ed modules' __thread data, malloc'd by
 * ld.so), so scanning it as a root makes them and their contents live. */
bool hci_tls_dtv_range(uintptr_t tp, uintptr_t *lo, uintptr_t *hi);

/* ======================= stop_world.c ======================= */
/* Registers saved from a stopped thread's signal context: general-purpose
 * registers, then the SIMD registers (compilers keep pointers there). */
#if defined(__aarch64__)
#define HCI_MAX_REGS 100     /* x0-x30, sp, pc, v0-v31 (2 words each) */
#else
#define HCI_MAX_REGS 280     /* 17 GPRs incl. rsp and rip, xmm0-15 (32 words), upper ymm0-15 (32),
                                upper zmm0-15 (64), zmm16-31 (128) */
#endif
enum {
  HCI_T_SIGNALLED = 0,       /* signal sent, no answer yet */
  HCI_T_FILLING = 1,         /* the handler is writing the slot */
  HCI_T_STOPPED = 2,         /* acknowledged: parked in the handler until resume */
  HCI_T_NOT_STOPPED = 3,     /* no ack by the deadline (blocks the signal, stuck) or could not be signalled */
  HCI_T_EXITED = 4,          /* left the process before answering: nothing to scan */
  HCI_T_SELF = 5,            /* the checking thread */
};
typedef struct hci_thread {
  int tid;
  _Atomic int state;         /* HCI_T_*; the handler moves SIGNALLED -> FILLING -> STOPPED */
  bool stopped;              /* state is STOPPED or SELF: sp, regs and stack range are exact */
  bool is_self;              /* the checking thread */
  bool on_altstack;          /* sp was on a sigaltstack: the normal stack is scanned whole too */
  bool in_registry;          /* not stopped, but its tp was found in the thread-cache registry */
  uintptr_t sp;              /* stack pointer at the stop (from the ucontext) */
  uintptr_t pc;              /* interrupted instruction */
  uintptr_t tp;              /* thread pointer (fs base on x86-64, tpidr_el0 on aarch64); 0 if unknown */
  uintptr_t regs[HCI_MAX_REGS];
  int nregs;
  uintptr_t alt_lo, alt_hi;  /* the sigaltstack when on_altstack */
  uintptr_t stack_lo, stack_hi; /* range to scan for this thread (filled by hci_world_stop);
                                   0,0 = unknown: the fallback scans every anonymous mapping */
  uintptr_t nstack_lo, nstack_hi; /* the thread's normal stack mapping (when known) */
  bool traced;               /* ptrace method: attached by the helper task */
  bool refused;              /* ptrace method: PTRACE_SEIZE said EPERM */
  int inject_sig;            /* ptrace method: signal caught in a signal-delivery-stop, re-injected */
  bool listening;            /* ptrace method: stopped in PTRACE_LISTEN (takes part in job control) */
  bool unsent;               /* signal method: not signalled yet, it blocked the stop signal */
  /* signal method: the system call it was in before the signal was sent
   * (/proc/<tid>/syscall), -1 if none or unknown (timed_waits.c) */
  long sys_nr;
  uintptr_t sys_args[6], sys_sp, sys_pc;
} hci_thread_t;
enum { HCI_STOP_NONE, HCI_STOP_PTRACE, HCI_STOP_SIGNAL }; /* how a world was stopped */
typedef struct hci_world {
  hci_thread_t *threads;     /* nthreads slots, the checking thread included (is_self) */
  int nthreads, cap;
  int nstopped;              /* threads in state STOPPED (the checking thread not counted) */
  int nnot_stopped;          /* threads in state NOT_STOPPED */
  bool queue_full;           /* a stop signal was refused: RLIMIT_SIGPENDING reached */
  int nexited;               /* threads that left during the stop */
  unsigned gen;              /* stop generation */
  bool active;               /* between hci_world_stop and hci_world_resume */
  const char *refused;       /* why no other thread was stopped at all (the checking thread's own id
                                unknown, the stop signal's handler refused), NULL otherwise: the
                                check is incomplete */
  bool incomplete;           /* some threads may be missing from threads[] (listing failed or
                                they kept appearing): roots scan every anonymous mapping */
  hci_maps_t maps;           /* /proc/self/maps read after every thread stopped */
  int method;                /* HCI_STOP_*: NONE when the checking thread was alone */
  uintptr_t self_sp;         /* the checking thread's stack pointer on its own stack (the check
                                itself runs on the library's: own_stack.c); 0: where stop is called */
  sigset_t saved_mask;       /* the checking thread's signal mask before the check */
  bool signals_blocked;      /* hci_world_block_signals: saved_mask to be put back */
} hci_world_t;
/* Allocates the world's buffers, reads the options (HEAP_CHECK_STOP_SIGNAL,
 * HEAP_CHECK_STOP_TIMEOUT_MS), computes the TLS geometry and installs the
 * stop signal handler.  Call before taking any lock (it may malloc through
 * dlsym on first use).  Returns 0, or -1 when out of memory. */
int hci_world_init(hci_world_t *w);
/* requires: hci_world_init(w); the caller holds the checker lock and every
 * allocator lock (hci_lock_all) and runs inside hci_with_loader_lock.
 * Stops every other thread of the process and fills w (slots, stack ranges,
 * maps).  Never allocates through malloc; takes no lock.  Returns the number
 * of threads that did not stop, plus one when w->incomplete (0 = the whole
 * world is stopped and every thread is in w->threads). */
int hci_world_stop(hci_world_t *w);
/* After hci_world_stop: why a check on this world cannot complete (threads
 * not listed or not stopped, no maps, a stack not found), or "" in b. */
void hci_world_why_incomplete(const hci_world_t *w, char *b, size_t n);
/* Lets every stopped thread run again.  After it returns no handler touches w.
 * hci_world_resume also unblocks this thread's signals (below); release
 * leaves them blocked (the check still holds the library's locks). */
void hci_world_resume(hci_world_t *w);
void hci_world_release(hci_world_t *w);
/* The process is about to end (exit_group) with w still stopped: the
 * ptrace helper, an orphan nothing kills with us, waits for the threads'
 * end instead of polling for it (stop_ptrace.c). */
void hci_world_ending(hci_world_t *w);
/* The checking thread's signals blocked (faults excepted) from before the
 * check takes the loader's and the allocator's locks to when it lets go of
 * them and of the stopped threads, and put back as they were. */
void hci_world_block_signals(hci_world_t *w);
void hci_world_unblock_signals(hci_world_t *w);
/* Frees what hci_world_init allocated (after resume). */
void hci_world_destroy(hci_world_t *w);
/* Threads are stopped with the signal from now on; why, for its warning. */
void hci_world_no_ptrace(const char *why);
/* Runs fn(arg) inside a dl_iterate_phdr callback so the loader lock is held
 * (the set of modules cannot change and no stopped thread can hold that
 * lock); returns fn's result. */
int hci_with_loader_lock(int (*fn)(void *), void *arg);
/* The signal used to stop threads (default SIGRTMAX-3). */
int hci_stop_signal(void);
/* Copies the caller's general-purpose registers into regs (for the checking
 * thread, whose values in callee-saved registers are not on any scanned
 * stack): call it first thing in the public entry point and give the result
 * to hci_world_set_self_regs.  Returns the number of words written. */
int hci_capture_regs(uintptr_t *regs, int max);
void hci_world_set_self_regs(hci_world_t *w, const uintptr_t *regs, int n);

/* Copies the SIMD components of a standard-format XSAVE area of xsize bytes
 * (upper ymm, zmm) after regs[0..n); returns the new count (x86-64). */
int hci_xsave_copy(uintptr_t *regs, int n, const void *xsave, size_t xsize);
/* 1 when task tid of this process is a zombie (a group leader that called
 * pthread_exit) or gone, 0 when it is not, -1 when that cannot be read;
 * taskfd is the task list's descriptor (/proc/self/task). */
int hci_task_zombie(int taskfd, int tid);

/* ======================= adopter.c ======================= */
/* Whether process `pid` of our namespace (1: init) reaps the orphans it
 * adopts, judged by its SIGCHLD disposition: 1 yes (caught, blocked or
 * ignored), 0 never (default), -1 unknown (/proc of another namespace,
 * unreadable).  Raw calls; one descriptor opened and closed. */
int hci_adopter_reaps(int pid);
/* The hexadecimal mask after `key` ("\nSigBlk:") in a status file's text,
 * 0 when absent. */
unsigned long long hci_status_mask(const char *buf, const char *key);

/* ======================= stop_ptrace.c ======================= */
/* hci_raw6, hci_raw_libc_result: hc_base.h (raw_syscall.c). */
/* A system call made a cancellation point (asynchronous cancellation
 * around it): a static link's blocking calls (timed_waits.c).  Returns the
 * kernel's result. */
long hci_cancellable_syscall(long nr, long a, long b, long c, long d, long e, long f);
/* CLOCK_MONOTONIC in ns by the raw system call (no vDSO, no libc): the
 * helper task's and the exec gate's deadlines. */
long long hci_raw_now_ns(void);
/* File `file` of task `task` (a name in the task list fd: "123", or ".."
 * for the process's own directory) read into buf, NUL-terminated, with raw
 * calls (usable from the helper task): its length (0: opened, nothing
 * read), or the kernel's -errno when it cannot be opened. */
long hci_task_file(int fd, const char *task, const char *file, char *buf, size_t cap);
/* Field n of a /proc stat line (proc(5)'s numbering: 1 pid, 2 comm, 3
 * state, 4 ppid, 9 flags), counted from the last ')' since the command may
 * hold spaces and parentheses; NULL when the line is shorter.  n >= 3. */
const char *hci_stat_field(const char *stat, int n);
/* Calls fn(ctx, tid) for every task listed by the directory descriptor fd
 * (read again from its start) but io_uring's workers, which never run user
 * code; returns the count or -1.  Raw system calls only: usable from the
 * helper task. */
int hci_tasks_read(int fd, void (*fn)(void *, int), void *ctx);
/* Before a stop, on the checking thread (tid self): whether the list fd
 * names tasks in another pid namespace than ours (a /proc mounted outside
 * the process's namespace); hci_tasks_read then gives each task's tid in our
 * namespace (its NSpid line).  Returns 1 when it translates. */
int hci_tasks_probe_ns(int fd, int self);
/* requires: as hci_world_stop; w->threads[0] is the checking thread.
 * Stops every other thread with the ptrace helper task (see the file's
 * comment), filling w->threads.  Returns 0; -1 with *why set when ptrace
 * cannot be used (refused); -2 when it cannot be used for now (no memory,
 * process limit).  On error nothing is stopped and w->nthreads is 1. */
int hci_ptrace_stop(hci_world_t *w, int pid, int taskfd, int timeout_ms, bool yama, const char **why);
/* Whether task tid (in the task list fd; leader: the process's first)
 * waits for a vfork child now: a stop waits for it up to
 * HCI_VFORK_WAIT_FACTOR timeouts (it answers once the child has exec'd).
 * Raw system calls only. */
#define HCI_VFORK_WAIT_FACTOR 5
/* io_uring_enter's flags, as both stops' restarts read them (the kernel's
 * ABI; linux/io_uring.h is not needed for four bits): a wait for
 * completions, its extended argument, and every flag they know (a call
 * with another keeps its EINTR). */
#define HCI_IORING_GETEVENTS 1u
#define HCI_IORING_EXT_ARG 8u
#define HCI_IORING_KNOWN 31u /* GETEVENTS, SQ_WAKEUP, SQ_WAIT, EXT_ARG, REGISTERED_RING */
bool hci_task_in_vfork(int taskfd, int tid, bool leader);
/* Detaches every thread and reaps the helper. */
void hci_ptrace_resume(hci_world_t *w);
/* hci_world_ending's part: an orphan helper told the process ends; our
 * child, where its adopter would never reap it, let go and reaped. */
void hci_ptrace_ending(void);
/* Ends the parent task, if one is left: called once the world is stopped,
 * or when no thread but the caller's can reap it (see stop_ptrace.c, "Whose
 * child it is"). */
void hci_ptrace_end_parent(void);
/* Where the helper is an orphan (stop_ptrace.c), has the parent task (made
 * first when needed) clone fn on the stack top `top` with `flags` (with
 * CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID on *tidp when given): a task no
 * wait of the program sees.  The tid, -errno (the clone failed, or the
 * parent died at it), or 0 where the shape is direct (the caller clones). */
int hci_parent_clone(int (*fn)(void *), void *top, int flags, int *tidp);

/* ======================= seccomp_watch.c ======================= */
/* Why a check must not run, or NULL: the program installed a seccomp filter
 * (or strict mode) that can kill or trap a system call it does not list,
 * and a check's own system calls could end or disturb it (see the file). */
const char *hci_seccomp_refusal(void);
/* Why a check refuses in seccomp strict mode (seen installed, or read from
 * the status by seccomp_probe.c). */
#define HCI_SECCOMP_STRICT_WHY "the program is in seccomp strict mode: the check's own system calls would kill it"
/* Filters seen installed on the starting thread (or on every thread). */
long hci_seccomp_seen(void);

/* ======================= seccomp_probe.c ======================= */
/* Before a check: NULL when it may run (perhaps with the signal fallback or
 * without process_vm_readv, set here), else why not: a seccomp filter it
 * did not see installed kills or traps a call the check needs (see the file). */
const char *hci_seccomp_gate(void);

/* ======================= proc_fds.c ======================= */
/* The /proc files a check reads, with descriptors kept from start-up for
 * when the program has none left (see the file's comment). */
enum { HCI_PROC_TASK, HCI_PROC_MAPS, HCI_PROC_STATUS, HCI_PROC_N };
/* Opens and keeps them (checker start-up; again in a forked child). */
void hci_proc_keep(void);
/* The fork child handler: a checked child keeps descriptors of its own. */
void hci_proc_fork_child(void);
/* A descriptor of the file at its start: a fresh one, or the kept one when
 * no descriptor is free (*is_kept).  -1 when neither works. */
int hci_proc_open(int which, bool *is_kept);
void hci_proc_close(int fd, bool is_kept);
/* pread from offset 0 of the kept descriptor only (no open), or -1. */
ssize_t hci_proc_kept_pread(int which, char *buf, size_t n);
/* The kept status read with read(2) alone while it is known ours and at
 * offset 0, else -1; hci_proc_status_rewind makes it so again (lseek). */
ssize_t hci_proc_status_bare(char *buf, size_t n);
void hci_proc_status_rewind(void);
/* Descriptors lo..hi closed or replaced by the program (close_watch.c). */
void hci_proc_fds_gone(unsigned lo, unsigned hi);
/* Seccomp filters in force at the process's start (inherited), -1 unknown. */
long hci_proc_start_filters(void);
/* A number from /proc/self/status ("TracerPid", "Threads"), or -1. */
long hci_proc_status_field(const char *key);
/* The same from status text already read (NUL-terminated), or -1. */
long hci_proc_status_value(const char *status, const char *key);

/* ======================= roots.c ======================= */
/* A root range [lo, hi): every word in it may point into the heap.  Its kind:
 * global, runtime (the library's own roots without globals), registers,
 * stack, tls, stack-whole (the normal stack of a stopped thread that was
 * interrupted on another stack), and, with HCI_ROOT_UNSTABLE set, ranges
 * that may be unmapped at any moment: a running thread's stack and TLS
 * (a thread exiting, glibc trimming its stack cache), the anonymous
 * fallback, the program's own mappings and dead threads' descriptors.  An
 * unstable range is read only through hci_copy_safe; every other range
 * stays mapped until hci_world_resume. */
#define HCI_ROOT_UNSTABLE 0x100
typedef enum hci_root_kind {
  HCI_ROOT_GLOBAL = 1,
  HCI_ROOT_RUNTIME,
  HCI_ROOT_REGISTERS,
  HCI_ROOT_STACK,
  HCI_ROOT_TLS,
  HCI_ROOT_STACK_WHOLE,
  HCI_ROOT_STACK_WHOLE_RUNNING = HCI_ROOT_UNSTABLE | 1,
  HCI_ROOT_TLS_RUNNING,
  HCI_ROOT_ANON_FALLBACK,
  HCI_ROOT_MAPPING,
  HCI_ROOT_THREAD_DESCRIPTOR,
  HCI_ROOT_DTV, /* a live thread's dynamic thread vector (use_tls): its dynamic TLS blocks */
  HCI_ROOT_FILE_MAPPING, /* a private writable mapping of a file: only the pages the program's page
                            tables hold are read (flood_roots.c, scan_copied) */
} hci_root_kind_t;
typedef void (*hci_root_fn)(void *ctx, uintptr_t lo, uintptr_t hi, hci_root_kind_t kind);
static inline bool hci_root_kind_unstable(hci_root_kind_t kind) { return (kind & HCI_ROOT_UNSTABLE) != 0; }
/* "global", "stack-whole-running", ... (tests, diagnostics). */
const char *hci_root_kind_name(hci_root_kind_t kind);
/* Copies n bytes from src without faulting (process_vm_readv on ourselves);
 * pages that are gone read as zeros.  Returns n.  No lock, no malloc. */
size_t hci_copy_safe(void *dst, uintptr_t src, size_t n);
/* Writable PT_LOAD segments of every loaded module (dl_iterate_phdr), minus
 * the excluded ranges.  requires: inside hci_with_loader_lock when the world
 * is stopped (dl_iterate_phdr nests: the lock is recursive). */
void hci_roots_globals(hci_root_fn fn, void *ctx);
/* Only the writable data of the C++ runtime (libstdc++.so, libc++.so): the
 * roots that remain when globals are not (draconian).  What the runtime
 * allocates for itself and keeps in its own statics (the stream buffers
 * std::ios::sync_with_stdio(false) creates for cin/cout/cerr/clog and their
 * wide twins) is the runtime's, not a leak of the program; LeakSanitizer
 * sees them through libstdc++'s data as well. */
void hci_roots_runtime(hci_root_fn fn, void *ctx);
/* For each thread of a stopped world: registers, stack [sp - 128, stack end),
 * static TLS; for the checking thread the stack from self_sp upward (self_sp
 * = the frame address saved at the public entry, so dead checker frames are
 * not roots).  Threads that did not stop: their whole stack mapping and TLS,
 * or every writable private anonymous mapping that is not allocator-owned
 * when their stack is unknown; a warning names them.  Every range is clipped
 * to readable mappings and has the excluded ranges cut out. */
void hci_roots_threads(const hci_world_t *w, uintptr_t self_sp, hci_root_fn fn, void *ctx);
/* The same, for the parts in `what` only (LSan's use_stacks, use_registers,
 * use_tls, each on its own).  Without HCI_ROOTS_TLS a stack range that
 * contains the thread's static TLS is scanned around it. */
enum { HCI_ROOTS_STACKS = 1u, HCI_ROOTS_REGISTERS = 2u, HCI_ROOTS_TLS = 4u, HCI_ROOTS_THREADS = 7u };
void hci_roots_threads_parts(const hci_world_t *w, uintptr_t self_sp, unsigned what, hci_root_fn fn, void *ctx);
/* Cuts [lo, hi) out of every root range reported from now on (allocator and
 * checker state: hci_central, hci_pageheap, hci_pagemap, hci_tc_empty...).
 * Up to HCI_MAX_EXCLUDED ranges; call before checks (not while stopped).
 * Every HC_PRIVATE_STATE is one (66 with session 18's exec, close, sigwait
 * and status words; 64 warned "too many excluded root ranges" at every
 * check). */
#define HCI_MAX_EXCLUDED 128
void hci_roots_exclude(uintptr_t lo, uintptr_t hi);
/* libc's start frames on the main thread's stack, [caller_sp, argv_lo): not
 * roots (roots.c says why).  Larger gaps than this are not believed. */
#define HCI_START_FRAMES_MAX ((uintptr_t)64 << 10)
void hci_roots_set_start_frames(uintptr_t tp, uintptr_t caller_sp, uintptr_t argv_lo);
/* pc lies in the dynamic loader's text (objects it allocates - DTV, dynamic
 * TLS blocks - are roots).  Lock-free; valid after hci_world_init. */
bool hci_pc_in_ldso(uintptr_t pc);
/* A frame of the stack lies in pthread_create (glibc's thread state it
 * allocates, kept for reuse after the join).  Lock-free, as hci_pc_in_ldso. */
bool hci_stack_in_thread_create(const uintptr_t *pcs, int n);
/* Computes the loader's text ranges (hci_world_init calls it). */
void hci_roots_init(void);
/* Statically linked: adds the text of libc.a's loader functions that
 * allocate at run time (thread DTVs) to those ranges, from the symbol table.
 * Call with the world running, without allocator locks (it symbolizes). */
void hci_roots_static_loader(void);
/* Optional: the metadata arena can say whether it owns an address, so the
 * anonymous-mapping fallback skips it (weak: used when defined). */
bool hci_meta_owns(uintptr_t addr) __attribute__((weak));
/* Memory the program mapped itself (valgrind scans it; gperftools treated it
 * as live): every private writable mapping ([heap] included), anonymous or
 * of a file that is not a loaded module's segment (emacs's dump), that is
 * not a thread's stack (live threads' stacks are scanned from sp; dead
 * ones' and glibc's cached stacks hold only stale words) minus the pages of
 * the library (heap pages, and every mapping hci_os_map made: metadata,
 * checker buffers).  Kind "mapping": read through hci_copy_safe. */
void hci_roots_mappings(const hci_world_t *w, hci_root_fn fn, void *ctx);
/* Descriptors (struct pthread) of threads that exited and are not joined
 * yet: glibc keeps their return value there until pthread_join.  Kind
 * "thread-descriptor" (read through hci_copy_safe). */
void hci_roots_dead_threads(const hci_world_t *w, hci_root_fn fn, void *ctx);

/* ======================= check_options.c ======================= */
/* HEAPCHECK modes (gperftools' names; see docs/leak-checking.md). */
enum {
  HCI_MODE_OFF = 0,          /* HEAPCHECK unset, empty, or a setuid program */
  HCI_MODE_MINIMAL,          /* objects allocated before main are not reported */
  HCI_MODE_NORMAL,           /* at-exit check before global destructors */
  HCI_MODE_STRICT,           /* check after global destructors (library destructor) */
  HCI_MODE_DRACONIAN,        /* strict, and no thread/global roots: only ignored objects */
  HCI_MODE_AS_IS,            /* knobs from HEAP_CHECK_* as given */
  HCI_MODE_LOCAL,            /* only explicit checks */
};
/* gperftools' message levels (HCI_LOG_*) and the gate are base's (hci_log,
 * hci_log_on); hci_chk_options_read sets hci_log_verbose from verbose. */
typedef struct hci_chk_opts {
  int mode;                  /* HCI_MODE_* */
  const char *mode_name;     /* "normal"..., for messages */
  bool active;               /* checking is on (any mode but OFF, "local" included) */
  bool global_check;         /* an automatic whole-program check at exit (not local) */
  bool after_destructors;    /* that check runs from the library destructor, not atexit */
  bool scan_threads;         /* thread stacks, registers, TLS are roots (IGNORE_THREAD_LIVE) */
  bool scan_globals;         /* writable module data are roots (IGNORE_GLOBAL_LIVE) */
  bool free_libc;            /* draconian: __libc_freeres() before the final check */
  bool baseline_at_main;     /* minimal: report only objects allocated from main on */
  int max_leaks;             /* HEAP_CHECK_MAX_LEAKS: buckets printed, <= 0 = all */
  bool identify_leaks;       /* HEAP_CHECK_IDENTIFY_LEAKS: one line per object, abort at exit */
  bool test_pointer_alignment; /* HEAP_CHECK_TEST_POINTER_ALIGNMENT: redo with alignment 1 */
  int pointer_alignment;     /* HEAP_CHECK_POINTER_SOURCE_ALIGNMENT: 1, 2, 4 or 8 */
  long long max_pointer_offset; /* HEAP_CHECK_MAX_POINTER_OFFSET: interior offset limit, -1 = none
                                   (the default: then objects reached only through interior
                                   pointers are alive but counted as "possibly lost") */
  const char *dump_dir;      /* HEAP_CHECK_DUMP_DIRECTORY (default /tmp) */
  bool run_under_gdb;        /* HEAP_CHECK_RUN_UNDER_GDB (default true here, see the docs) */
  int exit_code;             /* HEAP_CHECK_EXIT_CODE (default 1) */
  bool keep_status;          /* HEAPCHECK_KEEP_STATUS: leaks do not change the exit status */
  bool dump_profile;         /* write the leak profile file (HEAP_CHECK_DUMP_DIRECTORY set, or asked) */
  int error_exit_code;       /* HEAP_CHECK_ERROR_EXIT_CODE (default 125): the check could not complete */
  int verbose;               /* PERFTOOLS_VERBOSE, raised to 1 by HEAPCHECK_VERBOSE=1 */
  const char *suppressions;  /* HEAPCHECK_SUPPRESSIONS / HEAP_CHECK_SUPPRESSIONS file, or NULL */
  /* LeakSanitizer's options (lsan.c) and what they need of the checker. */
  bool lsan;                 /* LSAN_OPTIONS / __lsan_default_options turned the checker on */
  bool check_at_exit;        /* the automatic final check runs (leak_check_at_exit) */
  unsigned thread_parts;     /* of scan_threads, the parts scanned (HCI_ROOTS_*; use_stacks...) */
  bool no_ld_roots;          /* use_ld_allocations=0: loader-allocated objects are not roots */
  bool no_regions;           /* use_root_regions=0: registered root regions are not scanned */
  bool no_mapping_roots;     /* LSan mode: the program's anonymous mappings are not roots (as LSan) */
  bool report_objects;       /* report_objects=1: each record lists its objects */
  bool show_possible;        /* HEAPCHECK_SHOW_POSSIBLY_LOST: records of the "possibly lost" objects */
  bool quiet_suppressions;   /* print_suppressions=0: no "Suppressions used:" block */
  bool no_leak_exit;         /* exitcode=0: leaks at exit do not change the exit status */
  const char *strip_path_prefix; /* cut from file and module paths in reports, or NULL */
  int tries;                 /* LSan's tries: runs per whole-program check (0, 1: one) */
  bool log_threads;          /* LSan's log_threads: each check lists the threads it scanned */
  /* Double and invalid frees (mem_errors.c). */
  int double_free;           /* LSan's detect_double_free: -1 unset (report, then abort; LSan mode:
                                the exit status), 0 a double free passes, 1 report, exit status */
  bool leaks_off;            /* LSan's detect_leaks=0 with detect_double_free=1: records kept for
                                those reports, no leak check */
  long long free_history;    /* frees remembered (HEAPCHECK_FREE_HISTORY, double_free_max_entries) */
  int free_stacks;           /* which frees' stacks are walked: HC_FREE_STACKS_* (HEAPCHECK_FREE_STACKS) */
} hci_chk_opts_t;
extern hci_chk_opts_t hci_chk;  /* written once by hci_chk_options_read, read-only afterwards */
/* Parses HEAPCHECK and every HEAP_CHECK_* variable into hci_chk.  Runs inside
 * the first malloc: no malloc, no stdio (messages go through hci_chk_log). */
void hci_chk_options_read(void);
/* Level-gated message: one write to the diagnostic fd, '\n' appended. */
#define hci_chk_log_on hci_log_on
#define hci_chk_log hci_log
/* HEAPCHECK_NO_FOLLOW=1 (the launcher's --no-follow-children): removes this
 * library from LD_PRELOAD and HEAPCHECK from the environment, so programs
 * this one executes run unchecked.  Called from the library constructor. */
void hci_chk_no_follow(void);

/* ======================= tree.c ======================= */
/* After the whole-program check at exit, in a launcher tree
 * (HEAPCHECK_TREE): appends this process's record to <dir>/processes and,
 * for a descendant whose report went to a file, prints one line on stderr. */
/* After the final check under the launcher: the record (tree.c); false when
 * it could not be written (RLIMIT_FSIZE, a full disk): the launcher will
 * not know this process's result.  True outside a tree. */
bool hci_tree_note(ssize_t bytes, ssize_t objects, bool incomplete);
/* Under the launcher: a "pending" record, once per process, before it walls
 * itself in (chroot, a killing seccomp filter, Landlock, closing the kept
 * records descriptor it could not open again), after which its
 * own record may never arrive (see tree.c).  No malloc. */
void hci_tree_pending(void);

/* ======================= exec_watch.c ======================= */
/* A check that is about to have a task of its own alive (a child of the
 * process) holds exec back until it releases it (see exec_watch.c). */
void hci_exec_hold(void);
void hci_exec_release(void);
void hci_exec_watch_init(void);       /* checker mode: gate this process's execs */
void hci_exec_watch_resolve(void);    /* libc's exec calls (constructor) */
void hci_exec_watch_fork_child(void);
/* syscall(SYS_execve / SYS_execveat, ...) through the gate. */
long hci_exec_syscall(long n, long a, long b, long c, long d, long e);

/* ======================= close_watch.c ======================= */
/* Before the program closes descriptors lo..hi (close_range's flags): a
 * pending record when the kept records descriptor is among them and cannot
 * be opened again (see close_watch.c). */
void hci_close_watch(unsigned lo, unsigned hi, unsigned flags);
void hci_close_watch_resolve(void); /* libc's close (constructor) */

/* ======================= timed_waits.c ======================= */
/* A thread's timed wait (epoll_wait, epoll_pwait, epoll_pwait2, semtimedop,
 * sigtimedwait): the call and its deadline, for the ptrace helper. */
typedef struct {
  long nr;               /* the system call being waited in, 0 if none */
  int64_t deadline_ns;   /* CLOCK_MONOTONIC; HCI_UNTIMED for a wait without a timeout */
  struct timespec left;  /* the time left, written by the helper */
  uintptr_t sp;          /* near the wrapper's stack pointer: libc's call is just below */
  int nargs;             /* the first nargs arguments libc's system call is given, when known */
  unsigned stack_args;   /* bit i: args[i] is unknown, the address of a copy in libc's own frame
                            (select, pselect, ppoll: their timeout, pselect's sigmask pair) */
  unsigned loose_args;   /* bit i: args[i] is libc's to compute, not compared (a futex word, op, value) */
  long args[6];
} hci_timed_rec_t;
#define HCI_UNTIMED INT64_MAX
void hci_timed_waits_resolve(void); /* libc's functions (constructor, checker mode) */
/* The next definition of name after ours (self), looked up once into
 * *slot (a failure too: NULL, or fallback, a static link's other name),
 * for the wrappers of timed_waits.c and timed_sem.c. */
void *hci_timed_next(void **slot, const char *name, void *self, void *fallback);
/* sigwait_watch.c's sigtimedwait: the record around libc's call. */
bool hci_timed_sigwait_begin(const sigset_t *set, siginfo_t *info, const struct timespec *ts,
                             hci_timed_rec_t *saved);
void hci_timed_sigwait_end(bool on, const hci_timed_rec_t *saved);
/* timed_sem.c's sem_timedwait and sem_clockwait: the record around libc's
 * futex wait to the absolute deadline abs (NULL: none, no record). */
bool hci_timed_futex_begin(const struct timespec *abs, hci_timed_rec_t *saved);
void hci_timed_futex_end(bool on, const hci_timed_rec_t *saved);
#if defined(__x86_64__)
struct user_regs_struct;
/* The helper (stop_ptrace.c): thread tid, stopped at our interrupt with EINTR
 * from a timed wait whose record it finds, gets the time left and a restart
 * in g; false (g untouched) otherwise. */
bool hci_timed_restart(int tid, struct user_regs_struct *g);
#endif
/* The fallback's handler (stop_world.c), on the stopped thread: notes the
 * call its slot says the thread was in (while it may read the slot), and,
 * at the handler's end, restarts a timed wait its signal ended with EINTR
 * with the time left when the context is that call, an untimed one
 * through untimed_restart.c's trampoline (arg: a hci_signal_ctx_t). */
typedef struct {
  void *uc; /* the handler's ucontext_t */
  void *si; /* its siginfo_t, in the signal frame (read already) */
} hci_signal_ctx_t;
void hci_timed_signal_seen(const hci_thread_t *t);
void hci_timed_signal_restart(void *arg);

/* ======================= untimed_restart.c ======================= */
/* An untimed wait (epoll_wait, epoll_pwait(2), poll, ppoll, select,
 * pselect6, pause, rt_sigsuspend; nr, in the context uc) that the
 * fallback's signal ended with EINTR: uc made to return into a trampoline
 * that waits again in the call's p-variant under the program's mask, its
 * data written over the frame's siginfo si.  False (uc untouched) for a
 * wait with a timeout or without a p-variant. */
bool hci_untimed_restart(void *uc, void *si, long nr);
/* uc interrupted the trampoline: true, with its wait restarted when the
 * signal ended it with EINTR (the trampoline's mask blocks every signal). */
bool hci_untimed_again(void *uc);
/* A seccomp filter kills one of the trampoline's calls (seccomp_probe.c):
 * no more restarts of untimed waits. */
void hci_untimed_forbid(void);

/* ======================= sigwait_watch.c ======================= */
void hci_sigwait_watch_resolve(void); /* libc's sigtimedwait (constructor) */
void hci_sigaction_watch_resolve(void); /* libc's sigaction and signal (constructor) */
/* libc's sigaction, past sigaction_watch.c's: the checker's own handler. */
int hci_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* The program's sigaction (sigaction_watch.c): while the signal
 * fallback's handler is installed, its signal's action is read from and
 * written to what the stop puts back (stop_world.c); libc's otherwise, a
 * real-time number under the lock the install takes. */
int hci_stw_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* Checks can run (the checker's constructor): hci_stw_sigaction takes the
 * lock from now on (before, libc's sigaction alone). */
void hci_stw_watch_actions(void);
/* stop_world.c: whether (sig, si) is a stop signal of the fallback's. */
bool hci_stop_signal_ours(int sig, const siginfo_t *si);

/* ======================= direct_exit.c ======================= */
/* Records the pid the checker starts in (checker start-up). */
void hci_direct_exit_init(void);
/* NULL when the final check may run inside a _exit called directly (not
 * from inside exit); else why not: LSan mode, a fork or vfork child, maybe
 * inside a signal handler.  No lock, no malloc. */
const char *hci_direct_exit_refusal(void);

/* ======================= mem_errors.c ======================= */
/* The report of a double or invalid free (allocator/alloc.c finds it):
 * the table of recent frees and the listener, after recording is on; with
 * the checker off only LSan's detect_double_free=0 (a listener that lets a
 * double free pass). */
void hci_mem_errors_init(void);

/* ======================= lsan.c ======================= */
/* LeakSanitizer compatibility: LSAN_OPTIONS (LSan's syntax) and the
 * program's __lsan_default_options(), read by hci_chk_options_read.  With
 * HEAPCHECK unset, hci_lsan_mode turns the checker on in LSan mode when
 * either is present and detect_leaks is not 0 (returns true then).
 * hci_lsan_apply then writes every option given into hci_chk.  Both run
 * inside the first malloc: no malloc, no stdio. */
bool hci_lsan_mode(void);
void hci_lsan_apply(void);
/* The program's __lsan_is_turned_off() says no check now (LSan asks it at
 * every whole-program check). */
bool hci_lsan_turned_off(void);
/* The program's __lsan_default_suppressions(), or NULL. */
const char *hci_lsan_default_suppressions(void);
/* log_threads: the threads a check's stop found, in LSan 14's words (one
 * "Processing thread", "Stack at" and "TLS at" line each, as the roots take
 * them).  Runs with the world stopped: hci_log only (one write, no lock). */
void hci_lsan_log_threads(const hci_world_t *w, uintptr_t self_sp);

/* ======================= flood.c ======================= */
enum { HCI_LEAK_DIRECT = 0, HCI_LEAK_INDIRECT = 1 };
typedef struct hci_leak {
  uintptr_t addr;            /* object start */
  size_t size;               /* requested bytes */
  uint32_t stack_id;         /* allocation stack (depot id) */
  uint8_t kind;              /* HCI_LEAK_* */
  size_t owned_bytes;        /* direct: the indirect leaks it keeps (valgrind's "y indirect") */
  size_t owned_objects;
} hci_leak_t;
typedef struct hci_flood_params {
  bool scan_threads;         /* stacks, registers and static TLS of every thread ... */
  unsigned thread_parts;     /* ... the parts of it scanned (HCI_ROOTS_*; 0 = all) */
  bool scan_globals;         /* writable PT_LOAD segments */
  bool no_ld_roots;          /* objects the dynamic loader allocated are not roots */
  bool no_regions;           /* registered root regions are not scanned */
  bool no_mappings;          /* the program's own anonymous mappings are not scanned */
  bool report_all;           /* every unreachable object is a leak ... */
  uint16_t base_epoch;       /* ... else only those with epoch >= base (mod 2^16) */
  int align;                 /* pointer source alignment (1, 2, 4, 8) */
  long long max_offset;      /* interior pointer limit, -1 = none */
  uintptr_t self_sp;         /* the checking thread's stack is scanned from here up */
  const uintptr_t *self_regs;/* the checking thread's callee-saved registers at the entry */
  int self_nregs;
  bool hold;                 /* leave the world stopped after the flood: the caller resumes it */
  bool wait_exiting;         /* a stopped thread inside pthread_exit: no flood, the world let go
                                (hci_flood_result_t.exiting_tid; exiting.c) */
} hci_flood_params_t;
typedef struct hci_flood_result {
  hci_leak_t *leaks;         /* hci_os_map'ed; direct and indirect, unsorted */
  size_t nleaks;
  size_t leaks_map;          /* bytes mapped for leaks */
  size_t leaked_bytes;       /* totals of leaks[] */
  size_t reach_objects;      /* live objects found reachable (roots included) */
  size_t reach_bytes;
  size_t possible_objects;   /* in scope, reached only through interior pointers ("possibly lost") */
  size_t possible_bytes;
  hci_leak_t *possible;      /* hci_os_map'ed: those objects (kind unused); may be fewer on oom */
  size_t npossible, possible_map;
  size_t scanned_words;      /* words examined (statistics) */
  int not_stopped;           /* threads that did not stop (scanned conservatively) */
  size_t skipped_bytes;      /* unreadable (guard pages, unmapped holes): not scanned */
  size_t skipped_ranges;
  int nthreads;
  bool oom;                  /* a buffer could not be mapped: results are partial */
  char incomplete[200];      /* why the check could not complete (oom, threads not stopped or
                                not listed, stacks not found); "" when it did */
  uint64_t t_stop_ns, t_flood_ns; /* time to stop the world, to flood and classify */
  uint64_t t_setup_ns, t_roots_ns, t_extra_ns, t_classify_ns; /* parts of t_flood_ns */
  uint64_t t_flood_cpu_ns;   /* CPU time of the flood (the machine may be loaded) */
  int exiting_tid;           /* wait_exiting: a thread found inside pthread_exit, nothing checked */
} hci_flood_result_t;
/* The whole stopped-world part of a check: lock everything, stop the world,
 * mark what is reachable, collect the unreachable objects, resume, unlock.
 * requires: the checker lock; hci_world_init(w); runs itself inside
 * hci_with_loader_lock.  Returns 0, or -1 when nothing could be checked. */
int hci_flood_check(hci_world_t *w, const hci_flood_params_t *p, hci_flood_result_t *r);
void hci_flood_result_free(hci_flood_result_t *r);

/* ======================= exiting.c ======================= */
/* Finds glibc's offset of struct pthread's cancelhandling (once; world
 * running, checker lock held). */
void hci_exiting_init(void);
/* A stopped thread (not the checking one) inside pthread_exit, or 0. */
int hci_exiting_thread(const hci_world_t *w);
/* How long the final check waits for such threads to end. */
#define HCI_EXITING_WAIT_MS 1000

/* ======================= suppress.c ======================= */
/* Loads HEAPCHECK_SUPPRESSIONS (once; bad lines are reported and skipped). */
void hci_supp_init(void);
bool hci_supp_any(void);     /* at least one pattern is loaded */
/* Index of the first pattern matching a frame of the stack, or -1; symbolizes
 * (world running only).  Results are cached per stack id. */
int hci_supp_match(uint32_t stack_id);
/* Stack ids known to be suppressed: lock-free, usable while the world is stopped. */
bool hci_supp_is_suppressed(uint32_t stack_id);
/* Counts a suppressed leak against its pattern (for "Suppressions used:"). */
void hci_supp_count(int index, size_t objects, size_t bytes);
/* Prints the "Suppressions used:" block of the patterns counted since the
 * last call (nothing when none matched) and resets the counts. */
void hci_supp_print_used(void);

/* ======================= report.c ======================= */
typedef struct hci_report_in {
  const char *name;          /* check name ("_main_" for the whole program) */
  const hci_leak_t *leaks;   /* unsuppressed leaks */
  size_t nleaks;
  size_t bytes;              /* their totals */
  size_t reach_objects, reach_bytes;
  size_t possible_objects, possible_bytes; /* reached only through interior pointers (not leaks) */
  const hci_leak_t *possible; /* those objects, for their records (HEAPCHECK_SHOW_POSSIBLY_LOST) */
  size_t npossible;
  bool whole_program;        /* pprof hint names the whole-program profile */
  bool at_exit;              /* print the "Exiting with error code" line */
  bool symbolize;
} hci_report_in_t;
/* Prints the gperftools-style report (or the "No leaks found" line) and
 * writes the leak profile file when there are leaks.  World running. */
void hci_report_print(const hci_report_in_t *in);

/* ======================= leaks.c ======================= */
/* First statement of a public entry point that checks: the caller's
 * callee-saved registers are spilled into this frame and sp is set below
 * them (a local, or the frame base where the frame record sits lowest), so
 * the stack scan covers the caller's registers but no dead checker frames. */
#define HCI_ENTRY_SP(sp)                                                        \
  __builtin_unwind_init();                                                      \
  volatile uintptr_t sp##_marker_ = 0;                                          \
  uintptr_t sp = (uintptr_t)&sp##_marker_;                                      \
  if ((uintptr_t)__builtin_frame_address(0) < sp) sp = (uintptr_t)__builtin_frame_address(0); \
  (void)sp##_marker_
/* The checker lock: one check at a time, ignore/unignore, root regions. */
extern hci_lock_t hci_chk_lock;
typedef struct hci_check_req {
  const char *name;
  bool whole_program;        /* _main_: every object (minimal: from main on) */
  bool at_exit;              /* the automatic final check */
  bool report;               /* print the report */
  bool symbolize;
  uint16_t base_epoch;       /* scoped checks: report objects with epoch >= base */
  uintptr_t self_sp;         /* frame address at the public entry point */
  const uintptr_t *self_regs;
  int self_nregs;
  bool hold;                 /* the final at-exit check: when it fails, the world stays stopped
                                until the process ends */
} hci_check_req_t;
/* Runs one check (see the order at the top of this file).  Returns 1 when
 * nothing leaked, 0 otherwise (leaks, or a check that could not complete:
 * said in an error, never "No leaks found"); *bytes and *objects get the unsuppressed totals. */
int hci_chk_run(const hci_check_req_t *req, ssize_t *bytes, ssize_t *objects);
/* Whole-program check state for the C API. */
int hci_chk_global_now(uintptr_t self_sp, const uintptr_t *regs, int nregs);
/* __lsan_do_leak_check: the final whole-program check now (once; none at
 * exit afterwards); leaks end the process with the exit code. */
void hci_chk_final_now(uintptr_t self_sp);
/* __lsan_do_recoverable_leak_check: a whole-program check in any active
 * mode; 1 when leaks were found. */
int hci_chk_recoverable_now(uintptr_t self_sp);
void hci_chk_global_totals(ssize_t *bytes, ssize_t *objects);
void hci_chk_cancel_global(void);

/* ======================= api.c ======================= */
/* Registered root regions, read by the flood (checker lock held). */
typedef struct hci_region {
  uintptr_t lo, hi;
} hci_region_t;
int hci_api_root_regions(const hci_region_t **v);
/* Set once an object may carry HC_OBJ_IGNORED (a Disabler or IgnoreObject
 * was used): until then the flood skips its pass over every record. */
extern _Atomic int hci_api_any_ignored;
/* Runs and forgets the registered cleanups (before the final check). */
void hci_api_run_cleanups(void);
/* Frees libc's and libstdc++'s caches before the final check (valgrind does). */
void hci_api_free_libc(void);
/* Quiet forms for the LSan interface: 0 done, 1 already ignored, -1 no live
 * heap object at p (*size gets the object's size). */
int hci_api_ignore(const void *p, size_t *size);
/* 0, or -1 when no such region is registered. */
int hci_api_unregister_region(const void *begin, size_t size);
/* The calling thread's Disabler depth. */
int hci_api_disable_depth(void);

/* ======================= report_out.c ======================= */
/* One leak record: the leaks of one (kind, stack), as the text report groups them. */
typedef struct hci_fmt_rec {
  uint32_t stack_id;
  uint8_t kind;              /* HCI_LEAK_* */
  size_t bytes, count;
} hci_fmt_rec_t;
typedef struct hci_fmt_check {
  const struct hci_report_in *in;
  const hci_fmt_rec_t *recs; /* direct first, each kind by bytes */
  size_t nrecs;
  size_t direct_bytes, direct_objects, indirect_bytes, indirect_objects;
  int64_t unix_time;
} hci_fmt_check_t;
/* After each check (world running, checker lock held): writes the files
 * HEAPCHECK_REPORT names (json, sarif, svg, folded, suppressions). */
void hci_fmt_check(const struct hci_report_in *in);
/* A ready-to-paste suppression for a stack ("leak:^function$", or
 * "leak:<module>" when no frame is named); false when there is none. */
bool hci_fmt_suppression(uint32_t stack_id, char *buf, size_t size);
/* "Suppression: leak:^f$" line under a text-report record. */
void hci_fmt_print_suppression(hci_out_t *o, uint32_t stack_id);

/* ======================= report_json.c, report_sarif.c ======================= */
void hci_json_check(hci_out_t *o, const hci_fmt_check_t *c);   /* one document, no newline */
extern const char hci_sarif_head[], hci_sarif_tail[];
void hci_sarif_run(hci_out_t *o, const hci_fmt_check_t *c);    /* one element of runs[] */


/* ======================= leaks.c: process start-up and fork (runtime/init.c) ======================= */
/* Reads the options and, when checking is on, turns recording on. */
void hci_checker_init(void);
/* The program's memory is not ours to check (runtime/libc_redirect.c: its own
 * malloc): a warning saying why, and no check at exit. */
void hci_checker_stand_down(const char *why);
void hci_checker_fork_locks(hci_lock_fn *each);
void hci_checker_fork_child(void);
/* The locks fork_prepare takes beside hci_chk_lock (stop_world.c,
 * tls_geometry.c, roots.c) and the seccomp gate's reset (seccomp_probe.c). */
void hci_stw_fork_locks(hci_lock_fn *each);
void hci_tls_fork_locks(hci_lock_fn *each);
void hci_roots_fork_locks(hci_lock_fn *each);
void hci_seccomp_fork_child(void);

#endif

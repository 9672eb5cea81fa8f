/* seccomp_probe.c - seccomp filters the checker did not see installed.
 *
 * seccomp_watch.c sees the filters a program installs through libc's prctl
 * or syscall.  Others are not seen: those inherited from the parent (a
 * container's profile, systemd's SystemCallFilter=, bubblewrap, minijail)
 * and those installed by an inline system call (Chromium's sandbox).  Most
 * answer an unlisted call with an errno (Docker's profile, systemd with
 * SystemCallErrorNumber=): a check then falls back or says it could not
 * complete, and must run.  Some kill (systemd's SystemCallFilter= without
 * SystemCallErrorNumber= kills at ptrace, which @system-service does not
 * list) or trap: a check there died of SIGSYS.
 *
 * So before a check, the starting thread's "Seccomp:" and "Seccomp_filters:"
 * lines are read (pread of a descriptor kept from start-up: no open, which
 * such a filter may kill).  Seccomp 0 (the usual case): nothing more.
 * Strict mode: no check.  Filters the count of which exceeds those seen
 * installed on that thread: each system call a check makes is tried, with
 * harmless arguments, in a probe task - a raw clone(CLONE_VM) without
 * CLONE_FILES or CLONE_THREAD, which inherits the filters and every signal
 * blocked (a trapping filter's SIGSYS then kills it instead of running the
 * program's handler); a kill ends only the probe.  It writes the index of
 * the call it is about to make into shared memory: when it dies, that call
 * is the killer, and a new probe goes on from the next one.  The checking
 * thread learns of its end from CLONE_CHILD_CLEARTID (a futex), not wait4.
 * Probes are made by stop_ptrace.c's parent task where the helper is an
 * orphan (no wait of the program sees them; they go to init with that
 * parent, which ends at the check's stop); elsewhere by the checking thread,
 * which reaps them with wait4 only when the probe found wait4 harmless.  A probe
 * blocked past a second (a user-notification filter whose supervisor does
 * not answer) is killed and that call counted as a killer.  The verdict is
 * kept for as long as the filter count stays the same (one probe per
 * process, usually).  Then:
 *   - ptrace, wait4, prctl, unshare or close_range kill (the helper's
 *     calls): threads are stopped with the signal fallback, its warning
 *     naming the filter;
 *   - process_vm_readv kills: memory is read without it;
 *   - any other call a check needs kills: no check (a line on stderr unless
 *     writing one takes a killing call; HEAP_CHECK_ERROR_EXIT_CODE at exit).
 * What is left: the probe's own clone (and the status read) is made
 * unprobed - a filter that kills any clone but a thread's (Chromium's
 * renderer policy) still ends the process at the check's first one; only
 * the starting thread's filters are counted (a filter another thread
 * installs for itself alone by an inline call is not seen); filters that
 * look at arguments may answer the probe's differently from the check's.
 *
 * Locks: callers hold none; gate_owner (a spin word naming its thread)
 * makes one gate at a time (the probe's stack and the status buffer are
 * static).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hc_checker.h"

#define RAW(n, a, b, c, d) hci_raw6((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)

/* What a killing call takes away (K_RESTART: the fallback's restart of
 * untimed waits, untimed_restart.c, which makes these calls on the
 * program's threads). */
enum { K_CORE, K_PTRACE, K_VMREADV, K_RESTART, K_WAIT };

struct call { long nr; const char *name; int kind; };

/* Every system call a check makes (strace of checks with both stop methods,
 * and the raw ones of stop_ptrace.c), in the order the probe makes them. */
#define C(name, kind) {SYS_##name, #name, K_##kind}
static const struct call calls[] = {
    C(getpid, CORE), C(gettid, CORE), C(getuid, CORE), C(getppid, PTRACE),
    C(rt_sigprocmask, CORE), C(rt_sigaction, CORE), C(sigaltstack, CORE), C(rt_sigpending, CORE),
    C(clock_gettime, CORE), C(prlimit64, CORE), C(nanosleep, CORE), C(clock_nanosleep, CORE),
    C(futex, CORE), C(mmap, CORE), C(mprotect, CORE), C(madvise, CORE),
    C(mincore, CORE), C(process_vm_readv, VMREADV), C(munmap, CORE), C(openat, CORE),
    C(read, CORE), C(pread64, CORE), C(lseek, CORE), C(newfstatat, CORE),
#ifdef SYS_fstat
    C(fstat, CORE),
#endif
    C(fcntl, CORE), C(dup3, CORE), C(getdents64, CORE), C(faccessat, CORE),
#ifdef SYS_access
    C(access, CORE),
#endif
    C(readlinkat, CORE),
#ifdef SYS_readlink
    C(readlink, CORE),
#endif
    C(close, CORE), C(write, CORE), C(tgkill, CORE), C(rt_tgsigqueueinfo, CORE),
    C(epoll_pwait, RESTART),
#ifdef SYS_epoll_pwait2
    C(epoll_pwait2, RESTART),
#endif
    C(ppoll, RESTART), C(pselect6, RESTART), C(rt_sigsuspend, RESTART),
    C(prctl, PTRACE), C(unshare, PTRACE), C(close_range, PTRACE), C(ptrace, PTRACE), C(wait4, WAIT),
};
#undef C
#define WAIT4 ((int)(sizeof calls / sizeof calls[0]) - 1)
#define NCALLS ((int)(sizeof calls / sizeof calls[0]))

#define PROBE_STACK (16u << 10)
static struct {
  _Atomic int at;           /* the call the probe is about to make; NCALLS: done */
  _Atomic int tid;          /* cleared by the kernel when the probe ends */
  int start;
  long long killers;        /* bit i: calls[i] killed or trapped the probe */
  long filters;             /* the count the verdict is for; -1: none yet */
  int pid;
  int tids[NCALLS], ntids; /* probes to reap once wait4 is known harmless */
  bool stuck;              /* a probe never ended: no more probes, no check */
  char stack[PROBE_STACK] __attribute__((aligned(16)));
  char page_pad[64];
} pr = {.filters = -1};
HC_PRIVATE_STATE(pr);

static void one(int i, long *page, int *fd) {
  long nr = calls[i].nr;
  long me = RAW(SYS_getpid, 0, 0, 0, 0);
  char buf[256];
  switch (nr) {
  case SYS_rt_sigprocmask: { unsigned long old; RAW(nr, SIG_BLOCK, NULL, &old, sizeof old); break; }
  case SYS_rt_sigaction: { char old[64]; RAW(nr, SIGRTMAX - 3, NULL, old, 8); break; }
  case SYS_sigaltstack: { stack_t old; RAW(nr, NULL, &old, 0, 0); break; }
  case SYS_rt_sigpending: { unsigned long set; RAW(nr, &set, 8, 0, 0); break; }
  case SYS_clock_gettime: { struct timespec ts; RAW(nr, CLOCK_MONOTONIC, &ts, 0, 0); break; }
  case SYS_prlimit64: { struct rlimit r; RAW(nr, 0, RLIMIT_AS, NULL, &r); break; }
  case SYS_nanosleep: { struct timespec ts = {0, 0}; RAW(nr, &ts, NULL, 0, 0); break; }
  case SYS_clock_nanosleep: { struct timespec ts = {0, 0}; RAW(nr, CLOCK_MONOTONIC, 0, &ts, NULL); break; }
  case SYS_futex: RAW(nr, &pr.start, FUTEX_WAKE_PRIVATE, 1, NULL); break;
  case SYS_mmap: {
    long p = hci_raw6(nr, 0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p > 0 || p < -4095) *page = p;
    break;
  }
  case SYS_mprotect: if (*page) RAW(nr, *page, 4096, PROT_READ, 0); break;
  case SYS_madvise: if (*page) RAW(nr, *page, 4096, MADV_DONTNEED, 0); break;
  case SYS_mincore: { unsigned char v; if (*page) RAW(nr, *page, 4096, &v, 0); break; }
  case SYS_process_vm_readv: {
    struct iovec l = {buf, 8}, r = {&pr.start, 8};
    hci_raw6(nr, me, (long)&l, 1, (long)&r, 1, 0);
    break;
  }
  case SYS_munmap: if (*page) RAW(nr, *page, 4096, 0, 0); *page = 0; break;
  case SYS_openat: *fd = (int)RAW(nr, AT_FDCWD, "/proc/self/maps", O_RDONLY | O_CLOEXEC, 0); break;
  case SYS_read: RAW(nr, *fd, buf, sizeof buf, 0); break;
  case SYS_pread64: hci_raw6(nr, *fd, (long)buf, sizeof buf, 0, 0, 0); break;
  case SYS_lseek: RAW(nr, *fd, 0, SEEK_SET, 0); break;
  case SYS_newfstatat: { struct stat st; RAW(nr, *fd, "", &st, AT_EMPTY_PATH); break; }
#ifdef SYS_fstat
  case SYS_fstat: { struct stat st; RAW(nr, *fd, &st, 0, 0); break; }
#endif
  case SYS_fcntl: RAW(nr, *fd, F_GETFD, 0, 0); break;
  case SYS_dup3: RAW(nr, -1, -1, O_CLOEXEC, 0); break;
  case SYS_getdents64: RAW(nr, *fd, buf, sizeof buf, 0); break; /* ENOTDIR: the filter saw it */
  case SYS_faccessat: RAW(nr, AT_FDCWD, "/proc", F_OK, 0); break;
#ifdef SYS_access
  case SYS_access: RAW(nr, "/proc", F_OK, 0, 0); break;
#endif
  case SYS_readlinkat: RAW(nr, AT_FDCWD, "/proc/self/exe", buf, sizeof buf); break;
#ifdef SYS_readlink
  case SYS_readlink: RAW(nr, "/proc/self/exe", buf, sizeof buf, 0); break;
#endif
  case SYS_close: RAW(nr, *fd, 0, 0, 0); *fd = -1; break;
  case SYS_write: RAW(nr, -1, buf, 0, 0); break; /* EBADF: never the program's descriptor */
  case SYS_tgkill: RAW(nr, me, RAW(SYS_gettid, 0, 0, 0, 0), 0, 0); break;
  case SYS_rt_tgsigqueueinfo: {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_code = SI_QUEUE;
    RAW(nr, me, RAW(SYS_gettid, 0, 0, 0, 0), 0, &si);
    break;
  }
  /* The restart's waits, made so that they return at once: no such
   * descriptor, a zero timeout, a mask size the kernel refuses. */
  case SYS_epoll_pwait: hci_raw6(nr, -1, 0, 1, 0, 0, 8); break;
#ifdef SYS_epoll_pwait2
  case SYS_epoll_pwait2: { struct timespec ts = {0, 0}; hci_raw6(nr, -1, 0, 1, (long)&ts, 0, 8); break; }
#endif
  case SYS_ppoll: { struct timespec ts = {0, 0}; hci_raw6(nr, 0, 0, (long)&ts, 0, 8, 0); break; }
  case SYS_pselect6: { struct timespec ts = {0, 0}; hci_raw6(nr, 0, 0, 0, 0, (long)&ts, 0); break; }
  case SYS_rt_sigsuspend: RAW(nr, NULL, 0, 0, 0); break; /* EINVAL before any wait */
  case SYS_prctl: RAW(nr, PR_SET_PDEATHSIG, SIGKILL, 0, 0); break;
  case SYS_unshare: RAW(nr, 0, 0, 0, 0); break; /* nothing unshared */
  case SYS_close_range: RAW(nr, ~0u, ~0u, 0, 0); break; /* no such descriptor */
  case SYS_ptrace: RAW(nr, PTRACE_INTERRUPT, 0, 0, 0); break; /* ESRCH */
  case SYS_wait4: { int st; RAW(nr, -1, &st, __WALL | WNOHANG, 0); break; } /* ECHILD */
  default: RAW(nr, 0, 0, 0, 0); break; /* the identity calls */
  }
}

static int probe_main(void *arg) {
  (void)arg;
  long page = 0;
  int fd = -1;
  for (int i = pr.start; i < NCALLS; i++) {
    atomic_store(&pr.at, i);
    /* A call that needs a descriptor or the page the probe lost to a
     * killer is made on nothing: the filter still sees its number. */
    one(i, &page, &fd);
  }
  atomic_store(&pr.at, NCALLS);
  return 0;
}

/* Runs probes from call `start` until one ends; the index it reached. */
static int run_probe(int start, bool *created) {
  pr.start = start;
  atomic_store(&pr.at, start);
  atomic_store(&pr.tid, 1);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  /* The kernel writes the tid before the probe runs (CLONE_PARENT_SETTID)
   * and clears it when the probe ends: a store of ours after clone could
   * come after the clear (the probe ended first under strace) and wait for
   * ever. */
  /* A probe the parent task makes is no child of ours (a program reaping
   * with __WALL took them: stop_ptrace.c, "Whose child it is"). */
  const int flags = CLONE_VM | CLONE_UNTRACED | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID;
  int tid = hci_parent_clone(probe_main, pr.stack + PROBE_STACK, flags, (int *)&pr.tid);
  bool ours = tid == 0;
  if (ours) tid = clone(probe_main, pr.stack + PROBE_STACK, flags, NULL, (int *)&pr.tid, NULL, (int *)&pr.tid);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  *created = tid > 0;
  if (tid <= 0) return start;
  struct timespec t0, now;
  RAW(SYS_clock_gettime, CLOCK_MONOTONIC, &t0, 0, 0);
  bool killed = false;
  int v;
  while ((v = atomic_load(&pr.tid)) != 0) {
    struct timespec ts = {0, 20000000};
    RAW(SYS_futex, &pr.tid, FUTEX_WAIT, v, &ts);
    RAW(SYS_clock_gettime, CLOCK_MONOTONIC, &now, 0, 0);
    long long ms = (now.tv_sec - t0.tv_sec) * 1000ll + (now.tv_nsec - t0.tv_nsec) / 1000000;
    if (ms >= 2000 && !killed) { /* blocked: a supervisor that does not answer */
      RAW(SYS_tgkill, tid, tid, SIGKILL, 0);
      killed = true;
    } else if (ms >= 3000) {
      pr.stuck = true; /* never cleared: its stack is not ours again */
      break;
    }
  }
  if (ours) pr.tids[pr.ntids++] = tid;
  return atomic_load(&pr.at);
}

/* "Seccomp:" and "Seccomp_filters:" of the starting thread; false when unread.
 * The buffer is static (the gate runs on the asking thread's stack, which
 * may be 16 KiB), used under gate_owner. */
static char status_buf[4096];
HC_PRIVATE_STATE(status_buf);
/* *bare: read with read(2) alone (proc_fds.c), to be rewound once the
 * filters are known to allow lseek. */
static bool read_status(long *mode, long *filters, bool *bare) {
  char *buf = status_buf;
  ssize_t n = hci_proc_status_bare(buf, sizeof status_buf - 1);
  *bare = n >= 0;
  if (n < 0) {
    hci_proc_keep(); /* a fork child's own (no-op when kept) */
    n = hci_proc_kept_pread(HCI_PROC_STATUS, buf, sizeof status_buf - 1);
  }
  if (n <= 0) return false;
  buf[n] = 0;
  *mode = hci_proc_status_value(buf, "Seccomp");
  *filters = hci_proc_status_value(buf, "Seccomp_filters");
  return *mode >= 0;
}

static void probe_all(void) {
  pr.killers = 0;
  pr.ntids = 0;
  bool wait_ok = false;
  for (int start = 0; start < NCALLS;) {
    bool created;
    int at = run_probe(start, &created);
    /* clone answered with an errno: nothing can be probed; an errno filter
     * is the likely kind (a killing one would have killed). */
    if (!created || pr.stuck) break;
    if (at > WAIT4) wait_ok = true;
    if (at >= NCALLS) break;
    pr.killers |= 1ll << at;
    start = at + 1;
  }
  /* A probe made by this thread is its child with no exit signal: only a
   * __WALL wait reaps it; when wait4 kills, they stay zombies until the
   * process ends.  The parent task's probes go to init with it. */
  for (int i = 0; wait_ok && i < pr.ntids; i++) {
    int st;
    while (RAW(SYS_wait4, pr.tids[i], &st, __WALL, 0) == -EINTR) {
    }
  }
}

static const char *verdict;
HC_PRIVATE_STATE(verdict);

/* One gate at a time (gate_owner): the probe's stack and the status buffer are static
 * (two threads asking for checks at once; the second spins while the first
 * probes, a few milliseconds once per process). */
static _Atomic uintptr_t gate_owner; /* the thread in the gate (its thread pointer: no gettid), 0: none */
HC_PRIVATE_STATE(gate_owner);

/* A filter installed since the start by an inline system call (none
 * inherited, none seen): nothing is known of what it allows - a code
 * runner's list of read, write, exit, brk, mmap, munmap and futex killed
 * the process at the gate's own calls, and a probe needs clone.  Inherited
 * filters let the process's start-up through, ours included (open, fcntl,
 * fstat, mmap, prctl...): those are probed as before.  Once refused, the
 * process is walled in (os.c) for good: filters are never removed. */
#define INLINE_WHY                                                                                               \
  "a seccomp filter installed by a direct system call since the program started may kill any system call the " \
  "check makes"
static bool inline_walled;
HC_PRIVATE_STATE(inline_walled);

static const char *gate(void) {
  if (inline_walled) return INLINE_WHY;
  long mode, filters;
  bool bare;
  if (!read_status(&mode, &filters, &bare)) return NULL;
  if (mode == 0) {
    if (bare) hci_proc_status_rewind();
    return NULL;
  }
  if (mode == 1) {
    hci_log_stream_mute();
    return HCI_SECCOMP_STRICT_WHY;
  }
  long inherited = hci_proc_start_filters();
  if (filters >= 0 && inherited >= 0 && filters > inherited + hci_seccomp_seen() &&
      !hci_opt_bool(HCO_HEAP_CHECK_PROBE_INLINE_SECCOMP)) {
    inline_walled = true;
    atomic_store(&hci_os_walled, true);
    hci_log_stream_mute();
    hci_unwind_forbid_syscalls();
    return INLINE_WHY;
  }
  if (bare) hci_proc_status_rewind(); /* a filter that kills lseek: only an inherited one, which allowed our start */
  if (filters >= 0 && filters <= hci_seccomp_seen()) return NULL; /* all seen: seccomp_watch.c decided */
  int pid = (int)RAW(SYS_getpid, 0, 0, 0, 0);
  if (!pr.stuck && (filters != pr.filters || pid != pr.pid)) {
    hci_exec_hold(); /* the probes are children of ours (or of the parent task) */
    probe_all();
    hci_exec_release();
    pr.filters = filters;
    pr.pid = pid;
    verdict = pr.stuck ? "a seccomp filter the program inherited or installed by a direct system call holds the "
                         "check's probe of its system calls (a supervisor that never answers)"
                       : NULL;
    static char why[200];
    for (int i = 0; i < NCALLS; i++) {
      if (!(pr.killers >> i & 1)) continue;
      if (calls[i].kind == K_PTRACE || calls[i].kind == K_WAIT) {
        hci_world_no_ptrace("a seccomp filter the program inherited or installed by a direct system call kills "
                            "ptrace, wait4, prctl, unshare or close_range");
      } else if (calls[i].kind == K_VMREADV) {
        hci_os_read_no_vm_readv();
      } else if (calls[i].kind == K_RESTART) {
        hci_untimed_forbid(); /* the fallback's untimed waits keep their EINTR */
      } else if (!verdict) {
        hci_snprintf(why, sizeof why,
                "a seccomp filter the program inherited or installed by a direct system call kills or traps %s, "
                "which the check needs",
                calls[i].name);
        verdict = why;
        if (!strcmp(calls[i].name, "write") || !strcmp(calls[i].name, "newfstatat") ||
            !strcmp(calls[i].name, "fstat") || !strcmp(calls[i].name, "fcntl") || !strcmp(calls[i].name, "dup3"))
          hci_log_stream_mute();
      }
    }
  }
  return verdict;
}

/* The child of a fork: no other thread, so no gate in progress (the
 * parent's probe state is redone: pr.pid differs). */
void hci_seccomp_fork_child(void) { atomic_store_explicit(&gate_owner, 0, memory_order_relaxed); }

const char *hci_seccomp_gate(void) {
  uintptr_t me = (uintptr_t)__builtin_thread_pointer(), free_ = 0;
  while (!atomic_compare_exchange_weak_explicit(&gate_owner, &free_, me, memory_order_acquire,
                                                memory_order_relaxed)) {
    /* A handler that interrupted this thread's own gate (exit() in a
     * SIGTERM handler): waiting would be for ever. */
    if (free_ == me)
      return "it was asked from a signal handler that interrupted the check's seccomp probe on this thread";
    free_ = 0;
  }
  const char *why = gate();
  atomic_store_explicit(&gate_owner, 0, memory_order_release);
  return why;
}

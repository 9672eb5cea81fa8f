/* stop_ptrace.c - stopping the world without signals (design decision D11b,
 * the way LeakSanitizer and gperftools' thread lister do it).
 *
 * A helper task shares our address space but is not a thread of the
 * process (a tracer may not be in its tracee's thread group: PTRACE_SEIZE
 * says EPERM): clone(CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_UNTRACED)
 * with exit signal 0, so no SIGCHLD is sent for it; its own mmap'ed stack;
 * every signal blocked (inherited from the checking thread, which blocks
 * them around clone).  It runs only raw system calls (no errno, no libc
 * lock, no malloc: it runs on the checking thread's TLS).
 *
 * Whose child it is.  A child of any thread of ours is seen by the
 * program's wait with __WALL (waitpid(-1, __WALL | WNOHANG) in a loop, a
 * SIGCHLD handler's loop, waitid(P_ALL) with __WALL): a helper ends after
 * the threads are let go, so such a program reaped it before us in 3 of 20
 * runs (13 of 20 static), a pid it never made.  Any task we clone is our
 * child, and the one that ends last cannot end while the world is stopped
 * if it is the tracer (its end lets the threads go).  So the helper is a
 * grandchild: a parent task (our child) clones it and waits; once the
 * helper has stopped every thread, the parent ends and the checking thread
 * reaps it - no thread of the program runs then.  The helper, orphaned,
 * goes to the namespace's init (or the nearest child subreaper above us),
 * which reaps it when it ends; the program never sees it.  It cannot use
 * PR_SET_PDEATHSIG (its parent ends on purpose): it polls instead (20 ms)
 * and leaves when the checking thread is gone or a stopped thread ended
 * (only the end of the process ends one).  When the orphan would come back
 * to us (this process is a child subreaper or its namespace's init) the
 * helper is our child as before (with PR_SET_PDEATHSIG(SIGKILL)), reaped
 * after the threads are let go: the race above remains there.  When no
 * helper could stop the world (ptrace refused, the helper died or could not
 * be made) the parent stays until the signal fallback has stopped it
 * (hci_ptrace_end_parent).  The same parent makes seccomp_probe.c's probes
 * before the check (hci_parent_clone) and never reaps them: they go to init
 * with it; a check that stops nothing (a lone thread) ends it at once, and
 * one the probe's verdict refuses ends it while the threads run (once per
 * process).  Under a non-root finite RLIMIT_NPROC, too, the helper is our
 * child (an orphan counts against the user's processes until init reaps
 * it), with HEAP_CHECK_STOP_HELPER=child, and by default (auto) where the
 * adopter shows no sign of reaping (adopter.c: an init that never reaps, a
 * container's `sleep infinity`, would keep a zombie a check; a subreaper
 * is judged once the first helper said it was adopted by it).  Why not another shape: a CLONE_THREAD task
 * cannot trace its own process's threads; CLONE_PARENT makes the task our
 * parent's child with our exit signal (a SIGCHLD our parent never expected).
 *
 * Protocol (job.phase is the futex word):
 *  1. The checking thread, holding every lock (see hc_checker.h), maps the
 *     stacks, clones the parent, which clones the helper; it allows the
 *     helper as our tracer (PR_SET_PTRACER when Yama restricts ptrace) and
 *     sets phase GO.
 *  2. The helper lists /proc/<pid>/task through the descriptor it was given,
 *     and for every thread but the checking one: PTRACE_SEIZE (no signal)
 *     and PTRACE_INTERRUPT; then it reaps the stops with wait4(__WALL),
 *     reads the registers (PTRACE_GETREGSET: NT_PRSTATUS, the SIMD state,
 *     the thread pointer) into the thread's slot, and lists again until no
 *     new thread appears (a thread may create threads before it stops).
 *     ESRCH or an exit report: the thread left (EXITED).  EPERM: refused
 *     (a zombie group leader, another tracer, seccomp, non-dumpable).
 *     No stop by the deadline (HEAP_CHECK_STOP_TIMEOUT_MS): NOT_STOPPED.
 *  3. It puts the stopped threads in PTRACE_LISTEN (job control: a SIGSTOP
 *     to the process completes and reaches its parent), sets phase STOPPED
 *     and waits, taking the threads' reports every 20 ms.  The checking
 *     thread ends and reaps the parent, then scans.
 *  4. Resume: phase RELEASE; the helper detaches every stopped thread (a
 *     listening one after an interrupt, re-injecting a signal it caught in
 *     a signal-delivery-stop) and exits;
 *     the checking thread waits for its end (CLONE_CHILD_CLEARTID; in the
 *     direct shape it reaps it with wait4 __WALL) and unmaps its stack.
 *     Threads still running when the helper exits are detached by the
 *     kernel.  At the exit check the world may stay stopped: the helper
 *     then waits until the process ends.
 * A stop interrupts no system call that the kernel restarts (sleep,
 * nanosleep, poll, select, pause, sigsuspend, read, futex waits...): they
 * resume as if nothing happened.  The kernel returns EINTR from epoll_wait,
 * semop, sigtimedwait, io_getevents and socket calls with
 * SO_RCVTIMEO/SO_SNDTIMEO after any stop (gdb and strace attaching do the
 * same, see signal(7)); where such a wait has no timeout the helper turns
 * that EINTR into the kernel's restart (untimed_wait, x86-64).
 *
 * Locks: none; the caller holds every allocator lock and the loader lock.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <signal.h>
#include <sched.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <linux/futex.h>

#include "hc_checker.h"

#define HELPER_STACK (64u << 10)
#define PARENT_STACK (16u << 10)
#define ORPHAN_POLL_NS 20000000ll
#define MAX_PASSES 32
#define POLL_MIN_NS 20000ll
#define POLL_MAX_NS 5000000ll

enum { PH_WAIT, PH_GO, PH_STOPPED, PH_RELEASE, PH_ENDING };

static struct {
  _Atomic int phase;
  int pid, self, taskfd;
  long long timeout_ns;
  hci_world_t *w;
  int refused;          /* threads that answered PTRACE_SEIZE with EPERM */
  int helper;           /* direct shape: its pid (our child), 0 when none */
  _Atomic int helper_tid; /* orphan shape: its tid, cleared by the kernel when it ends */
  int adopter;          /* orphan shape: its parent once ours ended (getppid at release) */
  bool orphan;          /* the helper is the parent's child, not ours */
  void *stack;
  bool settled;         /* a listing found no new thread */
  bool list_failed;
} job;
HC_PRIVATE_STATE(job);

/* The parent task (orphan shape): our child, alive from the first task a
 * check asks of it (seccomp_probe.c's probes, then the helper) until the
 * world is stopped.  It clones what it is asked (req, futex word) and says
 * the tid (ans).  It never reaps: the probes' zombies are its children,
 * handed to init with the helper when it ends.  Apart from job, which each
 * stop clears: it outlives the gate's probes and a failed ptrace stop. */
enum { PQ_NONE, PQ_CLONE, PQ_END };
static struct {
  _Atomic int req;      /* PQ_*: what the parent is asked */
  _Atomic int ans;      /* 0 until answered: the new task's tid, or -errno */
  int (*fn)(void *);
  void *top;            /* the new task's stack top */
  int flags;
  int *tidp;            /* CLONE_PARENT_SETTID / CLONE_CHILD_CLEARTID word, or NULL */
  int owner;            /* our pid (a fork child's copy is not its own) */
  int pid;              /* the parent's, 0 when none */
  void *stack;
} par;
HC_PRIVATE_STATE(par);

/* ---------------------------------------------------------------- raw system calls */

/* hci_raw6 and hci_raw_libc_result: base/raw_syscall.c. */
#define RAW(n, a, b, c, d) hci_raw6((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)

long long hci_raw_now_ns(void) {
  struct timespec ts;
  RAW(SYS_clock_gettime, CLOCK_MONOTONIC, &ts, 0, 0);
  return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static void nap(long long ns) {
  struct timespec ts = {(time_t)(ns / 1000000000ll), (long)(ns % 1000000000ll)};
  RAW(SYS_nanosleep, &ts, 0, 0, 0);
}

static void futex_wait(_Atomic int *w, int val, long long ns) {
  struct timespec ts = {(time_t)(ns / 1000000000ll), (long)(ns % 1000000000ll)};
  RAW(SYS_futex, w, FUTEX_WAIT_PRIVATE, val, ns > 0 ? &ts : NULL);
}

static void futex_wake(_Atomic int *w) { RAW(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, 0); }

/* ---------------------------------------------------------------- task lists */

/* PF_IO_WORKER and PF_USER_WORKER (include/linux/sched.h; not in the
 * user-space headers). */
#define TASK_IO_WORKER 0x10u
#define TASK_USER_WORKER 0x4000u

long hci_task_file(int fd, const char *task, const char *file, char *buf, size_t cap) {
  char path[32];
  size_t k = strlen(task), f = strlen(file);
  buf[0] = 0;
  if (k + f + 2 > sizeof path) return -ENAMETOOLONG;
  memcpy(path, task, k);
  path[k] = '/';
  memcpy(path + k + 1, file, f + 1);
  long tfd = RAW(SYS_openat, fd, path, O_RDONLY | O_CLOEXEC, 0);
  if (tfd < 0) return tfd;
  long n, got = 0;
  while (got < (long)cap - 1 && (n = RAW(SYS_read, tfd, buf + got, cap - 1 - got, 0)) != 0) {
    if (n == -EINTR) continue;
    if (n < 0) break;
    got += n;
  }
  RAW(SYS_close, tfd, 0, 0, 0);
  buf[got] = 0;
  return got;
}

const char *hci_stat_field(const char *stat, int n) {
  const char *p = strrchr(stat, ')');
  if (!p) return NULL;
  for (int field = 2, i = 1; field < n; field++) { /* p: field's end */
    if (p[i] != ' ') return NULL;
    p += i + 1;
    if (field + 1 == n) return *p ? p : NULL;
    for (i = 0; p[i] && p[i] != ' '; i++) {
    }
  }
  return NULL;
}

/* Whether task `task` (a name in the task list fd) is a kernel worker of
 * the process: io_uring's iou-wrk-N (io-wq) and iou-sqp-N (an SQPOLL ring's
 * poller), and the vhost_task threads (Linux 6.4: vhost-N of vhost-net,
 * and KVM's kvm-nx-lpage-re, started by a VM's first KVM_RUN from Linux
 * 6.13) are threads of the process that never run user code.  ptrace stops
 * them with every user register zero (a check of libuv's io_uring tests,
 * and of every QEMU with -accel kvm, said "the stack of thread N could not
 * be found (sp 0x0 is in no mapping)" and failed: status 125) and a stop
 * signal never reaches them; they have no user stack, registers or TLS to
 * scan, so they are no thread of the check's.  Read from field 9 (flags)
 * of its stat file. */
static bool io_worker(int fd, const char *task) {
  char buf[512];
  if (hci_task_file(fd, task, "stat", buf, sizeof buf) <= 0) return false;
  const char *p = hci_stat_field(buf, 9);
  if (!p) return false;
  unsigned long flags = 0;
  while (*p >= '0' && *p <= '9') flags = flags * 10 + (unsigned long)(*p++ - '0');
  return (flags & (TASK_IO_WORKER | TASK_USER_WORKER)) != 0;
}

/* Whether the task list must be translated: a /proc mounted in another pid
 * namespace than the process's own (`unshare --pid --fork` without
 * --mount-proc, a container that kept the host's /proc) names our threads by
 * that namespace's numbers, which ptrace, tgkill and gettid() do not know:
 * taken as they are, every thread looked gone (ESRCH), none was stopped or
 * scanned and the check reported their objects as leaks.  Set by
 * hci_tasks_probe_ns on the checking thread, read by the helper. */
static bool tasks_translate;
HC_PRIVATE_STATE(tasks_translate);

/* The last number of the NSpid line of task `name` of the list fd (the tid
 * in the innermost namespace, the process's own), 0 when there is no such
 * line (Linux < 4.1), -1 when the file cannot be read. */
static int nspid_of(int fd, const char *name) {
  char buf[2048];
  if (hci_task_file(fd, name, "status", buf, sizeof buf) <= 0) return -1;
  const char *l = strstr(buf, "\nNSpid:");
  if (!l) return 0;
  int last = 0;
  for (const char *c = l + 7; *c && *c != '\n'; c++) {
    if (*c < '0' || *c > '9') continue;
    last = 0;
    while (*c >= '0' && *c <= '9') last = last * 10 + (*c++ - '0');
    c--;
  }
  return last;
}

int hci_tasks_probe_ns(int fd, int self) {
  tasks_translate = false;
  if (fd < 0) return 0;
  char name[16];
  hci_snprintf(name, sizeof name, "%d", self);
  int ns = nspid_of(fd, name);
  if (ns == self || ns == 0) return 0; /* ours, or no NSpid to tell (a kernel before 4.1) */
  /* No entry of that number, or another thread's, or unreadable: is the
   * calling thread in the list under another number? */
  if (ns < 0 && RAW(SYS_faccessat, fd, name, F_OK, 0) == 0) return 0; /* it is there; its status unreadable (EMFILE) */
  tasks_translate = true;
  return 1;
}

/* One entry of hci_tasks_read's walk (hci_os_dir_numbers). */
struct tasks_walk {
  int fd, count;
  void (*fn)(void *, int);
  void *ctx;
};

static int tasks_entry(void *arg, int tid, const char *name) {
  struct tasks_walk *w = arg;
  if (tid <= 0 || io_worker(w->fd, name)) return 0;
  if (tasks_translate) {
    tid = nspid_of(w->fd, name);
    if (tid == -1 && RAW(SYS_faccessat, w->fd, name, F_OK, 0) != 0) return 0; /* it exited meanwhile */
    if (tid <= 0) return -1; /* a thread we cannot name: the list is not whole */
  }
  w->count++;
  if (w->fn) w->fn(w->ctx, tid);
  return 0;
}

int hci_tasks_read(int fd, void (*fn)(void *, int), void *ctx) {
  struct tasks_walk w = {fd, 0, fn, ctx};
  return fd < 0 || hci_os_dir_numbers(fd, tasks_entry, &w) != 0 ? -1 : w.count;
}

/* ---------------------------------------------------------------- the helper */

static hci_thread_t *slot_of(int tid) {
  hci_world_t *w = job.w;
  for (int i = 1; i < w->nthreads; i++)
    if (w->threads[i].tid == tid) return &w->threads[i];
  return NULL;
}

/* The tids of the slots (from 1 on), hashed, for seize_fn's "seen
 * already?" at each of the thousands of tids a listing gives: a look at
 * every slot made the stop quadratic in the threads (with the reaping
 * loop's and the kernel's walk of every tracee at each wait4(-1): 11 s to
 * stop 16 000 threads).  Open addressing, 0 empty, at most half full; in
 * hci_os_map's memory, the helper's alone.  v NULL: no memory, a walk of
 * the slots instead. */
static struct {
  int *v;
  size_t cap;
} tids;

static size_t tid_hash(int tid, size_t cap) { return ((uint32_t)tid * 2654435761u) & (cap - 1); }

static void tid_put(int tid) {
  size_t i = tid_hash(tid, tids.cap);
  while (tids.v[i] && tids.v[i] != tid) i = (i + 1) & (tids.cap - 1);
  tids.v[i] = tid;
}

static void tids_free(void) {
  if (tids.v) hci_os_unmap(tids.v, tids.cap * sizeof(int));
  tids.v = NULL;
  tids.cap = 0;
}

/* Room for n tids: a table twice as big, refilled from the slots. */
static void tids_fit(int n) {
  if (tids.v && (size_t)n * 2 <= tids.cap) return;
  size_t cap = 1024;
  while (cap < (size_t)n * 4) cap *= 2;
  tids_free();
  tids.v = hci_os_map(cap * sizeof(int));
  if (!tids.v) return;
  tids.cap = cap;
  for (int i = 1; i < job.w->nthreads; i++) tid_put(job.w->threads[i].tid);
}

static bool tid_known(int tid) {
  if (!tids.v) return slot_of(tid) != NULL;
  for (size_t i = tid_hash(tid, tids.cap); tids.v[i]; i = (i + 1) & (tids.cap - 1))
    if (tids.v[i] == tid) return true;
  return false;
}

/* Grows the slot array (the checking thread is waiting in a raw futex
 * call: hci_os_map's save and restore of errno in its TLS races nothing). */
static bool helper_grow(int need) {
  hci_world_t *w = job.w;
  int ncap = w->cap * 2;
  while (ncap < need) ncap *= 2;
  hci_thread_t *p = hci_os_map((size_t)ncap * sizeof(hci_thread_t));
  if (!p) return false;
  memcpy(p, w->threads, (size_t)w->nthreads * sizeof(hci_thread_t));
  hci_os_unmap(w->threads, (size_t)w->cap * sizeof(hci_thread_t));
  w->threads = p;
  w->cap = ncap;
  return true;
}

static void seize_fn(void *ctx, int tid) {
  int *fresh = ctx;
  hci_world_t *w = job.w;
  if (tid == job.self || tid_known(tid)) return;
  if (w->nthreads == w->cap && !helper_grow(w->nthreads + 1)) {
    job.list_failed = true;
    return;
  }
  hci_thread_t *t = &w->threads[w->nthreads++];
  memset(t, 0, sizeof *t);
  t->tid = tid;
  tids_fit(w->nthreads);
  if (tids.v) tid_put(tid);
  (*fresh)++;
  long r = RAW(SYS_ptrace, PTRACE_SEIZE, tid, 0, 0);
  if (r == 0) {
    t->traced = true;
    r = RAW(SYS_ptrace, PTRACE_INTERRUPT, tid, 0, 0);
    atomic_store(&t->state, HCI_T_SIGNALLED); /* an exit is reported by wait4 too */
    return;
  }
  if (r == -EPERM) {
    t->refused = true;
    job.refused++;
  }
  atomic_store(&t->state, r == -ESRCH ? HCI_T_EXITED : HCI_T_NOT_STOPPED);
}

#if defined(__x86_64__)
/* The kernel's "restart unless a handler runs" code (include/linux/errno.h). */
#define HC_ERESTARTNOHAND 514

/* Some waits answer any stop with EINTR instead of a restart, our
 * PTRACE_INTERRUPT included (signal(7): "interruption by stop signals"):
 * epoll_wait, epoll_pwait(2), semop, semtimedop, rt_sigtimedwait (sigwaitinfo,
 * sigtimedwait), io_getevents, io_uring_enter's wait for completions.
 * Where such a wait has no timeout, the thread
 * stopped at our interrupt with EINTR in rax gets -ERESTARTNOHAND there
 * instead: on resume the kernel restarts the call when no handler runs, and
 * still returns EINTR when a signal of the program's is delivered then - what
 * these calls do for a signal.  A wait with a timeout cannot just restart:
 * it would begin its whole timeout again (checks every 100 ms would keep a
 * 1 s wait from ever timing out); one made through libc's function restarts
 * with the time it has left (timed_waits.c, hci_timed_restart), the others
 * keep their EINTR.  (A program's own stop, SIGSTOP,
 * is left as the kernel made it: only our interrupt's stop is changed.) */
/* io_uring_enter waiting for completions with no timeout: none given, or
 * none in its extended argument (struct io_uring_getevents_arg, ts at
 * offset 16).  Its EINTR says the call submitted nothing (one that
 * submitted returns the count), so a restart submits nothing twice. */
static bool io_uring_untimed(const struct user_regs_struct *g) {
  unsigned flags = (unsigned)g->r10;
  if (!(flags & HCI_IORING_GETEVENTS) || (flags & ~HCI_IORING_KNOWN)) return false;
  if (!(flags & HCI_IORING_EXT_ARG)) return true;
  uint64_t ts = 1;
  if (g->r9 < 24 || hci_os_read(&ts, (uintptr_t)g->r8 + 16, sizeof ts) != sizeof ts) return false;
  return ts == 0;
}

static bool untimed_wait(const struct user_regs_struct *g) {
  switch (g->orig_rax) {
#ifdef SYS_io_uring_enter
  case SYS_io_uring_enter: return io_uring_untimed(g);
#endif
  case SYS_epoll_wait:
  case SYS_epoll_pwait: return (int)g->r10 < 0;
#ifdef SYS_epoll_pwait2
  case SYS_epoll_pwait2: return g->r10 == 0;
#endif
  case SYS_semop: return true;
  case SYS_semtimedop: return g->r10 == 0;
  case SYS_rt_sigtimedwait: return g->rdx == 0;
  case SYS_io_getevents: return g->r8 == 0;
  }
  return false;
}
#endif

static void read_regs(hci_thread_t *t, bool our_interrupt) {
  int n = 0;
#if defined(__x86_64__)
  struct user_regs_struct g;
  struct iovec io = {&g, sizeof g};
  if (RAW(SYS_ptrace, PTRACE_GETREGSET, t->tid, NT_PRSTATUS, &io) == 0) {
    t->sp = g.rsp;
    t->pc = g.rip;
    t->tp = g.fs_base;
    const unsigned long long *v = (const unsigned long long *)&g;
    for (size_t i = 0; i < sizeof g / sizeof *v && n < HCI_MAX_REGS; i++) t->regs[n++] = (uintptr_t)v[i];
    if (our_interrupt && (long long)g.rax == -EINTR &&
        (untimed_wait(&g) ? (g.rax = (unsigned long long)-HC_ERESTARTNOHAND, true) : hci_timed_restart(t->tid, &g))) {
      io.iov_base = &g;
      io.iov_len = sizeof g;
      RAW(SYS_ptrace, PTRACE_SETREGSET, t->tid, NT_PRSTATUS, &io);
    }
  }
  char xs[4096] __attribute__((aligned(64)));
  io.iov_base = xs;
  io.iov_len = sizeof xs;
  if (RAW(SYS_ptrace, PTRACE_GETREGSET, t->tid, NT_X86_XSTATE, &io) == 0 && io.iov_len >= 512) {
    for (int i = 0; i < 16 && n + 2 <= HCI_MAX_REGS; i++, n += 2) memcpy(&t->regs[n], xs + 160 + 16 * i, 16);
    n = hci_xsave_copy(t->regs, n, xs, io.iov_len);
  } else {
    struct user_fpregs_struct f;
    io.iov_base = &f;
    io.iov_len = sizeof f;
    if (RAW(SYS_ptrace, PTRACE_GETREGSET, t->tid, NT_PRFPREG, &io) == 0)
      for (int i = 0; i < 16 && n + 2 <= HCI_MAX_REGS; i++, n += 2) memcpy(&t->regs[n], &f.xmm_space[4 * i], 16);
  }
#elif defined(__aarch64__)
  (void)our_interrupt; /* arm64's restart needs orig_x0, which NT_PRSTATUS does not give */
  struct user_regs_struct g;
  struct iovec io = {&g, sizeof g};
  if (RAW(SYS_ptrace, PTRACE_GETREGSET, t->tid, NT_PRSTATUS, &io) == 0) {
    t->sp = g.sp;
    t->pc = g.pc;
    for (int i = 0; i < 31; i++) t->regs[n++] = (uintptr_t)g.regs[i];
    t->regs[n++] = (uintptr_t)g.sp;
    t->regs[n++] = (uintptr_t)g.pc;
  }
  struct user_fpsimd_struct f;
  io.iov_base = &f;
  io.iov_len = sizeof f;
  if (RAW(SYS_ptrace, PTRACE_GETREGSET, t->tid, NT_PRFPREG, &io) == 0)
    for (int i = 0; i < 32 && n + 2 <= HCI_MAX_REGS; i++, n += 2) memcpy(&t->regs[n], &f.vregs[i], 16);
  uint64_t tls = 0;
  io.iov_base = &tls;
  io.iov_len = sizeof tls;
  if (RAW(SYS_ptrace, PTRACE_GETREGSET, t->tid, NT_ARM_TLS, &io) == 0) t->tp = (uintptr_t)tls;
#endif
  t->nregs = n;
}

/* Reaps stop and exit reports until every thread from `from` on answered. */
/* Whether a thread not stopped yet waits for a vfork child (its stop
 * comes when the child has exec'd: hci_task_in_vfork). */
static bool vfork_pending(int from) {
  for (int i = from; i < job.w->nthreads; i++) {
    const hci_thread_t *t = &job.w->threads[i];
    if (atomic_load(&t->state) == HCI_T_SIGNALLED && hci_task_in_vfork(job.taskfd, t->tid, t->tid == job.pid))
      return true;
  }
  return false;
}

/* Reaps the report of slot t, signalled, if it has one: its stop (its
 * registers read) or its exit.  One wait4 for its tid, which the kernel
 * answers without going through every tracee as a wait4(-1) does. */
/* A stop report st of t: true for a signal-delivery stop (event 0), whose
 * signal is kept (the first one: the others stay queued) and re-injected
 * at detach; false for an event stop (our interrupt, a group stop). */
static bool keep_signal(hci_thread_t *t, int st) {
  if ((st >> 16) != 0) return false;
  if (!t->inject_sig) t->inject_sig = WSTOPSIG(st);
  return true;
}

static bool reap(hci_thread_t *t) {
  int st = 0;
  long r;
  while ((r = RAW(SYS_wait4, t->tid, &st, __WALL | WNOHANG, 0)) == -EINTR) {
  }
  if (r == 0) return false;
  if (r < 0 || WIFEXITED(st) || WIFSIGNALED(st)) { /* ECHILD: gone, reaped */
    t->traced = false;
    atomic_store(&t->state, HCI_T_EXITED);
  } else if (WIFSTOPPED(st)) {
    /* PTRACE_EVENT_STOP: our interrupt, or a group-stop (kept on detach);
     * event 0: a signal-delivery-stop, its signal is re-injected. */
    keep_signal(t, st);
    read_regs(t, (st >> 16) == PTRACE_EVENT_STOP && WSTOPSIG(st) == SIGTRAP);
    atomic_store(&t->state, HCI_T_STOPPED);
  } else {
    return false; /* a continue report: not ours to see */
  }
  return true;
}

/* Collects the stops of slots from.. up to the deadline, a pass over the
 * signalled ones at a time; past it, while a thread waits for a vfork
 * child, a timeout more from each time one is seen there, up to
 * HCI_VFORK_WAIT_FACTOR timeouts in all. */
static void collect_stops(int from, long long deadline) {
  long long poll = POLL_MIN_NS, vfork_deadline = deadline + (HCI_VFORK_WAIT_FACTOR - 1) * job.timeout_ns;
  int pending = 0;
  for (int i = from; i < job.w->nthreads; i++) pending += atomic_load(&job.w->threads[i].state) == HCI_T_SIGNALLED;
  while (pending > 0) {
    bool got = false;
    for (int i = from; i < job.w->nthreads; i++) {
      hci_thread_t *t = &job.w->threads[i];
      if (atomic_load(&t->state) == HCI_T_SIGNALLED && reap(t)) {
        pending--;
        got = true;
      }
    }
    if (got) {
      poll = POLL_MIN_NS;
      continue;
    }
    long long now = hci_raw_now_ns();
    if (now >= deadline) {
      if (now >= vfork_deadline || !vfork_pending(from)) break;
      deadline = now + job.timeout_ns < vfork_deadline ? now + job.timeout_ns : vfork_deadline;
    }
    nap(poll < deadline - now ? poll : deadline - now);
    if (poll < POLL_MAX_NS) poll *= 2;
  }
  for (int i = from; i < job.w->nthreads; i++) {
    int expect = HCI_T_SIGNALLED;
    atomic_compare_exchange_strong(&job.w->threads[i].state, &expect, HCI_T_NOT_STOPPED);
  }
}

/* Job control while the world is stopped.  A SIGSTOP (kill -STOP, a
 * shell's suspend, a supervisor pausing a job) stops the checking thread,
 * and the stop is complete, and told to the parent (waitpid WUNTRACED),
 * only when every thread has taken part in it; a thread in a trace stop
 * takes part only when its tracer lets it go.  Held in the stop of our
 * interrupt, ours never did: the parent waited for good, and the check
 * with it, stopped (adv30).  So every thread stopped at an event stop (our
 * interrupt; a group stop) is put in PTRACE_LISTEN: still stopped, it runs
 * no code of the program, but a group stop, or its end at SIGCONT, wakes
 * it into a new event stop, taking part as a stopped process's thread
 * does.  That stop is reported to us (reap_reports) and the thread goes
 * back to listening.  A thread in a signal-delivery stop cannot listen
 * (its signal is re-injected at detach); it takes part after the check. */
static void listen_to(hci_thread_t *t) {
  t->listening = t->traced && RAW(SYS_ptrace, PTRACE_LISTEN, t->tid, 0, 0) == 0;
}

static void listen_all(void) {
  for (int i = 1; i < job.w->nthreads; i++) {
    hci_thread_t *t = &job.w->threads[i];
    if (atomic_load(&t->state) == HCI_T_STOPPED && !t->inject_sig) listen_to(t);
  }
}

/* A listening thread answers no ptrace request but PTRACE_INTERRUPT, which
 * wakes it into an event stop: taken, and reaped, before its detach.
 * False when no stop came (it stays traced: detached by the kernel when
 * the helper ends). */
static bool unlisten(hci_thread_t *t) {
  if (!t->listening) return true;
  t->listening = false;
  if (RAW(SYS_ptrace, PTRACE_INTERRUPT, t->tid, 0, 0) != 0) return false;
  long long poll = POLL_MIN_NS, deadline = hci_raw_now_ns() + 1000000000ll;
  for (;;) {
    int st = 0;
    long r = RAW(SYS_wait4, t->tid, &st, __WALL | WNOHANG, 0);
    if (r == t->tid) {
      if (WIFSTOPPED(st)) {
        keep_signal(t, st);
        return true;
      }
      t->traced = false; /* it ended */
      return false;
    }
    if ((r < 0 && r != -EINTR) || hci_raw_now_ns() >= deadline) return false;
    nap(poll);
    if (poll < POLL_MAX_NS) poll *= 2;
  }
}

static void detach_all(void) {
  hci_world_t *w = job.w;
  for (int i = 1; i < w->nthreads; i++) {
    hci_thread_t *t = &w->threads[i];
    if (!t->traced || !unlisten(t)) continue;
    RAW(SYS_ptrace, PTRACE_DETACH, t->tid, 0, t->inject_sig);
    t->traced = false;
  }
}

/* The reports of the tracees while the world is stopped: a listening
 * thread's new event stop (a group stop began or ended: it listens again),
 * a late stop of a thread not stopped by the deadline (a signal-delivery
 * stop's signal is kept, re-injected at detach), an exit.  True when a
 * stopped thread ended: it was killed with the whole process (_exit at the
 * exit check, SIGKILL). */
static bool reap_reports(void) {
  int st = 0;
  long r;
  bool ended = false;
  while ((r = RAW(SYS_wait4, -1, &st, __WALL | WNOHANG, 0)) > 0) {
    hci_thread_t *t = slot_of((int)r);
    if (!t) continue;
    if (WIFSTOPPED(st)) {
      t->listening = false;
      if (!keep_signal(t, st) && !t->inject_sig) listen_to(t);
      continue;
    }
    ended |= atomic_load(&t->state) == HCI_T_STOPPED;
    t->traced = t->listening = false;
  }
  return ended;
}

/* Orphan shape: whether the process is ending (or gone), so that the
 * helper, which no PR_SET_PDEATHSIG ends, does not outlive it: a stopped
 * thread ended, or the checking thread is gone (ESRCH). */
static bool process_ending(void) {
  return reap_reports() || RAW(SYS_tgkill, job.pid, job.self, 0, 0) == -ESRCH;
}

/* Waits while the phase is `phase`; false when the process is ending.
 * While the world is stopped, the tracees' reports are taken every poll
 * (job control, above), in the direct shape too. */
static bool helper_wait(int phase) {
  bool stopped = phase == PH_STOPPED;
  while (atomic_load(&job.phase) == phase) {
    futex_wait(&job.phase, phase, job.orphan || stopped ? ORPHAN_POLL_NS : 0);
    if (atomic_load(&job.phase) != phase) break;
    if (job.orphan && process_ending()) return false;
    if (!job.orphan && stopped) reap_reports();
  }
  return true;
}

static int helper_main(void *arg) {
  (void)arg;
  /* The orphan too dies with its parent until the world is stopped: an
   * exec by another thread (not through libc: exec_watch.c) kills the
   * checking thread, then the parent, then this helper - which was blocked
   * for good in PTRACE_SEIZE of the exec'ing thread (exec holds the lock
   * seize takes, and waits for the threads this helper traces to be
   * released: the process hung). */
  RAW(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0);
  if (RAW(SYS_getppid, 0, 0, 0, 0) != (job.orphan ? par.pid : job.pid)) return 0; /* its parent is gone already */
  if (!helper_wait(PH_WAIT)) return 0;
  if (atomic_load(&job.phase) == PH_GO) {
    long long deadline = hci_raw_now_ns() + job.timeout_ns;
    for (int pass = 0; pass < MAX_PASSES && !job.list_failed; pass++) {
      int fresh = 0, from = job.w->nthreads;
      if (hci_tasks_read(job.taskfd, seize_fn, &fresh) < 0) {
        job.list_failed = true;
        break;
      }
      if (fresh == 0) {
        job.settled = true;
        break;
      }
      collect_stops(from, deadline);
    }
    /* An orphan may outlive the process by a poll (or longer, when the
     * checking thread is a zombie leader nobody reaped yet): it keeps no
     * descriptor of ours open (a pipe's reader would wait for its end of
     * file), in a table of its own, emptied. */
    if (job.orphan && RAW(SYS_unshare, CLONE_FILES, 0, 0, 0) == 0) RAW(SYS_close_range, 0, ~0u, 0, 0);
    if (job.orphan) RAW(SYS_prctl, PR_SET_PDEATHSIG, 0, 0, 0); /* its parent ends now, on purpose */
    listen_all();
    atomic_store(&job.phase, PH_STOPPED);
    futex_wake(&job.phase);
    if (!helper_wait(PH_STOPPED)) return 0; /* the kernel detaches the rest */
    if (atomic_load(&job.phase) == PH_ENDING) {
      /* The process ends with the threads stopped (hci_ptrace_ending): the
       * first killed thread's report ends the wait at once, where the poll
       * made every leaking exit 20 ms longer. */
      for (;;) {
        int st = 0;
        long r = RAW(SYS_wait4, -1, &st, __WALL, 0);
        if (r == -EINTR) continue;
        if (r < 0 || WIFEXITED(st) || WIFSIGNALED(st)) return 0;
      }
    }
  }
  detach_all();
  tids_free();
  if (job.orphan) job.adopter = (int)RAW(SYS_getppid, 0, 0, 0, 0);
  return 0;
}

/* The orphan shape's parent: clones what it is asked until it is told to
 * end (PR_SET_PDEATHSIG: or until the checking thread ends).  A tid word
 * is written by the kernel before either task runs on (CLONE_PARENT_SETTID)
 * and cleared when that task ends.  Every signal blocked (inherited), so
 * are its tasks'. */
static int parent_main(void *arg) {
  (void)arg;
  RAW(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0);
  if (RAW(SYS_getppid, 0, 0, 0, 0) != par.owner) return 0;
  for (;;) {
    int r;
    while ((r = atomic_load(&par.req)) == PQ_NONE) futex_wait(&par.req, PQ_NONE, 0);
    if (r == PQ_END) return 0;
    int saved = errno; /* the checking thread's (shared TLS), which waits in raw calls */
    int tid = clone(par.fn, par.top, par.flags, NULL, par.tidp, NULL, par.tidp);
    int e = errno;
    errno = saved;
    atomic_store(&par.req, PQ_NONE);
    atomic_store(&par.ans, tid > 0 ? tid : -(e > 0 ? e : EAGAIN));
    futex_wake(&par.ans);
  }
}

/* ---------------------------------------------------------------- checking thread */

/* Waits for the helper to leave `phase`; false when it died. */
static bool wait_helper(int phase) {
  while (atomic_load(&job.phase) == phase) {
    futex_wait(&job.phase, phase, 50000000ll);
    if (atomic_load(&job.phase) != phase) break;
    int st;
    if (job.orphan ? atomic_load(&job.helper_tid) == 0
                   : RAW(SYS_wait4, job.helper, &st, __WALL | WNOHANG, 0) == job.helper) {
      job.helper = 0;
      return false;
    }
  }
  return true;
}

/* Waits for the helper's end (the direct shape reaps it) and unmaps its
 * stack. */
static void reap_helper(void) {
  if (job.orphan) {
    int v;
    while ((v = atomic_load(&job.helper_tid)) != 0) {
      struct timespec ts = {0, 20000000};
      RAW(SYS_futex, &job.helper_tid, FUTEX_WAIT, v, &ts); /* the kernel's wake is not private */
    }
  } else if (job.helper > 0) {
    int st;
    while (RAW(SYS_wait4, job.helper, &st, __WALL, 0) == -EINTR) {
    }
  }
  job.helper = 0;
  if (job.stack) hci_os_unmap(job.stack, HELPER_STACK);
  job.stack = NULL;
}

void hci_ptrace_end_parent(void) {
  if (par.pid <= 0) return;
  if (par.owner != (int)RAW(SYS_getpid, 0, 0, 0, 0)) { /* a fork child's copy: its parent's task */
    par.pid = 0;
    return;
  }
  atomic_store(&par.req, PQ_END);
  futex_wake(&par.req);
  int st;
  while (RAW(SYS_wait4, par.pid, &st, __WALL, 0) == -EINTR) {
  }
  par.pid = 0;
  hci_exec_release(); /* taken when it was made */
}

/* HEAP_CHECK_STOP_HELPER, read once: 1 orphan, 0 child, 2 auto (the
 * default: an orphan when its adopter reaps, see adopter.c), -1 not read. */
static int stop_helper_mode = -1;
/* Auto: whether the adopter reaps (1), never does (0) or was not known yet
 * (-1: asked again at the next check). */
static int adopter_ok = -1;
HC_PRIVATE_STATE(stop_helper_mode);
HC_PRIVATE_STATE(adopter_ok);

/* Whether the helper is to be an orphan (see "Whose child it is").  Not
 * when it would come back to this process (a child subreaper, or its pid
 * namespace's init), nor under a finite RLIMIT_NPROC of a non-root user (an
 * orphan counts against the user's processes until init reaps it, which a
 * lazy init does late: the program's own fork could fail), nor with
 * HEAP_CHECK_STOP_HELPER=child, nor by default when the namespace's init
 * shows no sign of reaping (adopter.c; unknown: the same): an init that
 * never reaps would keep a zombie a check. */
static bool orphan_shape(int pid) {
  if (stop_helper_mode < 0) {
    const char *m = hci_opt_str(HCO_HEAP_CHECK_STOP_HELPER);
    stop_helper_mode = !m || !*m || !strcmp(m, "auto") ? 2 : !strcmp(m, "orphan") ? 1 : !strcmp(m, "child") ? 0 : 2;
    if (m && *m && strcmp(m, "child") && strcmp(m, "orphan") && strcmp(m, "auto"))
      hci_warn("HEAP_CHECK_STOP_HELPER=%s is neither auto, orphan nor child; using auto", m);
  }
  int sub = 0;
  struct rlimit nproc;
  if (!stop_helper_mode || pid == 1 || RAW(SYS_prctl, PR_GET_CHILD_SUBREAPER, &sub, 0, 0) != 0 || sub) return false;
  if (RAW(SYS_getuid, 0, 0, 0, 0) != 0 &&
      (RAW(SYS_prlimit64, 0, RLIMIT_NPROC, NULL, &nproc) != 0 || nproc.rlim_cur != RLIM_INFINITY))
    return false;
  if (stop_helper_mode == 2 && adopter_ok < 0) adopter_ok = hci_adopter_reaps(1); /* -1: asked again next time */
  return stop_helper_mode == 1 || adopter_ok == 1;
}

/* Auto, after an orphan helper ended: the task that adopted it (a child
 * subreaper above us instead of init) judged too; one that never reaps
 * keeps the helper our child from now on. */
static void judge_adopter(int adopter) {
  if (stop_helper_mode != 2 || adopter <= 1 || adopter_ok != 1) return;
  if (hci_adopter_reaps(adopter) == 0) adopter_ok = 0;
}

int hci_parent_clone(int (*fn)(void *), void *top, int flags, int *tidp) {
  int pid = (int)RAW(SYS_getpid, 0, 0, 0, 0);
  if (!orphan_shape(pid)) return 0;
  if (par.pid > 0 && par.owner != pid) par.pid = 0; /* a fork child's copy: its parent's task */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int r = 0;
  if (par.pid <= 0) {
    if (!par.stack) par.stack = hci_os_map(PARENT_STACK);
    par.owner = pid;
    atomic_store(&par.req, PQ_NONE);
    hci_exec_hold(); /* until the parent is reaped: an exec meanwhile left it a zombie of the new image */
    int tid = par.stack ? clone(parent_main, (char *)par.stack + PARENT_STACK,
                                CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_UNTRACED, NULL)
                        : -1;
    if (tid > 0) par.pid = tid;
    else r = -(par.stack && errno > 0 ? errno : ENOMEM);
    if (tid <= 0) hci_exec_release();
  }
  if (!r) {
    par.fn = fn;
    par.top = top;
    par.flags = flags;
    par.tidp = tidp;
    atomic_store(&par.ans, 0);
    atomic_store(&par.req, PQ_CLONE);
    futex_wake(&par.req);
    int st;
    while ((r = atomic_load(&par.ans)) == 0) {
      futex_wait(&par.ans, 0, 50000000ll);
      if (atomic_load(&par.ans) == 0 && RAW(SYS_wait4, par.pid, &st, __WALL | WNOHANG, 0) == par.pid) {
        par.pid = 0; /* a filter killed it at its clone: reaped while the world ran */
        hci_exec_release();
        r = -EAGAIN;
        break;
      }
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return r;
}

/* Makes the helper: through the parent (orphan shape), or itself (direct).
 * 0, or the failing clone's errno. */
static int make_helper(void) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int err = 0;
  if (!job.orphan) {
    int tid = clone(helper_main, (char *)job.stack + HELPER_STACK, CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_UNTRACED,
                    NULL);
    if (tid > 0) job.helper = tid;
    else err = errno;
  } else {
    int tid = hci_parent_clone(helper_main, (char *)job.stack + HELPER_STACK,
                               CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_UNTRACED | CLONE_PARENT_SETTID |
                                   CLONE_CHILD_CLEARTID,
                               (int *)&job.helper_tid);
    if (tid > 0) job.helper = tid;
    else err = tid < 0 ? -tid : EAGAIN;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return err;
}

/* After unshare(CLONE_NEWPID) the calling thread's children go into a new
 * pid namespace, the first of them as its init: the helper would see none
 * of our threads (each looked gone), and when it exited the namespace would
 * be dead, so the program's own next fork failed with ENOMEM (it would have
 * been that init).  Both links name a namespace by inode (Linux 4.12+); the
 * second one cannot be followed while that namespace has no init yet (the
 * link itself is there).  Without them the helper is made as before. */
static bool children_elsewhere(void) {
  static const char kids[] = "/proc/thread-self/ns/pid_for_children";
  struct stat a, b;
  if (stat("/proc/thread-self/ns/pid", &a) != 0 || lstat(kids, &b) != 0) return false;
  if (stat(kids, &b) != 0) return errno == ENOENT;
  return a.st_ino != b.st_ino || a.st_dev != b.st_dev;
}

int hci_ptrace_stop(hci_world_t *w, int pid, int taskfd, int timeout_ms, bool yama, const char **why) {
  memset(&job, 0, sizeof job);
  job.pid = pid;
  job.self = w->threads[0].tid;
  job.taskfd = taskfd;
  job.timeout_ns = (long long)timeout_ms * 1000000ll;
  job.w = w;
  if (children_elsewhere()) {
    *why = "this thread unshared its pid namespace (the helper task would be the new namespace's first process)";
    return -1;
  }
  job.orphan = orphan_shape(pid);
  job.stack = hci_os_map(HELPER_STACK);
  if (!job.stack) return -2; /* no memory now: signals for this stop only */
  int err = make_helper();
  if (err) {
    /* A helper its parent made before dying leaves at RELEASE (it has
     * traced nothing); then its stack is unmapped. */
    atomic_store(&job.phase, PH_RELEASE);
    futex_wake(&job.phase);
    reap_helper();
    if (err == ENOMEM || err == EAGAIN) return -2;
    *why = "cannot create the helper task (clone failed)";
    return -1;
  }
  int tid = job.helper;
  if (yama) RAW(SYS_prctl, PR_SET_PTRACER, tid, 0, 0);
  atomic_store(&job.phase, PH_GO);
  futex_wake(&job.phase);
  if (!wait_helper(PH_GO)) {
    *why = "the helper task died";
    reap_helper();
    w->nthreads = 1;
    return -1;
  }
  if (job.refused) {
    /* A zombie group leader refuses too: that one is simply gone. */
    int real = 0;
    for (int i = 1; i < w->nthreads; i++) {
      hci_thread_t *t = &w->threads[i];
      if (!t->refused) continue;
      int z = hci_task_zombie(taskfd, t->tid);
      if (z == 1) atomic_store(&t->state, HCI_T_EXITED);
      else real++;
    }
    if (real) {
      hci_ptrace_resume(w);
      w->nthreads = 1;
      *why = "ptrace is refused (another tracer, seccomp, Yama or a non-dumpable process)";
      return -1;
    }
  }
  w->incomplete = !job.settled;
  hci_ptrace_end_parent(); /* every thread is stopped (or the check is incomplete): none can reap it first */
  return 0;
}

/* Whether the task that adopts our children when the process ends (init,
 * or a subreaper judged after it adopted a helper) never reaps. */
static bool adopter_never_reaps(void) {
  if (adopter_ok < 0) adopter_ok = hci_adopter_reaps(1);
  return adopter_ok == 0 && RAW(SYS_getpid, 0, 0, 0, 0) != 1; /* as init, the namespace's end reaps all */
}

void hci_ptrace_ending(void) {
  if (job.helper <= 0 || atomic_load(&job.phase) != PH_STOPPED) return;
  if (!job.orphan) {
    /* Our child would outlive the process (it waits for the threads'
     * end) and go to the adopter as a zombie for good when that one never
     * reaps: the threads are let go just before _exit instead, as libc's
     * exit has them run, and the helper is reaped here. */
    if (adopter_never_reaps()) hci_ptrace_resume(NULL);
    return;
  }
  atomic_store(&job.phase, PH_ENDING);
  futex_wake(&job.phase);
}

void hci_ptrace_resume(hci_world_t *w) {
  (void)w;
  if (job.helper <= 0) return;
  atomic_store(&job.phase, PH_RELEASE);
  futex_wake(&job.phase);
  bool orphan = job.orphan && job.helper > 0;
  reap_helper();
  if (orphan) judge_adopter(job.adopter);
}

/* timed_waits.c - a timed wait interrupted by the ptrace stop goes on with
 * the time it had left, instead of failing with EINTR.
 *
 * epoll_wait, epoll_pwait, epoll_pwait2, semtimedop and rt_sigtimedwait
 * answer any stop with EINTR, our PTRACE_INTERRUPT included (signal(7)).
 * Without a timeout the helper makes them restart (stop_ptrace.c,
 * untimed_wait); with one, a restart would begin the whole timeout again,
 * and only the caller knows when its wait began.  So libc's functions are
 * interposed: in checker mode each notes, in a record of its thread's, the
 * call and its deadline (CLOCK_MONOTONIC) before calling libc's own; the
 * helper, finding the thread stopped at our interrupt with EINTR from that
 * call, puts the time left in the timeout argument (a register for the
 * epoll_wait pair, else a timespec in the record) and -ERESTARTNOHAND in
 * rax: on resume the kernel restarts the call with that time when no
 * handler runs, and still returns EINTR when a signal of the program's is
 * delivered then, as it would have.  The helper reaches the record through
 * the thread pointer it reads (initial-exec TLS: one offset for every
 * thread) with process_vm_readv/writev, which fail rather than fault on a
 * thread pointer the program set itself.  x86-64 only, as untimed_wait.
 *
 * Not covered: these calls made with syscall() or inline, recv/send with
 * SO_RCVTIMEO/SO_SNDTIMEO, io_getevents (no glibc function); a static link
 * reaches libc.a's __semtimedop and __sigtimedwait but not its epoll
 * functions (they have no other name): there the system call is made here,
 * with asynchronous cancellation around it, as glibc before 2.34 did.
 *
 * Locks: none.  No malloc.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/ucontext.h>
#include <sys/sem.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <time.h>
#include <unistd.h>

#include "hc_checker.h"

typedef hci_timed_rec_t timed_rec_t;
static HC_TLS timed_rec_t rec;

/* A wait in a signal handler that interrupted another keeps the outer
 * record: saved and put back.  saved is a local of the wrapper that calls
 * libc's function (or makes the call itself), so its address is above the
 * frames the system call is made from: the fallback's handler takes a
 * stack pointer below it, and within 1 KiB, for this wait.  (A local of
 * this function's was not: hci_timed_sigwait_begin is called, not inlined,
 * and a static link's raw call sat above its frame - one EINTR in about
 * 100 runs of test_hostile's signal-fallback sigtimedwait.) */
static inline __attribute__((always_inline)) bool timed_begin(long nr, int64_t timeout_ns, timed_rec_t *saved) {
  if (!hci_chk.active) return false;
  *saved = rec;
  rec.sp = (uintptr_t)saved;
  rec.deadline_ns = timeout_ns < 0 ? HCI_UNTIMED : (int64_t)hci_os_now_ns() + timeout_ns;
  rec.nargs = 0;
  rec.stack_args = 0;
  rec.loose_args = 0;
  __atomic_store_n(&rec.nr, nr, __ATOMIC_RELEASE);
  return true;
}
/* The arguments the system call gets (glibc 2.36's x86-64 mapping, or our
 * own call in a static link): the fallback's handler restarts a wait it did
 * not see begin only when the context holds exactly these. */
static void timed_args(bool on, int n, long a, long b, long c, long d, long e, long f) {
  if (!on) return;
  rec.args[0] = a, rec.args[1] = b, rec.args[2] = c, rec.args[3] = d, rec.args[4] = e, rec.args[5] = f;
  rec.nargs = n;
}
/* Arguments of glibc's call that point into its own frame (a copy of the
 * timeout it was given): the handler takes any address between the
 * context's stack pointer and the record's mark for them. */
static void timed_stack_args(bool on, unsigned mask) {
  if (on) rec.stack_args = mask;
}
/* Arguments libc computes from the object it was given (a futex word's
 * address, operation and value): not compared. */
static void timed_loose_args(bool on, unsigned mask) {
  if (on) rec.loose_args = mask;
}
static void timed_end(bool on, const timed_rec_t *saved, int err) {
  if (on) rec = *saved;
  errno = err;
}
static int64_t ts_ns(const struct timespec *ts) {
  if (!ts || ts->tv_sec < 0 || ts->tv_nsec < 0 || ts->tv_nsec >= 1000000000L) return -1;
  if (ts->tv_sec > INT64_MAX / 1000000000 - 1) return -1; /* for ever, near enough */
  return (int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec;
}

#if defined(__x86_64__)
#define HC_ERESTARTNOHAND 514
bool hci_timed_restart(int tid, struct user_regs_struct *g) {
  uintptr_t off = (uintptr_t)&rec - (uintptr_t)__builtin_thread_pointer(); /* the helper shares our thread pointer */
  if (!g->fs_base) return false;
  timed_rec_t r;
  struct iovec mine = {&r, sizeof r}, theirs = {(void *)(uintptr_t)(g->fs_base + off), sizeof r};
  if (hci_raw6(SYS_process_vm_readv, tid, (long)&mine, 1, (long)&theirs, 1, 0) != (long)sizeof r) return false;
  if (r.nr == 0 || r.nr != (long)g->orig_rax || r.deadline_ns == HCI_UNTIMED) return false;
  int64_t left = r.deadline_ns - (int64_t)hci_os_now_ns();
  if (left < 0) left = 0;
  switch (g->orig_rax) {
    case SYS_epoll_wait:
    case SYS_epoll_pwait: {
      int64_t ms = (left + 999999) / 1000000;
      g->r10 = (unsigned long long)(ms > INT32_MAX ? INT32_MAX : ms);
      break;
    }
#ifdef SYS_epoll_pwait2
    case SYS_epoll_pwait2:
#endif
    case SYS_semtimedop:
    case SYS_rt_sigtimedwait: {
      struct timespec ts = {(time_t)(left / 1000000000), (long)(left % 1000000000)};
      uintptr_t at = (uintptr_t)(g->fs_base + off + offsetof(timed_rec_t, left));
      struct iovec src = {&ts, sizeof ts}, dst = {(void *)at, sizeof ts};
      if (hci_raw6(SYS_process_vm_writev, tid, (long)&src, 1, (long)&dst, 1, 0) != (long)sizeof ts) return false;
      if (g->orig_rax == SYS_rt_sigtimedwait) g->rdx = at;
      else g->r10 = at;
      break;
    }
    default:
      return false;
  }
  g->rax = (unsigned long long)-HC_ERESTARTNOHAND;
  return true;
}
#endif

/* libc's own functions: looked up in the constructor in checker mode, on
 * first use otherwise (a process that never checks pays no lookup). */
static char name_epoll_wait[] = "epoll_wait", name_epoll_pwait[] = "epoll_pwait",
            name_epoll_pwait2[] = "epoll_pwait2", name_semtimedop[] = "semtimedop", name_poll[] = "poll",
            name_nanosleep[] = "nanosleep", name_clock_nanosleep[] = "clock_nanosleep", name_select[] = "select",
            name_pselect[] = "pselect", name_ppoll[] = "ppoll", name_usleep[] = "usleep", name_sleep[] = "sleep",
            name_pause[] = "pause", name_sigsuspend[] = "sigsuspend";
enum { F_EPOLL_WAIT, F_EPOLL_PWAIT, F_EPOLL_PWAIT2, F_SEMTIMEDOP, F_POLL, F_NANOSLEEP, F_CLOCK_NANOSLEEP, F_SELECT,
       F_PSELECT, F_PPOLL, F_USLEEP, F_SLEEP, F_PAUSE, F_SIGSUSPEND, F_N };
static void *real_fn[F_N];
HC_PRIVATE_STATE(real_fn);
static void *const self_fn[F_N] = {(void *)epoll_wait, (void *)epoll_pwait, (void *)epoll_pwait2, (void *)semtimedop,
                                   (void *)poll, (void *)nanosleep, (void *)clock_nanosleep, (void *)select,
                                   (void *)pselect, (void *)ppoll, (void *)usleep, (void *)sleep, (void *)pause,
                                   (void *)sigsuspend};
static char *const fn_name[F_N] = {name_epoll_wait, name_epoll_pwait, name_epoll_pwait2, name_semtimedop,
                                   name_poll, name_nanosleep, name_clock_nanosleep, name_select,
                                   name_pselect, name_ppoll, name_usleep, name_sleep, name_pause, name_sigsuspend};
/* libc.a's other names (a static link): the epoll calls, usleep, sleep
 * and pause have none. */
extern int __semtimedop(int, struct sembuf *, size_t, const struct timespec *) __attribute__((weak));
extern int __poll(struct pollfd *, nfds_t, int) __attribute__((weak));
extern int __nanosleep(const struct timespec *, struct timespec *) __attribute__((weak));
extern int __clock_nanosleep(clockid_t, int, const struct timespec *, struct timespec *) __attribute__((weak));
extern int __select(int, fd_set *, fd_set *, fd_set *, struct timeval *) __attribute__((weak));
extern int __pselect(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *)
    __attribute__((weak));
extern int __ppoll(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *) __attribute__((weak));
extern int __sigsuspend(const sigset_t *) __attribute__((weak));
static void *const static_fn[F_N] = {NULL, NULL, NULL, (void *)__semtimedop, (void *)__poll, (void *)__nanosleep,
                                     (void *)__clock_nanosleep, (void *)__select, (void *)__pselect, (void *)__ppoll,
                                     NULL, NULL, NULL, (void *)__sigsuspend};

void *hci_timed_next(void **slot, const char *name, void *self, void *fallback) {
  void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (f) return f == (void *)1 ? NULL : f;
  f = dlsym(RTLD_NEXT, name);
  if (f == self) f = NULL;
  if (!f) f = fallback;
  __atomic_store_n(slot, f ? f : (void *)1, __ATOMIC_RELEASE);
  return f;
}
static void *real(int i) { return hci_timed_next(&real_fn[i], fn_name[i], self_fn[i], static_fn[i]); }
void hci_timed_waits_resolve(void) {
  for (int i = 0; i < F_N; i++) real(i);
}

/* A static link's blocking calls (no libc function of another name to
 * call): the system call with asynchronous cancellation around it, as they
 * are cancellation points.  The kernel's result (-errno on failure). */
long hci_cancellable_syscall(long nr, long a, long b, long c, long d, long e, long f) {
  int old = PTHREAD_CANCEL_DEFERRED;
  pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
  long r = hci_raw6(nr, a, b, c, d, e, f);
  pthread_setcanceltype(old, NULL);
  return r;
}
/* The same, as libc returns it (-1 and errno on failure). */
static long cancellable(long nr, long a, long b, long c, long d, long e, long f) {
  return hci_raw_libc_result(hci_cancellable_syscall(nr, a, b, c, d, e, f));
}

typedef int (*epoll_wait_fn)(int, struct epoll_event *, int, int);
typedef int (*epoll_pwait_fn)(int, struct epoll_event *, int, int, const sigset_t *);
typedef int (*epoll_pwait2_fn)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *);
typedef int (*semtimedop_fn)(int, struct sembuf *, size_t, const struct timespec *);

hc_public __attribute__((weak)) int epoll_wait(int epfd, struct epoll_event *ev, int n, int timeout) {
  timed_rec_t saved;
  bool on = timed_begin(SYS_epoll_wait, timeout >= 0 ? (int64_t)timeout * 1000000 : -1, &saved);
  timed_args(on, 4, epfd, (long)ev, n, timeout, 0, 0);
  epoll_wait_fn f = (epoll_wait_fn)(uintptr_t)real(F_EPOLL_WAIT);
  int r = f ? f(epfd, ev, n, timeout) : (int)cancellable(SYS_epoll_wait, epfd, (long)ev, n, timeout, 0, 0);
  timed_end(on, &saved, errno);
  return r;
}

hc_public __attribute__((weak)) int epoll_pwait(int epfd, struct epoll_event *ev, int n, int timeout,
                                                const sigset_t *ss) {
  timed_rec_t saved;
  bool on = timed_begin(SYS_epoll_pwait, timeout >= 0 ? (int64_t)timeout * 1000000 : -1, &saved);
  timed_args(on, 6, epfd, (long)ev, n, timeout, (long)ss, _NSIG / 8);
  epoll_pwait_fn f = (epoll_pwait_fn)(uintptr_t)real(F_EPOLL_PWAIT);
  int r = f ? f(epfd, ev, n, timeout, ss)
            : (int)cancellable(SYS_epoll_pwait, epfd, (long)ev, n, timeout, (long)ss, _NSIG / 8);
  timed_end(on, &saved, errno);
  return r;
}

#ifdef SYS_epoll_pwait2
hc_public __attribute__((weak)) int epoll_pwait2(int epfd, struct epoll_event *ev, int n, const struct timespec *ts,
                                                 const sigset_t *ss) {
  timed_rec_t saved;
  bool on = timed_begin(SYS_epoll_pwait2, ts_ns(ts), &saved);
  timed_args(on, 6, epfd, (long)ev, n, (long)ts, (long)ss, _NSIG / 8);
  epoll_pwait2_fn f = (epoll_pwait2_fn)(uintptr_t)real(F_EPOLL_PWAIT2);
  int r = f ? f(epfd, ev, n, ts, ss)
            : (int)cancellable(SYS_epoll_pwait2, epfd, (long)ev, n, (long)ts, (long)ss, _NSIG / 8);
  timed_end(on, &saved, errno);
  return r;
}
#endif

hc_public __attribute__((weak)) int semtimedop(int id, struct sembuf *ops, size_t nops, const struct timespec *ts) {
  timed_rec_t saved;
  bool on = timed_begin(SYS_semtimedop, ts_ns(ts), &saved);
  timed_args(on, 4, id, (long)ops, (long)nops, (long)ts, 0, 0);
  semtimedop_fn f = (semtimedop_fn)(uintptr_t)real(F_SEMTIMEDOP);
  int r = f ? f(id, ops, nops, ts) : (int)hci_raw_libc_result(hci_raw6(SYS_semtimedop, id, (long)ops, (long)nops, (long)ts, 0, 0));
  timed_end(on, &saved, errno);
  return r;
}

/* poll and the sleeps restart by themselves after the ptrace stop (the
 * kernel's restart block keeps the time left); after the fallback's signal
 * they fail with EINTR, and only the caller knows when they began. */
typedef int (*poll_fn)(struct pollfd *, nfds_t, int);
typedef int (*nanosleep_fn)(const struct timespec *, struct timespec *);
typedef int (*clock_nanosleep_fn)(clockid_t, int, const struct timespec *, struct timespec *);

hc_public __attribute__((weak)) int poll(struct pollfd *fds, nfds_t n, int timeout) {
  timed_rec_t saved;
  bool on = timed_begin(SYS_poll, timeout >= 0 ? (int64_t)timeout * 1000000 : -1, &saved);
  timed_args(on, 3, (long)fds, (long)n, timeout, 0, 0, 0);
  poll_fn f = (poll_fn)(uintptr_t)real(F_POLL);
  int r = f ? f(fds, n, timeout) : (int)cancellable(SYS_poll, (long)fds, (long)n, timeout, 0, 0, 0);
  timed_end(on, &saved, errno);
  return r;
}

hc_public __attribute__((weak)) int nanosleep(const struct timespec *req, struct timespec *rem) {
  timed_rec_t saved;
  nanosleep_fn f = (nanosleep_fn)(uintptr_t)real(F_NANOSLEEP);
  /* glibc's nanosleep is clock_nanosleep(CLOCK_REALTIME, 0), and so is
   * ours in a static link: a seccomp allow-list made by watching the plain
   * program (strace) has no nanosleep, and killed the static one. */
  bool on = timed_begin(SYS_clock_nanosleep, ts_ns(req), &saved);
  timed_args(on, 4, CLOCK_REALTIME, 0, (long)req, (long)rem, 0, 0);
  int r = f ? f(req, rem)
            : (int)cancellable(SYS_clock_nanosleep, CLOCK_REALTIME, 0, (long)req, (long)rem, 0, 0);
  timed_end(on, &saved, errno);
  return r;
}

/* Returns the error number, as POSIX has it (errno untouched). */
hc_public __attribute__((weak)) int clock_nanosleep(clockid_t clock, int flags, const struct timespec *req,
                                                    struct timespec *rem) {
  timed_rec_t saved;
  bool on = !(flags & TIMER_ABSTIME) && timed_begin(SYS_clock_nanosleep, ts_ns(req), &saved);
  timed_args(on, 4, clock, flags, (long)req, (long)rem, 0, 0);
  clock_nanosleep_fn f = (clock_nanosleep_fn)(uintptr_t)real(F_CLOCK_NANOSLEEP);
  int e = errno;
  /* A static link: libc's checks (the calling thread's CPU clock is
   * EINVAL, POSIX; the kernel says EOPNOTSUPP), then a cancellation point. */
  int r = f ? f(clock, flags, req, rem)
            : clock == CLOCK_THREAD_CPUTIME_ID
                ? EINVAL
                : -(int)hci_cancellable_syscall(SYS_clock_nanosleep, clock, flags, (long)req, (long)rem, 0, 0);
  timed_end(on, &saved, e);
  return r;
}

/* usleep and sleep: glibc's call its own nanosleep, not ours, with a
 * timespec built in their frame (sleep's also receives the time left): the
 * record gives the deadline, and the handler takes that timespec by its
 * place (timed_stack_args).  Without a record, usleep's EINTR reached the
 * program at every check of the fallback (its rem is NULL: no time left to
 * read), returning early; sleep's when it was seen running.  A static link
 * has no other name for them: ours go through our nanosleep (glibc's
 * sleep's arithmetic, which returns the whole seconds left, errno kept on
 * success). */
typedef int (*usleep_fn)(useconds_t);
typedef unsigned (*sleep_fn)(unsigned);

/* glibc's clock_nanosleep(CLOCK_REALTIME, 0, &ts, rem) for ns: stack names
 * the arguments that point into its frame (ts; sleep's rem too). */
static bool glibc_sleep_begin(int64_t ns, unsigned stack, timed_rec_t *saved) {
  bool on = timed_begin(SYS_clock_nanosleep, ns, saved);
  timed_args(on, 4, CLOCK_REALTIME, 0, 0, 0, 0, 0);
  timed_stack_args(on, stack);
  return on;
}

hc_public __attribute__((weak)) int usleep(useconds_t us) {
  usleep_fn f = (usleep_fn)(uintptr_t)real(F_USLEEP);
  if (!f) {
    struct timespec ts = {(time_t)(us / 1000000), (long)(us % 1000000) * 1000};
    return nanosleep(&ts, NULL);
  }
  timed_rec_t saved;
  bool on = glibc_sleep_begin((int64_t)us * 1000, 1u << 2, &saved);
  int r = f(us);
  timed_end(on, &saved, errno);
  return r;
}

hc_public __attribute__((weak)) unsigned sleep(unsigned s) {
  sleep_fn f = (sleep_fn)(uintptr_t)real(F_SLEEP);
  if (!f) {
    int e = errno;
    struct timespec ts = {(time_t)s, 0};
    if (nanosleep(&ts, &ts) < 0) return (unsigned)ts.tv_sec;
    errno = e;
    return 0;
  }
  timed_rec_t saved;
  bool on = glibc_sleep_begin((int64_t)s * 1000000000, 3u << 2, &saved);
  unsigned r = f(s);
  timed_end(on, &saved, errno);
  return r;
}

/* These need no deadline: the kernel writes the time left back into the
 * timeout they pass (glibc's own copy, or ours).  Their record names the
 * call and its arguments, for the fallback's handler when it saw the thread
 * running before it entered the wait: glibc 2.34 and later make select a
 * pselect6 with a timespec built in its frame, and copy pselect's and
 * ppoll's timeout there (pselect's {sigmask, size} pair too), so those
 * arguments are known only as addresses in that frame (timed_stack_args);
 * an older glibc's select passes the caller's timeval to SYS_select, above
 * the wrapper's frame: not matched, the EINTR stays.  (sem_timedwait and
 * sem_clockwait, absolute futex waits, are wrapped by the shared library
 * only, timed_sem.c; a static link's restart when they were seen waiting.) */
/* Our own call (a static link): the kernel writes the time left back into
 * the timeout, which the caller gave as const - a copy, as glibc's. */
static struct timespec *ts_copy(const struct timespec *ts, struct timespec *copy) {
  if (!ts) return NULL;
  *copy = *ts;
  return copy;
}
typedef int (*select_fn)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
typedef int (*pselect_fn)(int, fd_set *, fd_set *, fd_set *, const struct timespec *, const sigset_t *);
typedef int (*ppoll_fn)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);

hc_public __attribute__((weak)) int select(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tv) {
  timed_rec_t saved;
  select_fn f = (select_fn)(uintptr_t)real(F_SELECT);
  bool on = timed_begin(f ? SYS_pselect6 : SYS_select, tv ? 0 : -1, &saved);
  timed_args(on, 6, n, (long)r, (long)w, (long)e, (long)tv, 0);
  timed_stack_args(on, f && tv ? 1u << 4 : 0);
  int res = f ? f(n, r, w, e, tv) : (int)cancellable(SYS_select, n, (long)r, (long)w, (long)e, (long)tv, 0);
  timed_end(on, &saved, errno);
  return res;
}

hc_public __attribute__((weak)) int pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *ts,
                                            const sigset_t *ss) {
  timed_rec_t saved;
  bool on = timed_begin(SYS_pselect6, ts ? 0 : -1, &saved);
  pselect_fn f = (pselect_fn)(uintptr_t)real(F_PSELECT);
  struct timespec copy;
  struct { const sigset_t *ss; size_t size; } data = {ss, _NSIG / 8};
  timed_args(on, 6, n, (long)r, (long)w, (long)e, ts ? (long)&copy : 0, (long)&data);
  timed_stack_args(on, f ? (ts ? 3u : 2u) << 4 : 0);
  int res = f ? f(n, r, w, e, ts, ss)
              : (int)cancellable(SYS_pselect6, n, (long)r, (long)w, (long)e, (long)ts_copy(ts, &copy), (long)&data);
  timed_end(on, &saved, errno);
  return res;
}

hc_public __attribute__((weak)) int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts,
                                          const sigset_t *ss) {
  timed_rec_t saved;
  bool on = timed_begin(SYS_ppoll, ts ? 0 : -1, &saved);
  ppoll_fn f = (ppoll_fn)(uintptr_t)real(F_PPOLL);
  struct timespec copy;
  timed_args(on, 5, (long)fds, (long)n, ts ? (long)&copy : 0, (long)ss, _NSIG / 8, 0);
  timed_stack_args(on, f && ts ? 1u << 2 : 0);
  int res = f ? f(fds, n, ts, ss) : (int)cancellable(SYS_ppoll, (long)fds, (long)n, (long)ts_copy(ts, &copy), (long)ss, _NSIG / 8, 0);
  timed_end(on, &saved, errno);
  return res;
}


/* pause and sigsuspend wait without a timeout: their record lets the
 * fallback's handler restart one it saw the thread enter
 * (untimed_restart.c), as for the untimed forms above. */
typedef int (*pause_fn)(void);
typedef int (*sigsuspend_fn)(const sigset_t *);

hc_public __attribute__((weak)) int pause(void) {
  timed_rec_t saved;
  bool on = timed_begin(SYS_pause, -1, &saved);
  timed_args(on, 1, 0, 0, 0, 0, 0, 0);
  timed_loose_args(on, 1u); /* no argument: one, not compared */
  pause_fn f = (pause_fn)(uintptr_t)real(F_PAUSE);
  int r = f ? f() : (int)cancellable(SYS_pause, 0, 0, 0, 0, 0, 0);
  timed_end(on, &saved, errno);
  return r;
}

hc_public __attribute__((weak)) int sigsuspend(const sigset_t *set) {
  timed_rec_t saved;
  bool on = timed_begin(SYS_rt_sigsuspend, -1, &saved);
  timed_args(on, 2, (long)set, _NSIG / 8, 0, 0, 0, 0);
  sigsuspend_fn f = (sigsuspend_fn)(uintptr_t)real(F_SIGSUSPEND);
  int r = f ? f(set) : (int)cancellable(SYS_rt_sigsuspend, (long)set, _NSIG / 8, 0, 0, 0, 0);
  timed_end(on, &saved, errno);
  return r;
}

#if defined(__x86_64__)
static HC_TLS struct timespec sig_left; /* a sleep's time left, for its restart */
static void put_left(struct timespec *at, int64_t left) {
  if (left < 0) left = 0;
  at->tv_sec = (time_t)(left / 1000000000);
  at->tv_nsec = (long)(left % 1000000000);
}
#endif

/* The signal fallback (stop_world.c): the handler ran on the thread while
 * it waited, and the kernel ended the wait with EINTR (calls that never
 * restart after a handler, SA_RESTART or not: signal(7)).  A timed one is
 * restarted from the handler's context - the system call instruction again,
 * with the time left - when the context is exactly the call seen in
 * /proc/<tid>/syscall before the signal was sent (number, arguments, sp,
 * pc; or, seen running, the call a wrapper's record names when the context
 * is right after a system call instruction with the arguments the wrapper
 * expects libc to give it) and no signal of the
 * program's is waiting to be delivered.  Decided
 * when the thread is let go, at the handler's end: a signal of the
 * program's that came while the check held the thread (blocked in the
 * handler) is pending then, and ends the wait with EINTR as it would have
 * (decided at the handler's start, 26 of 301 such EINTRs were lost).  An
 * untimed wait is not restarted here: a signal of the program's that
 * arrives between this handler's decision and the restarted call would be
 * handled without ending the wait, and `while (!flag) pause();` would then
 * wait for good (a timed wait ends at its time anyway: that signal's EINTR
 * comes late at worst); untimed_restart.c's trampoline waits again in the
 * call's p-variant instead, which installs the program's mask and waits in
 * one step.  What no restart can tell: a handler of the program's that ran
 * after the wait's EINTR and before this signal was delivered (the program's
 * handler blocked ours, or ours came during its sigreturn) leaves the same
 * context; that wait restarts and its EINTR is lost (2 of about 5300
 * program signals sent beside back-to-back checks in one series of runs,
 * 0 of 10 568 in another).
 * The time left: the record of a call made through libc's function (the
 * wrappers above); for ppoll, select and pselect6 the kernel wrote it back
 * into the timeout the call was given; for a relative sleep without a
 * record, what the kernel wrote to its `rem`; an absolute sleep or futex
 * wait is restarted as it was.  Not restarted: poll and relative futex
 * waits made without a record (syscall(), libc's internal calls such as
 * usleep's), io_getevents, msgrcv, SO_RCVTIMEO sockets, and the untimed
 * waits that have no p-variant (semop, sigwaitinfo). */
/* The call seen, copied out of the slot while the handler may read it (the
 * slot may be gone once the thread is let go, when the restart is decided). */
static HC_TLS struct {
  long nr;
  uintptr_t args[6], sp, pc;
} seen;
void hci_timed_signal_seen(const hci_thread_t *t) {
  seen.nr = t->sys_nr;
  memcpy(seen.args, t->sys_args, sizeof seen.args);
  seen.sp = t->sys_sp;
  seen.pc = t->sys_pc;
}

/* A register holds the argument the record has.  An int argument (a
 * descriptor, a count, poll's timeout) is compared in its low 32 bits:
 * glibc's cancellable path reloads it from its frame with a 32-bit move,
 * so poll(fds, n, -1) reaches the kernel with 0xffffffff in rdx (its EINTR
 * stayed when the thread was seen running). */
#if defined(__x86_64__)
static bool same_arg(greg_t reg, long want) {
  return reg == want || (want == (long)(int)want && (uint32_t)reg == (uint32_t)want);
}
#endif

void hci_timed_signal_restart(void *ctxv) {
#if defined(__x86_64__)
  const hci_signal_ctx_t *ctx = ctxv;
  const __typeof__(seen) *t = &seen;
  ucontext_t *uc = ctx->uc;
  greg_t *g = uc->uc_mcontext.gregs;
  long nr = t->nr;
  seen.nr = -1;
  /* The trampoline's own wait (untimed_restart.c): restarted as it is. */
  if (hci_untimed_again(uc)) return;
  if (g[REG_RAX] != -EINTR) return;
  const int arg[6] = {REG_RDI, REG_RSI, REG_RDX, REG_R10, REG_R8, REG_R9};
  bool same = nr >= 0 && (uintptr_t)g[REG_RIP] == t->pc && (uintptr_t)g[REG_RSP] == t->sp;
  for (int i = 0; same && i < 6; i++) same = (uintptr_t)g[arg[i]] == t->args[i];
  if (!same) {
    /* Seen running (between two calls), then in the wait when the signal
     * came: a wrapper's record names the call, when the instruction before
     * the context's pc is a system call. */
    unsigned short insn = 0;
    /* A handler of the program's that interrupted the wrapper makes its
     * own calls a signal frame (over 1 KiB) further down, or elsewhere. */
    uintptr_t sp = (uintptr_t)g[REG_RSP];
    bool args = rec.nargs > 0;
    for (int i = 0; args && i < rec.nargs; i++)
      args = rec.loose_args >> i & 1   ? true
             : rec.stack_args >> i & 1 ? (uintptr_t)g[arg[i]] >= sp && (uintptr_t)g[arg[i]] < rec.sp
                                       : same_arg(g[arg[i]], rec.args[i]);
    if (!rec.nr || !args || sp >= rec.sp || rec.sp - sp > 1024 ||
        hci_os_read(&insn, (uintptr_t)g[REG_RIP] - 2, sizeof insn) != sizeof insn || insn != 0x050f)
      return;
    nr = rec.nr;
  }
  /* A signal of the program's waiting for this thread: it ends the wait. */
  uint64_t pending = 0, blocked;
  memcpy(&blocked, &uc->uc_sigmask, sizeof blocked);
  if (hci_raw6(SYS_rt_sigpending, (long)&pending, 8, 0, 0, 0, 0) != 0) return;
  pending &= ~blocked & ~(1ull << (hci_stop_signal() - 1));
  if (pending) return;
  /* Without a timeout: the p-variant made by the trampoline. */
  if (hci_untimed_restart(uc, ctx->si, nr)) return;
  bool recorded = rec.nr == nr;
  int64_t left = recorded ? rec.deadline_ns - (int64_t)hci_os_now_ns() : 0;
  switch (nr) {
    case SYS_poll:
      if (!recorded || (int)g[REG_RDX] < 0) return;
      g[REG_RDX] = (greg_t)((left < 0 ? 0 : left + 999999) / 1000000);
      break;
    case SYS_epoll_wait:
    case SYS_epoll_pwait:
      if (!recorded || (int)g[REG_R10] < 0) return;
      g[REG_R10] = (greg_t)((left < 0 ? 0 : left + 999999) / 1000000);
      break;
#ifdef SYS_epoll_pwait2
    case SYS_epoll_pwait2:
#endif
    case SYS_semtimedop:
      if (!recorded || !g[REG_R10]) return;
      put_left(&rec.left, left);
      g[REG_R10] = (greg_t)(uintptr_t)&rec.left;
      break;
    case SYS_rt_sigtimedwait:
      if (!recorded || !g[REG_RDX]) return;
      put_left(&rec.left, left);
      g[REG_RDX] = (greg_t)(uintptr_t)&rec.left;
      break;
    case SYS_ppoll:
    case SYS_pselect6:
    case SYS_select:
      if (!g[nr == SYS_ppoll ? REG_RDX : REG_R8]) return; /* untimed */
      break;
    case SYS_nanosleep:
    case SYS_clock_nanosleep: {
      int req = nr == SYS_nanosleep ? REG_RDI : REG_RDX, rem = nr == SYS_nanosleep ? REG_RSI : REG_R10;
      if (nr == SYS_clock_nanosleep && (g[REG_RSI] & TIMER_ABSTIME)) break; /* the same deadline */
      if (recorded) {
        put_left(&sig_left, left);
      } else if (g[rem]) {
        struct timespec r;
        if (hci_os_read(&r, (uintptr_t)g[rem], sizeof r) != sizeof r) return;
        sig_left = r;
      } else {
        return;
      }
      g[req] = (greg_t)(uintptr_t)&sig_left;
      break;
    }
    case SYS_futex: {
      long cmd = g[REG_RSI] & ~(long)(FUTEX_PRIVATE_FLAG | FUTEX_CLOCK_REALTIME);
      if (cmd != FUTEX_WAIT_BITSET || !g[REG_R10]) return; /* absolute deadlines only */
      break;
    }
    default:
      return;
  }
  /* The restarted call's arguments are the record's now (a second check
   * that finds it running would not know it otherwise). */
  if (rec.nr == nr)
    for (int i = 0; i < rec.nargs; i++) rec.args[i] = (long)g[arg[i]];
  g[REG_RAX] = nr;
  g[REG_RIP] -= 2; /* the syscall instruction */
#else
  (void)ctxv;
#endif
}

/* timed_sem.c's: a futex wait to an absolute deadline abs (sem_timedwait,
 * sem_clockwait).  libc computes the word, the operation and the value:
 * only the deadline's pointer (r10) is compared; the handler's futex case
 * wants FUTEX_WAIT_BITSET and a deadline, and restarts such a wait as it
 * was. */
bool hci_timed_futex_begin(const struct timespec *abs, hci_timed_rec_t *saved) {
  bool on = abs && timed_begin(SYS_futex, 0, saved);
  timed_args(on, 4, 0, 0, 0, (long)abs, 0, 0);
  timed_loose_args(on, 7u);
  return on;
}
void hci_timed_futex_end(bool on, const hci_timed_rec_t *saved) { timed_end(on, saved, errno); }

bool hci_timed_sigwait_begin(const sigset_t *set, siginfo_t *info, const struct timespec *ts,
                             hci_timed_rec_t *saved) {
  bool on = timed_begin(SYS_rt_sigtimedwait, ts_ns(ts), saved);
  timed_args(on, 4, (long)set, (long)info, (long)ts, _NSIG / 8, 0, 0);
  return on;
}
void hci_timed_sigwait_end(bool on, const hci_timed_rec_t *saved) { timed_end(on, saved, errno); }

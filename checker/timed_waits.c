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
#include <sys/epoll.h>
#include <sys/sem.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <time.h>

#include "hc_checker.h"

typedef hci_timed_rec_t timed_rec_t;
static HC_TLS timed_rec_t rec;

/* A wait in a signal handler that interrupted another keeps the outer
 * record: saved and put back. */
static bool timed_begin(long nr, int64_t timeout_ns, timed_rec_t *saved) {
  if (!hci_chk.active || timeout_ns < 0) return false;
  *saved = rec;
  rec.deadline_ns = (int64_t)hci_os_now_ns() + timeout_ns;
  __atomic_store_n(&rec.nr, nr, __ATOMIC_RELEASE);
  return true;
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
  if (r.nr == 0 || r.nr != (long)g->orig_rax) return false;
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
            name_epoll_pwait2[] = "epoll_pwait2", name_semtimedop[] = "semtimedop";
static void *real_fn[4];
HC_PRIVATE_STATE(real_fn);
static void *const self_fn[4] = {(void *)epoll_wait, (void *)epoll_pwait, (void *)epoll_pwait2, (void *)semtimedop};
static char *const fn_name[4] = {name_epoll_wait, name_epoll_pwait, name_epoll_pwait2, name_semtimedop};
extern int __semtimedop(int, struct sembuf *, size_t, const struct timespec *) __attribute__((weak));

static void *real(int i) {
  void *f = __atomic_load_n(&real_fn[i], __ATOMIC_ACQUIRE);
  if (f) return f == (void *)1 ? NULL : f;
  f = dlsym(RTLD_NEXT, fn_name[i]);
  if (f == self_fn[i]) f = NULL;
  if (!f && i == 3) f = (void *)__semtimedop;
  __atomic_store_n(&real_fn[i], f ? f : (void *)1, __ATOMIC_RELEASE);
  return f;
}
void hci_timed_waits_resolve(void) {
  for (int i = 0; i < 4; i++) real(i);
}

/* A static link's epoll calls: the system call with asynchronous
 * cancellation around it (they are cancellation points). */
static long cancellable(long nr, long a, long b, long c, long d, long e, long f) {
  int old = PTHREAD_CANCEL_DEFERRED;
  pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
  long r = hci_raw6(nr, a, b, c, d, e, f);
  pthread_setcanceltype(old, NULL);
  return hci_raw_libc_result(r);
}

typedef int (*epoll_wait_fn)(int, struct epoll_event *, int, int);
typedef int (*epoll_pwait_fn)(int, struct epoll_event *, int, int, const sigset_t *);
typedef int (*epoll_pwait2_fn)(int, struct epoll_event *, int, const struct timespec *, const sigset_t *);
typedef int (*semtimedop_fn)(int, struct sembuf *, size_t, const struct timespec *);

hc_public __attribute__((weak)) int epoll_wait(int epfd, struct epoll_event *ev, int n, int timeout) {
  timed_rec_t saved;
  bool on = timed_begin(SYS_epoll_wait, timeout >= 0 ? (int64_t)timeout * 1000000 : -1, &saved);
  epoll_wait_fn f = (epoll_wait_fn)(uintptr_t)real(0);
  int r = f ? f(epfd, ev, n, timeout) : (int)cancellable(SYS_epoll_wait, epfd, (long)ev, n, timeout, 0, 0);
  timed_end(on, &saved, errno);
  return r;
}

hc_public __attribute__((weak)) int epoll_pwait(int epfd, struct epoll_event *ev, int n, int timeout,
                                                const sigset_t *ss) {
  timed_rec_t saved;
  bool on = timed_begin(SYS_epoll_pwait, timeout >= 0 ? (int64_t)timeout * 1000000 : -1, &saved);
  epoll_pwait_fn f = (epoll_pwait_fn)(uintptr_t)real(1);
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
  epoll_pwait2_fn f = (epoll_pwait2_fn)(uintptr_t)real(2);
  int r = f ? f(epfd, ev, n, ts, ss)
            : (int)cancellable(SYS_epoll_pwait2, epfd, (long)ev, n, (long)ts, (long)ss, _NSIG / 8);
  timed_end(on, &saved, errno);
  return r;
}
#endif

hc_public __attribute__((weak)) int semtimedop(int id, struct sembuf *ops, size_t nops, const struct timespec *ts) {
  timed_rec_t saved;
  bool on = timed_begin(SYS_semtimedop, ts_ns(ts), &saved);
  semtimedop_fn f = (semtimedop_fn)(uintptr_t)real(3);
  int r = f ? f(id, ops, nops, ts) : (int)hci_raw_libc_result(hci_raw6(SYS_semtimedop, id, (long)ops, (long)nops, (long)ts, 0, 0));
  timed_end(on, &saved, errno);
  return r;
}

bool hci_timed_sigwait_begin(const struct timespec *ts, hci_timed_rec_t *saved) {
  return timed_begin(SYS_rt_sigtimedwait, ts_ns(ts), saved);
}
void hci_timed_sigwait_end(bool on, const hci_timed_rec_t *saved) { timed_end(on, saved, errno); }

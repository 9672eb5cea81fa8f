/* sigwait_watch.c - the signal fallback's stop signal never comes out of
 * the program's sigwait.
 *
 * The fallback (stop_world.c) sends its signal only to a thread that does
 * not block it and does not wait for it (SigBlk and /proc/<tid>/syscall are
 * read first).  A thread that blocks it between that read and the send
 * gets it queued; the signal cannot be taken back (no system call removes
 * a signal from another thread's queue), and when the thread then waits on
 * a set holding it, sigwaitinfo would return a signal the program never
 * sent (fx_hostile sigwait-race).  So sigwait, sigwaitinfo and sigtimedwait
 * are interposed: a stop signal of ours (SI_QUEUE from this process, our
 * magic value: hci_stop_signal_ours) is dropped and the wait goes on with
 * the time left.  libc's own functions do the waiting (dlsym from the
 * library's constructor; libc.a's __sigtimedwait in a static link), so each
 * stays a cancellation point.  Not covered: a read of a signalfd (read(2)
 * is not interposed) - such a thread gets it in that window only.
 *
 * Locks: none.
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>

#include "hc_checker.h"

typedef int (*timedwait_fn)(const sigset_t *, siginfo_t *, const struct timespec *);
static timedwait_fn real_timedwait;
static char name_timedwait[] = "sigtimedwait";
HC_PRIVATE_STATE(real_timedwait);

extern int __sigtimedwait(const sigset_t *, siginfo_t *, const struct timespec *) __attribute__((weak));

void hci_sigwait_watch_resolve(void) {
  timedwait_fn f = (timedwait_fn)(uintptr_t)dlsym(RTLD_NEXT, name_timedwait);
  if (!f || f == sigtimedwait) f = __sigtimedwait;
  real_timedwait = f == sigtimedwait ? NULL : f;
}

static int timedwait(const sigset_t *set, siginfo_t *info, const struct timespec *ts) {
  if (real_timedwait) return real_timedwait(set, info, ts);
  /* A static link: a cancellation point (sigwait, sigwaitinfo, sigtimedwait). */
  return (int)hci_raw_libc_result(hci_cancellable_syscall(SYS_rt_sigtimedwait, (long)set, (long)info, (long)ts, 8, 0, 0));
}

/* sigtimedwait without our stop signals; ts NULL: no time limit. */
static int wait_theirs(const sigset_t *set, siginfo_t *info, const struct timespec *ts) {
  siginfo_t own;
  if (!info) info = &own;
  long long end = ts ? (long long)hci_os_now_ns() + (long long)ts->tv_sec * 1000000000ll + ts->tv_nsec : 0;
  struct timespec left;
  const struct timespec *t = ts;
  for (;;) {
    hci_timed_rec_t saved;
    bool on = hci_timed_sigwait_begin(set, info, t, &saved); /* the ptrace stop's EINTR restarts with the time left */
    int sig = timedwait(set, info, t);
    hci_timed_sigwait_end(on, &saved);
    if (sig <= 0 || !hci_stop_signal_ours(sig, info)) return sig;
    if (ts) {
      long long rest = end - (long long)hci_os_now_ns();
      if (rest < 0) rest = 0;
      left.tv_sec = (time_t)(rest / 1000000000ll);
      left.tv_nsec = (long)(rest % 1000000000ll);
      t = &left;
    }
  }
}

hc_public __attribute__((weak)) int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *ts) {
  return wait_theirs(set, info, ts);
}

hc_public __attribute__((weak)) int sigwaitinfo(const sigset_t *set, siginfo_t *info) {
  return wait_theirs(set, info, NULL);
}

/* POSIX's sigwait returns the error number and never EINTR (glibc's
 * retries, as here). */
hc_public __attribute__((weak)) int sigwait(const sigset_t *set, int *sig) {
  int r;
  do r = wait_theirs(set, NULL, NULL);
  while (r < 0 && errno == EINTR);
  if (r < 0) return errno;
  *sig = r;
  return 0;
}

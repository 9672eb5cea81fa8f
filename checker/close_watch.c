/* close_watch.c - a program that closes every descriptor.
 *
 * Under the launcher each process keeps the records file open from its start
 * (base/log_stream.c) and writes its record through it at exit; a program
 * that closed it gets it reopened by its path then.  A process that drops
 * its privileges (or chroots) and closes every descriptor (a daemon's
 * sandboxed child: setuid(nobody), closefrom(3)) could do neither: its
 * record never came, and a leaking child was missing from the summary
 * ("no leaks found", status 0).  So close_range(2) and closefrom(3) through
 * libc, and syscall(SYS_close_range) (seccomp_watch.c), are interposed: when
 * the kept descriptor is among those closed and the file cannot be opened
 * again now, a pending record is written first (tree.c), which the launcher
 * counts as a check that could not complete unless the process's own
 * record follows.  Only then: a child that closes every descriptor and
 * execs a program that is not checked (a static one) would otherwise leave
 * a pending record for nothing (Python's subprocess closes them in every
 * child).  close(2) is interposed too (a daemon's loop closing every
 * number up to its limit, after it dropped its privileges: its record was
 * lost, it was missing from the summary): one compare with the kept
 * number (no system call), then libc's own close, found with dlsym from
 * the library's constructor (libc.a's __close in a static link), which
 * stays a cancellation point (a close before that constructor makes the
 * system call itself).  Not seen: close_range made by an inline system call, and a
 * process that closes first (while it could open the file again) and drops
 * its privileges later (its record is lost as before: seeing the drop
 * would take setuid and its kin, whose libc versions change every thread's
 * credentials - a static link could not reach them).
 *
 * Each is the same system call as glibc's (close_range is not a
 * cancellation point; neither is closefrom); closefrom falls back to
 * closing every number up to the descriptor limit where close_range does
 * not exist (Linux < 5.9).  Weak, as seccomp_watch.c's.
 *
 * Locks: none.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include "hc_checker.h"

#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#define CLOSE_RANGE_CLOEXEC_FLAG 4u /* linux/close_range.h: marks, closes nothing */

void hci_close_watch(unsigned lo, unsigned hi, unsigned flags) {
  if (!hci_chk.active || (flags & CLOSE_RANGE_CLOEXEC_FLAG) || lo > hi) return;
  hci_proc_fds_gone(lo, hi); /* the kept status descriptor is no longer read bare */
  if (hci_log_stream_records_lost_by(lo, hi)) hci_tree_pending();
}

static int (*real_close)(int);
static char name_close[] = "close";
HC_PRIVATE_STATE(real_close);
/* libc.a's own name for it (a static link: RTLD_NEXT finds nothing). */
extern int __close(int) __attribute__((weak));
void hci_close_watch_resolve(void) {
  int (*f)(int) = (int (*)(int))(uintptr_t)dlsym(RTLD_NEXT, name_close);
  if (!f || f == close) f = __close;
  real_close = f == close ? NULL : f;
}

hc_public __attribute__((weak)) int close(int fd) {
  if (__builtin_expect(fd >= 0 && fd == hci_log_stream_records_kept(), 0)) hci_close_watch((unsigned)fd, (unsigned)fd, 0);
  else if (__builtin_expect(fd >= 100, 0)) hci_proc_fds_gone((unsigned)fd, (unsigned)fd); /* proc_fds.c keeps its from 100 */
  if (real_close) return real_close(fd);
  return (int)hci_raw_libc_result(hci_raw6(SYS_close, fd, 0, 0, 0, 0, 0));
}

/* dup2 and dup3 onto a kept descriptor replace it: the same system calls
 * as glibc's (neither is a cancellation point). */
hc_public __attribute__((weak)) int dup3(int oldfd, int newfd, int flags) {
  if (newfd >= 0 && oldfd != newfd) hci_proc_fds_gone((unsigned)newfd, (unsigned)newfd);
  return (int)hci_raw_libc_result(hci_raw6(SYS_dup3, oldfd, newfd, flags, 0, 0, 0));
}

hc_public __attribute__((weak)) int dup2(int oldfd, int newfd) {
  if (newfd >= 0 && oldfd != newfd) hci_proc_fds_gone((unsigned)newfd, (unsigned)newfd);
#ifdef SYS_dup2
  return (int)hci_raw_libc_result(hci_raw6(SYS_dup2, oldfd, newfd, 0, 0, 0, 0));
#else
  if (oldfd == newfd) /* dup3 refuses it; dup2 checks oldfd and returns it */
    return (int)hci_raw_libc_result(hci_raw6(SYS_fcntl, oldfd, F_GETFD, 0, 0, 0, 0)) < 0 ? -1 : newfd;
  return (int)hci_raw_libc_result(hci_raw6(SYS_dup3, oldfd, newfd, 0, 0, 0, 0));
#endif
}

hc_public __attribute__((weak)) int close_range(unsigned lo, unsigned hi, int flags) {
  hci_close_watch(lo, hi, (unsigned)flags);
  return (int)hci_raw_libc_result(hci_raw6(SYS_close_range, lo, hi, flags, 0, 0, 0));
}

hc_public __attribute__((weak)) void closefrom(int lowfd) {
  unsigned lo = lowfd < 0 ? 0u : (unsigned)lowfd;
  hci_close_watch(lo, ~0u, 0);
  if (hci_raw6(SYS_close_range, lo, ~0u, 0, 0, 0, 0) == 0) return;
  struct rlimit rl = {1024, 1024};
  hci_raw6(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, (long)&rl, 0, 0);
  unsigned top = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (1u << 20) ? 1u << 20 : (unsigned)rl.rlim_cur;
  for (unsigned fd = lo; fd < top; fd++) hci_raw6(SYS_close, fd, 0, 0, 0, 0, 0);
}

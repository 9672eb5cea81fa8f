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
 * child).  Not seen: a loop of close(2) (not interposed: a cancellation
 * point, and every close would pay for it), close_range made by an inline
 * system call, and a process that closes first and drops its privileges
 * later (its record is lost as before).
 *
 * Each is the same system call as glibc's (close_range is not a
 * cancellation point; neither is closefrom); closefrom falls back to
 * closing every number up to the descriptor limit where close_range does
 * not exist (Linux < 5.9).  Weak, as seccomp_watch.c's.
 *
 * Locks: none.
 */
#include <sys/resource.h>
#include <sys/syscall.h>

#include "hc_checker.h"

#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#define CLOSE_RANGE_CLOEXEC_FLAG 4u /* linux/close_range.h: marks, closes nothing */

void hci_close_watch(unsigned lo, unsigned hi, unsigned flags) {
  if (!hci_chk.active || (flags & CLOSE_RANGE_CLOEXEC_FLAG) || lo > hi) return;
  if (hci_log_stream_records_lost_by(lo, hi)) hci_tree_pending();
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

/* parent_signal.c - under the launcher, a signal the program sends to its
 * parent goes to the launcher's parent.
 *
 * The launcher (tools/heapcheck.c) runs the program as its child, so the
 * program's getppid() is the launcher.  A program that signals its parent
 * means the process that started it: an X server tells xinit, startx or
 * xvfb-run it is ready with SIGUSR1 to getppid(), a daemon tells its
 * supervisor.  The launcher cannot send such a signal on itself: it
 * arrives there exactly as the program's kill(0, sig) to its own process
 * group does (same sender, same code), and passing that one on to the
 * launcher's parent killed harnesses that run the job in a group of their
 * own (a script's `trap 'kill 0' EXIT`; adv30).  So the program's own kill
 * and sigqueue are interposed: a signal for its parent while that parent
 * is the launcher (HEAPCHECK_TREE_PID, and getppid() now) goes to the
 * launcher's parent (read from /proc when it is sent; HEAPCHECK_TREE_PPID,
 * its parent at its start, when /proc cannot say), and the launcher passes on no
 * signal its child sent it.  Only the shared library has this (the
 * launcher runs dynamically linked programs; a raw kill system call is
 * not seen).  A process forked by the program has the program as its
 * parent: nothing changes for it.
 *
 * Locks: none; async-signal-safe (system calls only).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hc_checker.h"
#include "hc_options.h"

/* The launcher's pid and its parent's, read once (by the constructor, or
 * by a kill before it): a program may clear its environment later. */
static _Atomic int launcher = -1, above = -1; /* -1: not read yet; 0: none */

static void read_pids(void) {
  long long l = hci_opt_int(HCO_HEAPCHECK_TREE_PID), a = hci_opt_int(HCO_HEAPCHECK_TREE_PPID);
  bool ok = l > 1 && a > 1;
  atomic_store_explicit(&above, ok ? (int)a : 0, memory_order_relaxed);
  atomic_store_explicit(&launcher, ok ? (int)l : 0, memory_order_release);
}

__attribute__((constructor)) static void parent_signal_init(void) {
  if (atomic_load_explicit(&launcher, memory_order_acquire) < 0) read_pids();
}

/* The launcher's parent now (field 4 of /proc/<launcher>/stat), or -1.
 * Not the one it had at its start: once that one has ended its pid may be
 * another process's (adv30), and the launcher, orphaned, has the parent
 * the program would have had without it. */
static pid_t parent_of(pid_t pid) {
  char dir[24], buf[512];
  hci_snprintf(dir, sizeof dir, "/proc/%d", (int)pid);
  if (hci_task_file(AT_FDCWD, dir, "stat", buf, sizeof buf) <= 0) return -1;
  const char *c = hci_stat_field(buf, 4);
  long ppid = 0;
  for (; c && *c >= '0' && *c <= '9'; c++) ppid = ppid * 10 + (*c - '0');
  return c && *c == ' ' && ppid > 0 ? (pid_t)ppid : -1;
}

/* Where a signal to pid goes: the launcher's parent when pid is our
 * parent and that parent is the launcher (the one it has now; the one it
 * started with when /proc cannot say). */
static pid_t target(pid_t pid) {
  if (pid <= 1) return pid;
  int l = atomic_load_explicit(&launcher, memory_order_acquire);
  if (l < 0) {
    read_pids();
    l = atomic_load_explicit(&launcher, memory_order_acquire);
  }
  if (l == 0 || pid != l || getppid() != pid) return pid;
  pid_t now = parent_of(pid);
  return now > 0 ? now : atomic_load_explicit(&above, memory_order_relaxed);
}

hc_public int kill(pid_t pid, int sig) { return (int)syscall(SYS_kill, target(pid), sig); }

hc_public int sigqueue(pid_t pid, int sig, const union sigval value) {
  siginfo_t si = {0};
  si.si_signo = sig;
  si.si_code = SI_QUEUE;
  si.si_pid = getpid();
  si.si_uid = getuid();
  si.si_value = value;
  return (int)syscall(SYS_rt_sigqueueinfo, target(pid), sig, &si);
}

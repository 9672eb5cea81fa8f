/* sigaction_watch.c - the program's own action for the stop signal's
 * number while the signal fallback's handler is installed.
 *
 * During a signal stop (stop_world.c) the fallback's handler is the
 * kernel's action for its signal (SIGRTMAX-3 by default), and the
 * program's action waits in stw.saved, put back after the check.  A
 * program that set its own action for that number meanwhile replaced
 * ours: its handler got the checker's signals (a signal it never sent),
 * the threads never stopped (every check beside a thread setting it in a
 * loop failed), reading the action back gave ours, and the restore undid
 * what the program had set.  So sigaction and signal are interposed: for
 * that number, while the handler is installed, they read and write the
 * program's saved action instead (hci_stw_sigaction); otherwise, and for
 * every other number, libc's own function does the work (dlsym from the
 * library's constructor; libc.a's __sigaction and __bsd_signal in a static
 * link).  Not covered: sigset, sysv_signal, bsd_signal, and libc's
 * internal callers (they reach the kernel without the interposed names).
 *
 * Locks: none here (stop_world.c's action lock, inside hci_stw_sigaction).
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "hc_checker.h"

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef __sighandler_t (*signal_fn)(int, __sighandler_t);
static sigaction_fn real_sigaction;
static signal_fn real_signal;
static char name_sigaction[] = "sigaction", name_signal[] = "signal";
HC_PRIVATE_STATE(real_sigaction);
HC_PRIVATE_STATE(real_signal);

/* glibc's own name (exported, and in libc.a's sigaction.o): a strong
 * reference, so that a static link always has it (a weak one pulls no
 * archive member, and sigaction would then fail with ENOSYS). */
extern int __sigaction(int, const struct sigaction *, struct sigaction *);
extern __sighandler_t __bsd_signal(int, __sighandler_t) __attribute__((weak));

void hci_sigaction_watch_resolve(void) {
  sigaction_fn a = (sigaction_fn)(uintptr_t)dlsym(RTLD_NEXT, name_sigaction);
  if (!a || a == sigaction) a = __sigaction;
  signal_fn s = (signal_fn)(uintptr_t)dlsym(RTLD_NEXT, name_signal);
  if (!s || s == signal) s = __bsd_signal;
  real_sigaction = a == sigaction ? NULL : a;
  real_signal = s == signal ? NULL : s;
}

/* libc's sigaction (before the constructor too: __sigaction). */
int hci_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  return (real_sigaction ? real_sigaction : __sigaction)(sig, act, old);
}

/* A handler of the program's: from now on the allocator's sampled paths
 * hold signals back while they may hold its locks (hci_alloc_note_handler,
 * alloc.c's sample_begin), which costs two system calls a sample that a
 * program with no handler does not pay. */
static void note(int sig, __sighandler_t h) {
  if (sig > 0 && h != SIG_DFL && h != SIG_IGN && h != SIG_ERR) hci_alloc_note_handler();
}

hc_public __attribute__((weak)) int sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  if (act) note(sig, act->sa_handler);
  return hci_stw_sigaction(sig, act, old);
}

/* glibc's signal() for a real-time number: BSD semantics, the handler's
 * own signal blocked while it runs and the call restarted (siginterrupt's
 * choice is libc's own state: every other number keeps libc's function). */
hc_public __attribute__((weak)) __sighandler_t signal(int sig, __sighandler_t handler) {
  note(sig, handler);
  if (real_signal && (sig < SIGRTMIN || sig > SIGRTMAX)) return real_signal(sig, handler);
  struct sigaction act, old;
  memset(&act, 0, sizeof act);
  act.sa_handler = handler;
  sigemptyset(&act.sa_mask);
  sigaddset(&act.sa_mask, sig);
  act.sa_flags = SA_RESTART;
  if (handler == SIG_ERR || hci_stw_sigaction(sig, &act, &old) != 0) {
    errno = EINVAL;
    return SIG_ERR;
  }
  return old.sa_handler;
}

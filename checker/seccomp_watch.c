/* seccomp_watch.c - a program that sandboxes itself with seccomp.
 *
 * A sandbox filter lists the system calls the program needs and kills the
 * process for any other (sshd's pre-authentication child, SECCOMP_RET_KILL).
 * A leak check then makes calls of its own (open of /proc, clone of the
 * ptrace helper, ptrace, process_vm_readv, mincore...): the process died of
 * SIGSYS at its exit check (status 159 instead of 0).  A trapping filter
 * would run the program's SIGSYS handler for our calls, a user-notification
 * one wait for a supervisor thread the check has stopped.  Filters that
 * answer with an errno are harmless: the check falls back or says it could
 * not complete, as it does for a filter the process inherited (a container's
 * profile; those are not seen here, and checks run as before).
 *
 * So prctl(PR_SET_SECCOMP) and syscall(SYS_seccomp), the two ways a program
 * or libseccomp installs a filter through libc, are interposed: each is the
 * same system call glibc's would make (raw, errno set on failure), and a
 * successful install is read afterwards (the kernel has validated it): a
 * filter with any return that kills, traps, notifies or traces (or returns
 * its accumulator, unknown here), or strict mode, makes every later check
 * refuse to run before its first system call, and silences the library's
 * messages (a message takes fstat, dup, sigpending...: calls such a filter
 * may kill): the check says nothing, and the exit status is
 * HEAP_CHECK_ERROR_EXIT_CODE when the program's is 0.  A filter
 * installed with an inline system call (Chromium's sandbox) is not seen.
 * Both are weak: a static link takes these unless libc.a's own objects are
 * linked in for another reason (then the filter is not seen).
 *
 * Locks: none (one atomic word).
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "hc_checker.h"
#include "hc_symbolize.h"

static _Atomic int sandboxed; /* 1: a filter that may end the process; 2: strict mode */
HC_PRIVATE_STATE(sandboxed);
/* Filters installed on the starting thread or synchronized to every thread:
 * the ones its /proc status counts (seccomp_probe.c probes the rest). */
static _Atomic long seen;
HC_PRIVATE_STATE(seen);
long hci_seccomp_seen(void) { return atomic_load(&seen); }

/* Whether any return of the filter kills, traps, notifies or traces. */
static bool may_end(const struct sock_fprog *p) {
  if (!p || !p->filter) return true;
  for (unsigned i = 0; i < p->len; i++) {
    const struct sock_filter *f = &p->filter[i];
    if (BPF_CLASS(f->code) != BPF_RET) continue;
    if (BPF_RVAL(f->code) != BPF_K) return true; /* the accumulator: unknown */
    unsigned act = f->k & SECCOMP_RET_ACTION_FULL;
    if (act != SECCOMP_RET_ALLOW && act != SECCOMP_RET_ERRNO && act != SECCOMP_RET_LOG) return true;
  }
  return false;
}

/* Whether the calling thread is the starting one: asked before the filter
 * is in force (gettid and getpid after it killed a process whose filter
 * lists neither). */
static bool starting_thread(void) {
  return hci_raw6(SYS_gettid, 0, 0, 0, 0, 0, 0) == hci_raw6(SYS_getpid, 0, 0, 0, 0, 0, 0);
}

static void installed(unsigned long mode, const void *arg, bool counted) {
  if (mode == SECCOMP_MODE_FILTER && counted) atomic_fetch_add(&seen, 1);
  if (mode == SECCOMP_MODE_STRICT) atomic_store(&sandboxed, 2);
  else if (mode == SECCOMP_MODE_FILTER && may_end(arg) && !atomic_load(&sandboxed)) atomic_store(&sandboxed, 1);
  else return;
  atomic_store(&hci_os_walled, true);
  hci_log_stream_mute(); /* writing a message takes calls the filter may kill too */
  hci_unwind_forbid_syscalls(); /* and so does recording a new stack in malloc */
}

/* Before a filter that may end the process is installed: its record may
 * never reach the launcher after it (tree.c's pending record). */
static void walling_in(unsigned long mode, const void *arg) {
  if (hci_chk.active && (mode == SECCOMP_MODE_STRICT || (mode == SECCOMP_MODE_FILTER && may_end(arg))))
    hci_tree_pending();
}

hc_public __attribute__((weak)) int prctl(int option, ...) {
  va_list ap;
  va_start(ap, option);
  unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
  unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
  va_end(ap);
  bool first = false;
  if (option == PR_SET_SECCOMP) {
    walling_in(a2, (const void *)a3);
    first = starting_thread();
  }
  long r = hci_raw6(SYS_prctl, option, (long)a2, (long)a3, (long)a4, (long)a5, 0);
  if (option == PR_SET_SECCOMP && r == 0) installed(a2, (const void *)a3, first);
  return (int)hci_raw_libc_result(r);
}

hc_public __attribute__((weak)) long syscall(long n, ...) {
  va_list ap;
  va_start(ap, n);
  long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
  long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
  va_end(ap);
#ifdef SYS_landlock_restrict_self
  /* A Landlock domain may take the module files out of reach, as a chroot
   * does (checker/chroot_watch.c): they are mapped first. */
  if (n == SYS_landlock_restrict_self && hci_chk.active) {
    hci_symbolizer_premap();
    hci_tree_pending();
  }
#endif
#ifdef SYS_pivot_root
  /* pivot_root (libc has no wrapper: syscall() is the way) takes the module
   * files out of view once the old root is unmounted, as a chroot does:
   * frames were named by module and offset only. */
  if (n == SYS_pivot_root && hci_chk.active) {
    hci_symbolizer_premap();
    hci_tree_pending();
  }
#endif
#ifdef SYS_close_range
  if (n == SYS_close_range) hci_close_watch((unsigned)a, (unsigned)b, (unsigned)c); /* close_watch.c */
#endif
  bool first = false;
  if (n == SYS_seccomp && (a == SECCOMP_SET_MODE_STRICT || a == SECCOMP_SET_MODE_FILTER)) {
    walling_in(a == SECCOMP_SET_MODE_STRICT ? SECCOMP_MODE_STRICT : SECCOMP_MODE_FILTER, (const void *)c);
    first = (b & SECCOMP_FILTER_FLAG_TSYNC) || starting_thread();
  }
  if (n == SYS_execve || n == SYS_execveat) return hci_raw_libc_result(hci_exec_syscall(n, a, b, c, d, e)); /* exec_watch.c */
  long r = hci_raw6(n, a, b, c, d, e, f);
  /* seccomp(SECCOMP_SET_MODE_STRICT / _FILTER, flags, prog) */
  if (n == SYS_seccomp && r >= 0 && (a == SECCOMP_SET_MODE_STRICT || a == SECCOMP_SET_MODE_FILTER))
    installed(a == SECCOMP_SET_MODE_STRICT ? SECCOMP_MODE_STRICT : SECCOMP_MODE_FILTER, (const void *)c, first);
  return hci_raw_libc_result(r);
}

const char *hci_seccomp_refusal(void) {
  switch (atomic_load(&sandboxed)) {
    case 1:
      return "the program installed a seccomp filter that kills or traps the system calls it does not list, and "
             "the check's own could end the process";
    case 2: return HCI_SECCOMP_STRICT_WHY;
    default: return NULL;
  }
}

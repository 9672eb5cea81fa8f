/* direct_exit.c - may the final check run inside a direct _exit?
 *
 * valgrind reports leaks however a process ends; heapcheck's final check is
 * an at-exit handler, which _exit skips.  leaks.c's _exit interposer asks
 * here whether it may run the check itself when _exit is called directly
 * (not from inside exit).  It may only when:
 *  - the checker is in one of heapcheck's modes: LeakSanitizer's check is an
 *    at-exit handler too, and LSan mode keeps its verdicts (a program that
 *    ends with _exit after a recoverable check expects no second report);
 *  - the process is the one the checker started in: a fork child's _exit
 *    (an exec that failed, a daemon's helper) is not the program ending,
 *    and a vfork child shares our memory and our stopped state: the kernel's
 *    pid (a system call, never a cached value) tells them apart;
 *  - the thread is not inside a signal handler: the handler may have
 *    interrupted this very thread inside malloc or the checker, holding a
 *    lock the check needs (a deadlock).  A handler runs on the alternate
 *    signal stack or above a signal frame (glibc's __restore_rt), so the
 *    walk up this thread's stack by .eh_frame must reach the outermost
 *    frame (_start, a thread's start routine) without meeting one.  When
 *    the walk stops early for another reason (code built without unwind
 *    tables: busybox, CHICKEN's generated C; more than 64 frames), every
 *    word of the stack is looked at instead: a signal frame leaves the
 *    trampoline's address at its base (hci_unwind_signal_frame_here), and
 *    without such a word no handler runs on this stack.  Before, such
 *    programs ended unchecked (valgrind checks them).
 *
 * Invariants: start_pid is written once at checker start-up, read-only
 * afterwards (a fork child inherits the parent's value, which is the point).
 * Locks: none; no malloc (the walk never allocates).
 */
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hc_checker.h"
#include "hc_stacks.h"

static struct {
  long start_pid;
} dx;
HC_PRIVATE_STATE(dx);

void hci_direct_exit_init(void) { dx.start_pid = syscall(SYS_getpid); }

/* A function of ours that is never on the stack of a thread calling _exit:
 * the walk below looks for it only to run to the outermost frame. */
static hc_noinline void never_on_stack(void) { __asm__ volatile("" ::: "memory"); }

const char *hci_direct_exit_refusal(void) {
  if (hci_chk.lsan) return "LSan mode (LeakSanitizer does not check at _exit)";
  if (!dx.start_pid || syscall(SYS_getpid) != dx.start_pid) return "a fork or vfork child";
  stack_t ss;
  if (sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK)) return "on the signal stack";
  /* No .eh_frame found through the symbolizer (its lock may be held by the
   * very code a handler interrupted): a static executable linked without
   * .eh_frame_hdr (gcc -static's default) cannot be walked, and is not
   * checked here. */
  hci_caller_t c;
  if (hci_unwind_find_caller((uintptr_t)&never_on_stack, 0, 0, &c) != HCI_CALLER_ABSENT &&
      hci_unwind_signal_frame_here())
    return "maybe inside a signal handler (a signal frame's return address is on the stack)";
  return NULL;
}

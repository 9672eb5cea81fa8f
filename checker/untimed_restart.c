/* untimed_restart.c - an untimed wait that the signal fallback's stop
 * interrupted goes on waiting, and still ends with EINTR for a signal of
 * the program's (x86-64; elsewhere such a wait keeps its EINTR).
 *
 * epoll_wait, poll, select, pause and their p-variants fail with EINTR
 * once a handler has run, SA_RESTART or not (signal(7)), and the
 * fallback's stop is a handler (stop_world.c): every check made a thread
 * blocked in epoll_wait(-1) return -1/EINTR.  Restarting the call from the
 * handler's context (as timed_waits.c does for a timed wait) is not safe
 * without a timeout: sigreturn puts back the program's mask first, and a
 * signal of the program's that comes between that and the restarted call
 * runs its handler without ending the wait - `while (!flag) pause();`
 * would then wait for good.
 *
 * So the handler returns, with every signal blocked, into a trampoline
 * that makes the wait's p-variant (epoll_pwait, ppoll, pselect6,
 * rt_sigsuspend) with the mask the program waited under: the kernel
 * installs it and starts waiting in one step, as for any p-variant, so a
 * signal of the program's pending or arriving then ends the wait with
 * EINTR after its handler runs.  The trampoline then puts back the
 * thread's mask and the registers the call had, and jumps to the
 * instruction after the original system call with the result in rax: the
 * program's libc sees its own call return.  A second check that
 * interrupts the trampoline's wait restarts that call where it is (the
 * trampoline's mask is still every signal: no race), so a wait that lasts
 * through many checks never nests.
 *
 * The trampoline's data (the saved registers and masks, struct area) sits
 * in the signal frame's siginfo, which the kernel's sigreturn never reads:
 * written after the handler is done with it, and the trampoline runs with
 * its stack pointer there, so nothing it or a nested signal pushes
 * reaches it (the program's red zone above the original stack pointer is
 * left alone).  Its unwind information gives the original stack pointer
 * and pc from there, so pthread_cancel of a thread waiting in it (glibc
 * 2.36 cancels such a wait asynchronously, from SIGCANCEL's handler) and
 * debuggers unwind through it into the program's frames.
 *
 * A seccomp filter: the trampoline's calls are in seccomp_probe.c's list,
 * so a filter the checker did not see installed that kills one of them
 * turns the restarts off (hci_untimed_forbid); one that answers with an
 * errno gets the call's EINTR back, as without us; one that refuses
 * rt_sigprocmask (the mask's restore) on the thread keeps the EINTR.
 *
 * io_uring_enter's wait for completions is its own p-variant (its mask
 * argument), without the extended argument.
 *
 * Not covered (keep their EINTR): waits without a p-variant (semop,
 * sigwaitinfo, msgrcv, msgsnd, io_getevents, io_uring_enter with
 * IORING_ENTER_EXT_ARG), and a wait whose mask pointer could not be read.
 * Locks: none.  No malloc.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <unistd.h>

#include "hc_checker.h"

#if defined(__x86_64__)

/* The trampoline's data, at its stack pointer (offsets fixed: the
 * assembly and its unwind information below use them). */
struct area {
  uint64_t mask;        /* 0x00  the thread's mask, put back after the wait */
  uintptr_t sp;         /* 0x08  the program's stack pointer (the frame's CFA) */
  uintptr_t pc;         /* 0x10  after the original system call instruction */
  long nr;              /* 0x18  the p-variant made */
  uintptr_t magic;      /* 0x20  AREA_MAGIC ^ the area's address: a second check knows it */
  long result;          /* 0x28  the p-variant's return value */
  const void *ps_ss;    /* 0x30  pselect6's {sigmask, size} pair, when ours */
  size_t ps_len;        /* 0x38 */
  uint64_t regs[6];     /* 0x40  rdi, rsi, rdx, r10, r8, r9 as the program had them */
};
_Static_assert(sizeof(struct area) <= 128, "struct area fits in the frame's siginfo");
_Static_assert(offsetof(struct area, sp) == 0x08 && offsetof(struct area, pc) == 0x10 &&
                   offsetof(struct area, result) == 0x28 && offsetof(struct area, regs) == 0x40,
               "the trampoline's offsets");
#define AREA_MAGIC 0x4863756e74696d65ull /* "Hcuntime" */

/* Entered from a signal return with every signal blocked, rsp at the area,
 * rax the p-variant's number and its arguments in place.  The CFA is the
 * program's stack pointer (read from the area: DW_OP_breg7 8, deref) and
 * the return address the saved pc (DW_OP_breg7 16); after rsp is put back,
 * rcx holds it. */
extern const char hci_untimed_tramp[], hci_untimed_tramp_after[];
__asm__(".text\n"
        ".p2align 4\n"
        ".globl hci_untimed_tramp\n"
        ".hidden hci_untimed_tramp\n"
        ".globl hci_untimed_tramp_after\n"
        ".hidden hci_untimed_tramp_after\n"
        ".type hci_untimed_tramp, @function\n"
        "hci_untimed_tramp:\n"
        "  .cfi_startproc\n"
        "  .cfi_escape 0x0f, 0x03, 0x77, 0x08, 0x06\n" /* DW_CFA_def_cfa_expression: *(rsp + 8) */
        "  .cfi_escape 0x10, 0x10, 0x02, 0x77, 0x10\n" /* DW_CFA_expression rip: rsp + 16 */
        "  syscall\n"
        "hci_untimed_tramp_after:\n"
        /* EPERM, EACCES, ENOSYS: a seccomp filter's answer (none of these
         * calls fails so otherwise): the call's EINTR, as without us. */
        "  cmpq $-1, %rax\n"
        "  je 1f\n"
        "  cmpq $-13, %rax\n"
        "  je 1f\n"
        "  cmpq $-38, %rax\n"
        "  jne 2f\n"
        "1:\n"
        "  movq $-4, %rax\n"
        "2:\n"
        "  movq %rax, 0x28(%rsp)\n"
        "  movl $14, %eax\n" /* rt_sigprocmask(SIG_SETMASK, &area->mask, NULL, 8) */
        "  movl $2, %edi\n"
        "  movq %rsp, %rsi\n"
        "  xorl %edx, %edx\n"
        "  movl $8, %r10d\n"
        "  syscall\n"
        "  movq 0x40(%rsp), %rdi\n"
        "  movq 0x48(%rsp), %rsi\n"
        "  movq 0x50(%rsp), %rdx\n"
        "  movq 0x58(%rsp), %r10\n"
        "  movq 0x60(%rsp), %r8\n"
        "  movq 0x68(%rsp), %r9\n"
        "  movq 0x28(%rsp), %rax\n"
        "  movq 0x10(%rsp), %rcx\n" /* rcx and r11: clobbered by any system call */
        "  movq $0, 0x20(%rsp)\n"
        "  movq 0x08(%rsp), %rsp\n"
        "  .cfi_def_cfa %rsp, 0\n"
        "  .cfi_register %rip, %rcx\n"
        "  jmp *%rcx\n"
        "  .cfi_endproc\n"
        ".size hci_untimed_tramp, .-hci_untimed_tramp\n");

static _Atomic bool forbidden;
HC_PRIVATE_STATE(forbidden);
void hci_untimed_forbid(void) { atomic_store(&forbidden, true); }

bool hci_untimed_again(void *ucv) {
  ucontext_t *uc = ucv;
  greg_t *g = uc->uc_mcontext.gregs;
  if ((uintptr_t)g[REG_RIP] != (uintptr_t)hci_untimed_tramp_after) return false;
  struct area a;
  if (g[REG_RAX] != -EINTR || hci_os_read(&a, (uintptr_t)g[REG_RSP], sizeof a) != sizeof a ||
      a.magic != (AREA_MAGIC ^ (uintptr_t)g[REG_RSP]))
    return true; /* ours, and done: its result goes to the program */
  g[REG_RAX] = a.nr;
  g[REG_RIP] -= 2; /* the trampoline's syscall instruction, under the same mask */
  return true;
}

bool hci_untimed_restart(void *ucv, void *si, long nr) {
  /* The trampoline puts the thread's mask back with rt_sigprocmask: a
   * filter that refuses it on this thread would leave every signal blocked. */
  uint64_t cur;
  if (atomic_load(&forbidden) || hci_raw6(SYS_rt_sigprocmask, SIG_BLOCK, 0, (long)&cur, 8, 0, 0) != 0) return false;
  ucontext_t *uc = ucv;
  greg_t *g = uc->uc_mcontext.gregs;
  const int arg[6] = {REG_RDI, REG_RSI, REG_RDX, REG_R10, REG_R8, REG_R9};
  struct area a;
  memset(&a, 0, sizeof a);
  memcpy(&a.mask, &uc->uc_sigmask, sizeof a.mask);
  for (int i = 0; i < 6; i++) a.regs[i] = (uint64_t)g[arg[i]];
  uintptr_t at = (uintptr_t)si;
  uintptr_t mask_at = at + offsetof(struct area, mask), ps_at = at + offsetof(struct area, ps_ss);
  a.ps_ss = (const void *)mask_at;
  a.ps_len = 8;
  /* The p-variant's arguments: the call's own, with our copy of the
   * thread's mask where it waits under the thread's mask. */
  greg_t p[6];
  for (int i = 0; i < 6; i++) p[i] = g[arg[i]];
  switch (nr) {
    case SYS_epoll_wait:
      if ((int)p[3] >= 0) return false;
      p[4] = (greg_t)mask_at, p[5] = 8;
      a.nr = SYS_epoll_pwait;
      break;
    case SYS_epoll_pwait:
#ifdef SYS_epoll_pwait2
    case SYS_epoll_pwait2:
#endif
      if (nr == SYS_epoll_pwait ? (int)p[3] >= 0 : p[3] != 0) return false;
      if (!p[4]) p[4] = (greg_t)mask_at, p[5] = 8;
      a.nr = nr;
      break;
    case SYS_poll:
      if ((int)p[2] >= 0) return false;
      p[2] = 0, p[3] = (greg_t)mask_at, p[4] = 8;
      a.nr = SYS_ppoll;
      break;
    case SYS_ppoll:
      if (p[2]) return false;
      if (!p[3]) p[3] = (greg_t)mask_at, p[4] = 8;
      a.nr = SYS_ppoll;
      break;
    case SYS_select:
      if (p[4]) return false;
      p[5] = (greg_t)ps_at;
      a.nr = SYS_pselect6;
      break;
    case SYS_pselect6: {
      if (p[4]) return false;
      /* {sigmask, size}: a NULL sigmask (or pair) waits under the thread's mask. */
      const void *ss = NULL;
      if (p[5] && hci_os_read(&ss, (uintptr_t)p[5], sizeof ss) != sizeof ss) return false;
      if (!ss) p[5] = (greg_t)ps_at;
      a.nr = SYS_pselect6;
      break;
    }
#ifdef SYS_io_uring_enter
    case SYS_io_uring_enter:
      /* Its own p-variant: a wait for completions without the extended
       * argument takes its mask as fifth argument.  Its EINTR says it
       * submitted nothing (a call that did returns the count): the restart
       * submits nothing. */
      if (!(p[3] & HCI_IORING_GETEVENTS) || (p[3] & ~(greg_t)(HCI_IORING_KNOWN & ~HCI_IORING_EXT_ARG))) return false;
      p[1] = 0;
      if (!p[4]) p[4] = (greg_t)mask_at, p[5] = 8;
      a.nr = SYS_io_uring_enter;
      break;
#endif
    case SYS_pause:
      p[0] = (greg_t)mask_at, p[1] = 8;
      a.nr = SYS_rt_sigsuspend;
      break;
    case SYS_rt_sigsuspend:
      a.nr = SYS_rt_sigsuspend;
      break;
    default:
      return false;
  }
  a.sp = (uintptr_t)g[REG_RSP];
  a.pc = (uintptr_t)g[REG_RIP];
  a.magic = AREA_MAGIC ^ at;
  memcpy(si, &a, sizeof a);
  for (int i = 0; i < 6; i++) g[arg[i]] = p[i];
  g[REG_RAX] = a.nr;
  g[REG_RSP] = (greg_t)at;
  g[REG_RIP] = (greg_t)(uintptr_t)hci_untimed_tramp;
  uint64_t all = ~0ull;
  memcpy(&uc->uc_sigmask, &all, sizeof all);
  return true;
}

#else
void hci_untimed_forbid(void) {}
bool hci_untimed_again(void *uc) {
  (void)uc;
  return false;
}
bool hci_untimed_restart(void *uc, void *si, long nr) {
  (void)uc, (void)si, (void)nr;
  return false;
}
#endif

/* stop_world.c - stopping every other thread of the process.
 *
 * Two methods (design decisions D11, D11b):
 *  - ptrace (the default): a helper task attaches to every thread with
 *    PTRACE_SEIZE + PTRACE_INTERRUPT and reads its registers (stop_ptrace.c).
 *    No signal is involved: handlers, masks and sigwait threads of the
 *    program never see the stop, restartable system calls restart.
 *  - signals (the fallback when ptrace is refused - another tracer such as
 *    gdb or strace, seccomp, Yama, a non-dumpable process - or when
 *    HEAP_CHECK_STOP_METHOD=signal): the protocol below.  Named in one
 *    warning the first time it is used.
 * When the checking thread is alone, nothing is stopped at all.
 *
 * Signal protocol (Boehm's signal scheme, LSan's re-listing):
 *  1. The caller holds the checker lock and every allocator lock and runs
 *     inside hci_with_loader_lock, so no thread we stop can hold one of them.
 *  2. Install our handler for the stop signal (the program's action is put
 *     back at resume), list /proc/self/task with raw getdents64 (opendir
 *     mallocs) and send each other thread one queued real-time signal
 *     (rt_tgsigqueueinfo, the slot index as a hint in si_value).
 *  3. The handler saves errno, finds its slot (by tid), copies sp, pc, the
 *     thread pointer and the registers of the interrupted context into it,
 *     marks it STOPPED, bumps the ack counter and futex-wakes the checker,
 *     then futex-waits until `released` reaches its stop generation.  A
 *     signal that is not ours (another sender) goes to the program's handler.
 *  4. Re-list the tasks until no new tid appears: a thread that was running
 *     when it was signalled may have created threads before it stopped.
 *  5. Threads that do not answer by the deadline (HEAP_CHECK_STOP_TIMEOUT_MS,
 *     default 1000: they block the signal or are stuck in the kernel) are
 *     NOT_STOPPED; those that vanish (tgkill(0) says ESRCH) or are zombies
 *     are EXITED.  A check with a NOT_STOPPED thread is incomplete (leaks.c
 *     says so and fails); roots.c still scans their whole stack and TLS.
 *  6. Read /proc/self/maps and compute every thread's stack range.
 *  7. Resume: unpublish the slots, wait until no handler is inside its slot
 *     section, publish `released` and wake everybody, then set the stop
 *     signal to SIG_IGN (which discards the signals still queued for
 *     threads that never took them) and restore the program's action.
 *
 * Invariants:
 *  - A handler writes a slot only after moving it SIGNALLED -> FILLING with a
 *    CAS, and only while it is counted in stw.inside; the checker moves
 *    SIGNALLED -> NOT_STOPPED/EXITED with a CAS, so a late handler never
 *    writes a slot the checker has already judged.  Slot memory is moved or
 *    freed only after unpublishing it and seeing stw.inside == 0.
 *  - After its slot section a handler touches only the static stw words, so
 *    the world may be destroyed while stopped threads are still waking up.
 *  - Nothing between stop and resume calls malloc, stdio or takes a lock;
 *    memory comes from hci_os_map (a plain mmap system call).
 * Locks: none of its own; see the caller's requirements above.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <time.h>
#include <unistd.h>
#include <link.h>
#if defined(__aarch64__)
#include <asm/sigcontext.h>
#elif defined(__x86_64__)
#include <cpuid.h>
#endif

#include "hc_checker.h"

#define MAX_PASSES 32            /* re-listing rounds before giving up on thread creators */
#define SIG_MAGIC 0x4863u        /* high half of si_value: the signal is ours */
#define POLL_MIN_NS 250000ull    /* unanswered threads are checked for exit after this, */
#define POLL_MAX_NS 10000000ull  /* then at doubling intervals up to this */
#define DEFAULT_TIMEOUT_MS 1000
#define RED_ZONE 128             /* x86-64 and aarch64 leaf functions may use this much below sp */

extern void *__libc_stack_end;

static struct {
  hci_lock_t init_lock;
  _Atomic int ready;
  int signo;
  int timeout_ms;
  bool use_ptrace;                /* cleared for good when ptrace is refused */
  const char *no_ptrace_why;      /* why, when it was cleared before a stop (seccomp_probe.c) */
  bool yama;                      /* Yama restricts ptrace: allow the helper with PR_SET_PTRACER */
  bool translated;                /* this stop's task list names tids of another pid namespace */
  bool warned_fallback;
  bool warned_transient;          /* the helper could not be made once (EAGAIN, ENOMEM): said once */
  struct sigaction saved;         /* the program's action for signo, during a signal stop */
  _Atomic bool installed;         /* our handler is the kernel's action (saved and installed: act_lock) */
  _Atomic int act_lock;           /* its holder's tid; taken with every signal blocked: install,
                                     restore, chain, the program's sigaction (sigaction_watch.c) */
  /* handler <-> checker words; futex words are ints */
  _Atomic(hci_thread_t *) slots;  /* published slot array, NULL outside a stop */
  _Atomic int nslots;
  _Atomic int gen;                /* generation of the current stop */
  _Atomic int released;           /* generation released last; handlers wait for it */
  _Atomic int acks;               /* bumped by every acknowledging handler (futex word) */
  _Atomic int inside;             /* handlers currently in their slot section */
  _Atomic int pid;                /* ours, for telling our signals from the program's */
} stw = {.init_lock = HCI_LOCK_INIT(HC_RANK_STW_INIT)};
HC_PRIVATE_STATE(stw);

static long futex(_Atomic int *addr, int op, int val, const struct timespec *ts) {
  return syscall(SYS_futex, (int *)addr, op, val, ts, NULL, 0);
}

/* ---------------------------------------------------------------- handler */

#if defined(__x86_64__)
/* Extended register state in the signal frame (XSAVE standard format after
 * the 512-byte legacy area): the upper halves of ymm0-15 (component 2) and,
 * with AVX-512, the upper halves of zmm0-15 (6) and all of zmm16-31 (7).
 * glibc's memmove keeps data in ymm16+ on AVX-512 machines, so a pointer
 * being moved can live only there.  Offsets come from CPUID leaf 0xD. */
#define FP_SW_BYTES 464          /* struct _fpx_sw_bytes inside the legacy area */
#define FP_XSTATE_MAGIC 0x46505853u
#define XSAVE_HEADER 512         /* xstate_bv: components present in the frame */
static const int xcomp_id[3] = {2, 6, 7};
static struct {
  uint32_t off, size;
} xcomp[3];
HC_PRIVATE_STATE(xcomp);

static void xstate_init(void) {
  if (__get_cpuid_max(0, NULL) < 0xd) return;
  for (int i = 0; i < 3; i++) {
    unsigned a, b, c, d;
    __cpuid_count(0xd, xcomp_id[i], a, b, c, d);
    xcomp[i].size = a;
    xcomp[i].off = b;
  }
}

int hci_xsave_copy(uintptr_t *regs, int n, const void *xsave, size_t xsize) {
  const char *base = xsave;
  uint64_t bv;
  if (xsize < XSAVE_HEADER + 8) return n;
  memcpy(&bv, base + XSAVE_HEADER, 8);
  for (int i = 0; i < 3; i++) {
    uint32_t off = xcomp[i].off, size = xcomp[i].size;
    if (!size || !(bv >> xcomp_id[i] & 1) || off < XSAVE_HEADER || off + size > xsize) continue;
    int words = (int)(size / sizeof(uintptr_t));
    if (words > HCI_MAX_REGS - n) words = HCI_MAX_REGS - n;
    memcpy(&regs[n], base + off, (size_t)words * sizeof(uintptr_t));
    n += words;
  }
  return n;
}

static int copy_xstate(uintptr_t *regs, int n, const void *fp) {
  const char *base = fp;
  uint32_t magic, xsize;
  memcpy(&magic, base + FP_SW_BYTES, 4);
  if (magic != FP_XSTATE_MAGIC) return n;
  memcpy(&xsize, base + FP_SW_BYTES + 16, 4);
  return hci_xsave_copy(regs, n, fp, xsize);
}
#else
int hci_xsave_copy(uintptr_t *regs, int n, const void *xsave, size_t xsize) {
  (void)regs;
  (void)xsave;
  (void)xsize;
  return n;
}
#endif

/* Copies the interrupted context's registers; returns the count. */
static int copy_regs(hci_thread_t *t, const ucontext_t *uc) {
  int n = 0;
#if defined(__x86_64__)
  const greg_t *g = uc->uc_mcontext.gregs;
  t->sp = (uintptr_t)g[REG_RSP];
  t->pc = (uintptr_t)g[REG_RIP];
  for (int i = REG_R8; i <= REG_RIP && n < HCI_MAX_REGS; i++) t->regs[n++] = (uintptr_t)g[i];
  if (uc->uc_mcontext.fpregs) {
    for (int i = 0; i < 16 && n + 2 <= HCI_MAX_REGS; i++) {
      memcpy(&t->regs[n], &uc->uc_mcontext.fpregs->_xmm[i], 16);
      n += 2;
    }
    n = copy_xstate(t->regs, n, uc->uc_mcontext.fpregs);
  }
#elif defined(__aarch64__)
  const mcontext_t *mc = &uc->uc_mcontext;
  t->sp = (uintptr_t)mc->sp;
  t->pc = (uintptr_t)mc->pc;
  for (int i = 0; i < 31; i++) t->regs[n++] = (uintptr_t)mc->regs[i];
  t->regs[n++] = (uintptr_t)mc->sp;
  t->regs[n++] = (uintptr_t)mc->pc;
  const unsigned char *p = (const unsigned char *)mc->__reserved;
  const unsigned char *end = p + sizeof mc->__reserved;
  while (p + sizeof(struct _aarch64_ctx) <= end) {
    const struct _aarch64_ctx *h = (const struct _aarch64_ctx *)p;
    if (h->magic == 0 || h->size == 0) break;
    if (h->magic == FPSIMD_MAGIC) {
      const struct fpsimd_context *f = (const struct fpsimd_context *)p;
      for (int i = 0; i < 32 && n + 2 <= HCI_MAX_REGS; i++) {
        memcpy(&t->regs[n], &f->vregs[i], 16);
        n += 2;
      }
      break;
    }
    p += h->size;
  }
#else
#error "stop_world.c: registers of this architecture"
#endif
  return n;
}

static hci_thread_t *find_slot(hci_thread_t *slots, int n, int tid, int hint) {
  if (hint >= 0 && hint < n && slots[hint].tid == tid) return &slots[hint];
  for (int i = 0; i < n; i++)
    if (slots[i].tid == tid) return &slots[i];
  return NULL;
}

/* The program's own handler for a signal of that number that we did not send. */
/* The action lock: every holder has every signal blocked first (a handler
 * of ours interrupting a holder on its own thread would wait for good;
 * the stop handler runs with every signal blocked, its sa_mask); a word of
 * its holder's tid (take_owned). */
/* Takes a spin word that holds its owner's tid (0: free).  An owner that
 * is no thread of this process (tgkill says ESRCH: a fork child inherited
 * the word held by another thread of the parent's) is taken over. */
static void take_owned(_Atomic int *word, int self) {
  for (unsigned round = 0;;) {
    int owner = 0;
    if (atomic_compare_exchange_weak_explicit(word, &owner, self, memory_order_acquire, memory_order_relaxed))
      return;
    if (owner && hci_raw6(SYS_tgkill, hci_raw6(SYS_getpid, 0, 0, 0, 0, 0, 0), owner, 0, 0, 0, 0) == -ESRCH &&
        atomic_compare_exchange_strong(word, &owner, self))
      return;
    hci_os_backoff(&round);
  }
}

static void act_lock(sigset_t *prev) {
  sigset_t all;
  sigfillset(&all);
  if (prev) hci_raw6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)prev, 8, 0, 0);
  int self = hci_os_tid();
  take_owned(&stw.act_lock, self > 0 ? self : -1); /* -1: an id unknown (never 0, "free") */
}
static void act_unlock(const sigset_t *prev) {
  atomic_store_explicit(&stw.act_lock, 0, memory_order_release);
  if (prev) hci_raw6(SYS_rt_sigprocmask, SIG_SETMASK, (long)prev, 0, 8, 0, 0);
}

/* A signal of the program's with the fallback's number, during a stop: what
 * its own action would have done.  SIG_DFL (a real-time signal's default
 * ends the process): that action put back and the signal queued again to
 * this thread with its own siginfo, delivered as this handler returns (it
 * was swallowed: the process lived on in 11 of 30 runs).  A handler: run
 * under the mask the kernel would have set (the interrupted one, its
 * sa_mask and the signal itself but with SA_NODEFER; this handler blocks
 * every signal), and SA_RESETHAND honoured (a second signal ran it again).
 * Not emulated: SA_ONSTACK, and a missing SA_RESTART (a call the signal
 * interrupted restarts, as this handler's flag says).  Not inlined: its
 * copies (some 400 bytes) in stop_handler's frame ran a thread parked with
 * little stack left out of it at the stop's own signal (fx_hostile
 * tight-stack, 139). */
static hc_noinline void chain(int sig, siginfo_t *si, void *uctx) {
  act_lock(NULL);
  struct sigaction o = stw.saved;
  /* By the handler's value alone: SIG_DFL and SIG_IGN share the union with
   * sa_sigaction, and the kernel's own SA_RESETHAND reset leaves
   * SA_SIGINFO set beside SIG_DFL (read back, it looked like no handler at
   * all, and the signal was dropped). */
  bool handler = o.sa_handler != SIG_DFL && o.sa_handler != SIG_IGN;
  if (handler && (o.sa_flags & SA_RESETHAND)) {
    stw.saved.sa_handler = SIG_DFL;
    stw.saved.sa_flags &= ~(SA_SIGINFO | SA_RESETHAND);
  }
  if (o.sa_handler == SIG_DFL) {
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    hci_real_sigaction(sig, &dfl, NULL);
    atomic_store(&stw.installed, false); /* the process ends: nothing to put back */
    act_unlock(NULL);
    long pid = hci_raw6(SYS_getpid, 0, 0, 0, 0, 0, 0), tid = hci_os_tid();
    siginfo_t again = *si;
    hci_raw6(SYS_rt_tgsigqueueinfo, pid, tid, sig, (long)&again, 0, 0);
    return;
  }
  act_unlock(NULL);
  if (!handler) return; /* SIG_IGN */
  uint64_t mask, all = ~0ull, extra;
  memcpy(&mask, &((ucontext_t *)uctx)->uc_sigmask, sizeof mask);
  memcpy(&extra, &o.sa_mask, sizeof extra);
  mask |= extra;
  if (!(o.sa_flags & SA_NODEFER)) mask |= 1ull << (sig - 1);
  hci_raw6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&mask, 0, 8, 0, 0);
  if (o.sa_flags & SA_SIGINFO) o.sa_sigaction(sig, si, uctx);
  else o.sa_handler(sig);
  hci_raw6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&all, 0, 8, 0, 0);
}

/* Set by the checker's constructor when checks can run (hci_stw_watch_actions). */
static _Atomic bool act_watch;
void hci_stw_watch_actions(void) { atomic_store(&act_watch, true); }

int hci_stw_sigaction(int sig, const struct sigaction *act, struct sigaction *old) {
  /* Any real-time number under the lock once checks can run: a call that
   * found nothing installed and then reached the kernel after the install
   * would replace the handler just installed (and the number is known
   * from the first check's set-up only). */
  if (!atomic_load_explicit(&act_watch, memory_order_relaxed) || sig < SIGRTMIN || sig > SIGRTMAX)
    return hci_real_sigaction(sig, act, old);
  sigset_t prev;
  act_lock(&prev);
  int r = 0;
  if (atomic_load_explicit(&stw.installed, memory_order_relaxed) && sig == stw.signo) {
    struct sigaction was = stw.saved;
    if (act) stw.saved = *act;
    if (old) *old = was;
  } else {
    r = hci_real_sigaction(sig, act, old);
  }
  act_unlock(&prev);
  return r;
}

/* The handler's work runs on a stack of ours: the signal lands on whatever
 * the thread has left of its own, and a thread on a 16 KiB stack deep in
 * recursion died of SIGSEGV (status 139) where a signal of the program's,
 * with an empty handler, still fitted (tinysig in docs/validation.md,
 * session 20).  On the thread's stack stay the kernel's signal frame - any
 * signal's - and stop_handler's few words.  One stack for all handlers,
 * taken in turn: the work is a few hundred instructions, and the parking
 * is done back on the thread's stack (its slot may be gone by then). */
#define HANDLER_STACK 16384
static char handler_stack[HANDLER_STACK] __attribute__((aligned(64)));
HC_PRIVATE_STATE(handler_stack); /* registers pass through it: never a root */
/* The thread on handler_stack, 0 when free.  A fork child made while a
 * handler was on it inherits the word: an owner that is no thread of this
 * process (tgkill says ESRCH) is taken over, or the child's first signal
 * stop would spin in every handler for good. */
static _Atomic int handler_stack_owner;
static void take_handler_stack(int self) { take_owned(&handler_stack_owner, self); }

struct fill { hci_thread_t *me; const ucontext_t *uc; };
static void fill_slot(void *arg) {
  const struct fill *f = arg;
  hci_thread_t *me = f->me;
  me->nregs = copy_regs(me, f->uc);
  hci_timed_signal_seen(me);
  me->tp = (uintptr_t)__builtin_thread_pointer();
  /* The interrupted code's alternate stack, as the kernel saved it with the
   * frame (sigaltstack() here would judge our own stack): its settings, not
   * whether sp is on it (no SS_ONSTACK there), so sp is compared. */
  const stack_t *ss = &f->uc->uc_stack;
  if (!(ss->ss_flags & SS_DISABLE) && ss->ss_size && me->sp - (uintptr_t)ss->ss_sp < ss->ss_size) {
    me->on_altstack = true;
    me->alt_lo = (uintptr_t)ss->ss_sp;
    me->alt_hi = (uintptr_t)ss->ss_sp + ss->ss_size;
  }
  atomic_store_explicit(&me->state, HCI_T_STOPPED, memory_order_release);
  atomic_fetch_add(&stw.acks, 1);
  futex(&stw.acks, FUTEX_WAKE_PRIVATE, 1, NULL);
}

static void stop_handler(int sig, siginfo_t *si, void *uctx) {
  int saved_errno = errno;
  uintptr_t value = si ? (uintptr_t)si->si_value.sival_ptr : 0;
  if (!si || si->si_code != SI_QUEUE || si->si_pid != atomic_load(&stw.pid) || value >> 32 != SIG_MAGIC) {
    chain(sig, si, uctx);
    errno = saved_errno;
    return;
  }
  atomic_fetch_add(&stw.inside, 1);
  hci_thread_t *slots = atomic_load(&stw.slots);
  int gen = atomic_load(&stw.gen);
  bool wait = false;
  /* Raw system calls on this stack: syscall() is ours too (seccomp_watch.c), with a va_list frame. */
  int self = hci_os_tid();
  if (slots) {
    int n = atomic_load_explicit(&stw.nslots, memory_order_acquire);
    hci_thread_t *me = find_slot(slots, n, self, (int)(uint32_t)value);
    if (me) {
      int expect = HCI_T_SIGNALLED;
      if (atomic_compare_exchange_strong(&me->state, &expect, HCI_T_FILLING)) {
        struct fill f = {me, (const ucontext_t *)uctx};
        take_handler_stack(self);
        hci_call_on(&f, fill_slot, handler_stack + HANDLER_STACK);
        atomic_store_explicit(&handler_stack_owner, 0, memory_order_release);
      }
      /* Judged NOT_STOPPED already (late): park anyway, it can only help. */
      wait = true;
    }
  }
  atomic_fetch_sub(&stw.inside, 1);
  if (wait) {
    for (;;) {
      int r = atomic_load(&stw.released);
      if ((int)((unsigned)r - (unsigned)gen) >= 0) break;
      hci_raw6(SYS_futex, (long)&stw.released, FUTEX_WAIT_PRIVATE, r, 0, 0, 0);
    }
    /* Let go: a wait the signal ended restarts (timed_waits.c, untimed_restart.c). */
    hci_signal_ctx_t ctx = {uctx, si};
    take_handler_stack(self);
    hci_call_on(&ctx, hci_timed_signal_restart, handler_stack + HANDLER_STACK);
    atomic_store_explicit(&handler_stack_owner, 0, memory_order_release);
  }
  errno = saved_errno;
}

/* ---------------------------------------------------------------- setup */

int hci_stop_signal(void) { return stw.signo; }

bool hci_stop_signal_ours(int sig, const siginfo_t *si) {
  int pid = atomic_load(&stw.pid);
  return pid && sig == stw.signo && si && si->si_code == SI_QUEUE && si->si_pid == pid &&
         (uintptr_t)si->si_value.sival_ptr >> 32 == SIG_MAGIC;
}

/* For the signal stop only: our handler replaces the program's action
 * until restore_handler puts it back. */
static void install_handler(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = stop_handler;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  /* Nothing else may run on this thread while it is parked: a handler of
   * the program's could move a pointer out of the scanned range. */
  sigfillset(&sa.sa_mask);
  /* glibc's sigfillset leaves out its own SIGCANCEL and SIGSETXID (32 and
   * 33), and sigaddset refuses them; the kernel blocks what the mask says.
   * A thread cancelled while its handler was in the slot section (its wait,
   * a cancellation point, runs with asynchronous cancellation) unwound out
   * of it without leaving stw.inside: the checker waited for it for good
   * (signal_resume; a pthread_cancel beside back-to-back checks). */
  ((unsigned long *)(void *)&sa.sa_mask)[0] |= 3ul << 31;
  sigset_t prev;
  act_lock(&prev);
  if (hci_real_sigaction(stw.signo, &sa, &stw.saved) == 0) atomic_store(&stw.installed, true);
  act_unlock(&prev);
}

static void restore_handler(bool discard) {
  if (!atomic_load(&stw.installed)) return;
  sigset_t prev;
  act_lock(&prev);
  /* SIG_IGN discards what is still queued for threads that block the signal
   * (it would reach the program's action later); then the program's own.
   * Only when a thread did not take ours (discard): SIG_IGN also discards
   * the program's own signals of that number queued to threads while they
   * were parked in the handler, whose release has not reached them yet (13
   * to 58 of 2000 pthread_sigqueue'd ones lost beside back-to-back checks,
   * 0 without it). */
  if (discard) {
    struct sigaction ign;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    hci_real_sigaction(stw.signo, &ign, NULL);
  }
  /* stw.saved: the program's, as it last set it meanwhile (sigaction_watch.c). */
  hci_real_sigaction(stw.signo, &stw.saved, NULL);
  atomic_store(&stw.installed, false);
  act_unlock(&prev);
}

static void read_options(void) {
  int def = SIGRTMAX - 3;
  /* Only a real-time signal: an ordinary one (SIGINT, SIGCHLD, SIGTERM...)
   * means something to the program or its environment.  glibc reserves the
   * two below SIGRTMIN (cancellation, setxid). */
  int s = (int)hci_opt_int_or(HCO_HEAP_CHECK_STOP_SIGNAL, def);
  if (s < SIGRTMIN || s > SIGRTMAX) {
    hci_warn("HEAP_CHECK_STOP_SIGNAL=%d is not a real-time signal (%d..%d); using %d", s, SIGRTMIN, SIGRTMAX,
             def);
    s = def;
  }
  stw.signo = s;
  hci_os_hold_not(s); /* a sampled allocation never holds it back (base/os.c) */
  stw.timeout_ms = (int)hci_opt_int(HCO_HEAP_CHECK_STOP_TIMEOUT_MS);
  stw.use_ptrace = true;
  const char *m = hci_opt_str(HCO_HEAP_CHECK_STOP_METHOD);
  if (m && *m && strcmp(m, "ptrace") != 0) {
    if (strcmp(m, "signal") == 0) stw.use_ptrace = false;
    else hci_warn("HEAP_CHECK_STOP_METHOD=%s is neither ptrace nor signal; using ptrace", m);
  }
  char buf[16];
  int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ssize_t n = read(fd, buf, sizeof buf - 1);
    stw.yama = n > 0 && buf[0] != '0';
    close(fd);
  }
}

/* fork: the set-up's lock, taken by fork_prepare (runtime/init.c) with
 * the others: a child forked while another thread set up its first check
 * inherited it held, and its own first check waited for good. */
void hci_stw_fork_locks(hci_lock_fn *each) { each(&stw.init_lock); }

static void stw_init_once(void) {
  if (atomic_load_explicit(&stw.ready, memory_order_acquire)) return;
  hci_lock(&stw.init_lock);
  if (!atomic_load_explicit(&stw.ready, memory_order_relaxed)) {
    read_options();
#if defined(__x86_64__)
    xstate_init();
#endif
    hci_tls_init();
    hci_roots_init();
    /* Our words hold no heap pointers, but they are globals: keep them out. */
    hci_roots_exclude((uintptr_t)&stw, (uintptr_t)(&stw + 1));
    atomic_store_explicit(&stw.ready, 1, memory_order_release);
  }
  hci_unlock(&stw.init_lock);
}

/* ---------------------------------------------------------------- slots */

static bool grow_slots(hci_world_t *w, int need) {
  int ncap = w->cap ? w->cap : 64;
  while (ncap < need) ncap *= 2;
  hci_thread_t *nt = hci_os_map((size_t)ncap * sizeof(hci_thread_t));
  if (!nt) return false;
  if (w->threads) {
    /* Unpublish, wait out handlers that may be looking at the old array. */
    hci_thread_t *was = atomic_exchange(&stw.slots, NULL);
    for (unsigned round = 0; atomic_load(&stw.inside);) hci_os_backoff(&round);
    memcpy(nt, w->threads, (size_t)w->nthreads * sizeof(hci_thread_t));
    hci_os_unmap(w->threads, (size_t)w->cap * sizeof(hci_thread_t));
    w->threads = nt;
    w->cap = ncap;
    if (was) atomic_store(&stw.slots, nt);
  } else {
    w->threads = nt;
    w->cap = ncap;
  }
  return true;
}

void hci_world_no_ptrace(const char *why) {
  stw_init_once();
  stw.use_ptrace = false;
  stw.no_ptrace_why = why;
}

int hci_world_init(hci_world_t *w) {
  stw_init_once();
  hci_proc_keep();
  memset(w, 0, sizeof *w);
  bool kept;
  int fd = hci_proc_open(HCI_PROC_TASK, &kept);
  int n = hci_tasks_read(fd, NULL, NULL);
  hci_proc_close(fd, kept);
  if (!grow_slots(w, 2 * (n > 0 ? n : 1) + 16)) return -1;
  hci_maps_read(&w->maps); /* sizes the buffers now, so the stop rarely maps any */
  return 0;
}

void hci_world_destroy(hci_world_t *w) {
  HC_CHECK(!w->active, "hci_world_destroy while the world is stopped");
  if (w->threads) hci_os_unmap(w->threads, (size_t)w->cap * sizeof(hci_thread_t));
  hci_maps_free(&w->maps);
  memset(w, 0, sizeof *w);
}

struct collect {
  hci_world_t *w;
  int *tids;
  int ntids, cap;
  bool overflow;
};

static bool known(const hci_world_t *w, int tid) {
  for (int i = 0; i < w->nthreads; i++)
    if (w->threads[i].tid == tid) return true;
  return false;
}

static void collect_fn(void *ctx, int tid) {
  struct collect *c = ctx;
  if (known(c->w, tid)) return;
  if (c->ntids == c->cap) {
    c->overflow = true;
    return;
  }
  c->tids[c->ntids++] = tid;
}

int hci_task_zombie(int taskfd, int tid) {
  char task[16], buf[512];
  /* Read through the task list's descriptor, not by path: a program that
   * chrooted (or lost /proc from its mount namespace) has no /proc/self to
   * open, and "no such file" then meant "gone": every thread that refused
   * ptrace looked exited, none was stopped or scanned, and no warning said
   * so.  Only a group leader can be a zombie thread; its stat is also the
   * process's, "../stat", under the numbers of any /proc. */
  if (taskfd < 0) return -1;
  if (tid == getpid()) hci_snprintf(task, sizeof task, "..");
  else if (stw.translated) return -1;
  else hci_snprintf(task, sizeof task, "%d", tid);
  long n = hci_task_file(taskfd, task, "stat", buf, sizeof buf);
  if (n < 0) return n == -ENOENT || n == -ESRCH ? 1 : -1;
  if (n == 0) return 1; /* reaped meanwhile */
  /* 'Z' or 'X' after the command: a zombie thread group leader (it called
   * pthread_exit) never runs again. */
  const char *p = hci_stat_field(buf, 3);
  return p && (*p == 'Z' || *p == 'X');
}

/* Whether thread tid blocks the stop signal now (SigBlk of its status,
 * read through the task list's descriptor).  Such a thread does not run the
 * handler: the signal waited queued for it until the resume discarded it,
 * and its own signalfd read or sigwait took it first - a signal the program
 * never sent (a thread reading a signalfd on the full set, or waiting in
 * sigwaitinfo on it, got one a check).
 * It is signalled once it unblocks it before the deadline (pthread_create
 * and fork block every signal for a moment), else it is NOT_STOPPED as
 * before.  Not known under another namespace's /proc (the names are not our
 * tids); a thread that blocks it between the read and the send still gets it. */
static uintptr_t hex_field(const char **c) {
  uintptr_t v = 0;
  while (**c == ' ') (*c)++;
  if ((*c)[0] == '0' && (*c)[1] == 'x') *c += 2;
  for (;; (*c)++) {
    int d = **c >= '0' && **c <= '9' ? **c - '0' : **c >= 'a' && **c <= 'f' ? **c - 'a' + 10 : -1;
    if (d < 0) break;
    v = v << 4 | (unsigned)d;
  }
  return v;
}

/* A line of /proc/<tid>/syscall: "nr arg1 .. arg6 sp pc" while the task
 * is in a call; false for "running", "-1 sp pc" and an unreadable one. */
struct sys_line {
  long nr;
  uintptr_t args[6], sp, pc;
};
static bool parse_syscall(const char *buf, struct sys_line *l) {
  const char *c = buf;
  l->nr = 0;
  while (*c >= '0' && *c <= '9') l->nr = l->nr * 10 + (*c++ - '0');
  if (c == buf || *c != ' ') return false;
  for (int i = 0; i < 6; i++) l->args[i] = hex_field(&c);
  l->sp = hex_field(&c);
  l->pc = hex_field(&c);
  return true;
}

/* The call into t (timed_waits.c restarts a timed wait the signal
 * interrupted when it is still this call). */
static void note_syscall(hci_thread_t *t, const struct sys_line *l) {
  memcpy(t->sys_args, l->args, sizeof t->sys_args);
  t->sys_sp = l->sp;
  t->sys_pc = l->pc;
  if (t->sys_pc) t->sys_nr = l->nr;
}

static bool blocks_stop(int taskfd, hci_thread_t *t) {
  char task[16], buf[2048];
  int tid = t->tid;
  t->sys_nr = -1;
  if (taskfd < 0 || stw.translated) return false;
  if (tid == getpid()) hci_snprintf(task, sizeof task, "..");
  else hci_snprintf(task, sizeof task, "%d", tid);
  if (hci_task_file(taskfd, task, "status", buf, sizeof buf) <= 0) return false;
  uint64_t bit = 1ull << (stw.signo - 1);
  bool blocked = (hci_status_mask(buf, "\nSigBlk:") & bit) != 0;
  /* Its call: for the message if it never unblocks the signal
   * (hci_world_why_incomplete), and for the wait below.  (Unreadable: not
   * dumpable; "running".) */
  struct sys_line l;
  if (hci_task_file(taskfd, task, "syscall", buf, sizeof buf) <= 0 || !parse_syscall(buf, &l)) return blocked;
  note_syscall(t, &l);
  if (blocked) return true;
  /* sigwaitinfo and sigtimedwait unblock the set they wait for while they
   * wait (the kernel's real_blocked): the signal would be their result. */
  uint64_t waited = 0;
  return l.nr == SYS_rt_sigtimedwait && hci_os_read(&waited, l.args[0], sizeof waited) == sizeof waited &&
         (waited & bit);
}

static void send_stop(hci_world_t *w, int idx, int pid, int taskfd) {
  hci_thread_t *t = &w->threads[idx];
  t->unsent = blocks_stop(taskfd, t);
  if (t->unsent) return; /* wait_acks asks again */
  siginfo_t si;
  memset(&si, 0, sizeof si);
  si.si_signo = stw.signo;
  si.si_code = SI_QUEUE;
  si.si_pid = pid;
  si.si_uid = getuid();
  si.si_value.sival_ptr = (void *)((uintptr_t)SIG_MAGIC << 32 | (uint32_t)idx);
  if (syscall(SYS_rt_tgsigqueueinfo, pid, t->tid, stw.signo, &si) == 0) return;
  int expect = HCI_T_SIGNALLED;
  int to = errno == ESRCH ? HCI_T_EXITED : HCI_T_NOT_STOPPED;
  if (errno == EAGAIN) w->queue_full = true; /* the queue is full (RLIMIT_SIGPENDING) */
  atomic_compare_exchange_strong(&t->state, &expect, to);
}

/* True when a thread's call nr (first argument a0) waits for a vfork
 * child: vfork, or clone/clone3 with CLONE_VFORK.  glibc's posix_spawn and
 * system() so wait with every signal blocked; the thread takes the signal
 * (or ptrace's interrupt) once the child has exec'd or exited, which a
 * loaded machine can delay past the timeout: 1 of 200 checks beside a
 * posix_spawn loop failed under 16 busy processes.  The ptrace helper asks
 * too (hci_os_read saves errno, as for its timed restarts). */
static bool vfork_call(long nr, uintptr_t a0) {
  uint64_t flags = 0;
  if (nr == SYS_vfork) return true;
  if (nr == SYS_clone) {
    flags = a0;
#ifdef SYS_clone3
  } else if (nr == SYS_clone3) {
    if (hci_os_read(&flags, a0, sizeof flags) != sizeof flags) return false;
#endif
  } else {
    return false;
  }
  return (flags & CLONE_VFORK) != 0;
}

bool hci_task_in_vfork(int taskfd, int tid, bool leader) {
  char task[16], buf[512];
  if (leader) hci_snprintf(task, sizeof task, "..");
  else hci_snprintf(task, sizeof task, "%d", tid);
  struct sys_line l;
  return hci_task_file(taskfd, task, "syscall", buf, sizeof buf) > 0 && parse_syscall(buf, &l) &&
         vfork_call(l.nr, l.args[0]);
}

static bool vfork_pending(const hci_world_t *w, int from, int to) {
  for (int i = from; i < to; i++)
    if (atomic_load(&w->threads[i].state) == HCI_T_SIGNALLED && vfork_call(w->threads[i].sys_nr, w->threads[i].sys_args[0]))
      return true;
  return false;
}

/* Waits until slots [from, to) have all left SIGNALLED/FILLING: up to the
 * timeout, and up to HCI_VFORK_WAIT_FACTOR times it while a thread waits for a
 * vfork child (in_vfork: it will answer, only later; 9 of 300 checks failed
 * under 16 busy processes before, each after the child had exec'd while
 * posix_spawn still blocked every signal). */
static void wait_acks(hci_world_t *w, int from, int to, int pid, int taskfd) {
  uint64_t start = hci_os_now_ns(), span = (uint64_t)stw.timeout_ms * 1000000ull;
  uint64_t deadline = start + span, vfork_deadline = start + span * HCI_VFORK_WAIT_FACTOR;
  uint64_t poll = POLL_MIN_NS;
  for (;;) {
    int a = atomic_load(&stw.acks);
    int pending = 0;
    for (int i = from; i < to; i++) {
      int s = atomic_load(&w->threads[i].state);
      if (s == HCI_T_SIGNALLED || s == HCI_T_FILLING) pending++;
    }
    if (pending == 0) return;
    uint64_t now = hci_os_now_ns();
    /* Threads that exited after we listed them never answer. */
    for (int i = from; i < to; i++) {
      hci_thread_t *t = &w->threads[i];
      if (atomic_load(&t->state) != HCI_T_SIGNALLED) continue;
      if (syscall(SYS_tgkill, pid, t->tid, 0) != 0 && errno == ESRCH) {
        int expect = HCI_T_SIGNALLED;
        atomic_compare_exchange_strong(&t->state, &expect, HCI_T_EXITED);
      } else if (t->unsent) {
        send_stop(w, i, pid, taskfd);
      }
    }
    /* A thread in vfork gets the whole timeout again from the last poll
     * that saw it there: leaving clone3, posix_spawn still has every
     * signal blocked until it has unmapped the child's stack. */
    if (deadline < vfork_deadline && vfork_pending(w, from, to)) {
      deadline = now + span > deadline ? now + span : deadline;
      if (deadline > vfork_deadline) deadline = vfork_deadline;
    }
    if (now >= deadline) break;
    uint64_t left = deadline - now;
    if (left > poll) left = poll;
    if (poll < POLL_MAX_NS) poll *= 2;
    struct timespec ts = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
    futex(&stw.acks, FUTEX_WAIT_PRIVATE, a, &ts);
  }
  for (int i = from; i < to; i++) {
    hci_thread_t *t = &w->threads[i];
    int expect = HCI_T_SIGNALLED;
    if (atomic_load(&t->state) == HCI_T_SIGNALLED)
      atomic_compare_exchange_strong(&t->state, &expect, hci_task_zombie(taskfd, t->tid) == 1 ? HCI_T_EXITED : HCI_T_NOT_STOPPED);
    /* FILLING finishes in a few instructions. */
    for (unsigned round = 0; atomic_load(&t->state) == HCI_T_FILLING;) hci_os_backoff(&round);
  }
}

/* ---------------------------------------------------------------- ranges */

static uintptr_t lookup_registry_tp(int tid) {
  return hci_alloc_thread_tp(tid); /* requires: the registry lock (held through hci_lock_all) */
}

/* The heap object holding addr: a stack the program allocated with malloc
 * (pthread_attr_setstack, coroutines) is scanned within its object only. */
static bool heap_object(uintptr_t addr, uintptr_t *lo, uintptr_t *hi) {
  hci_heap_slot_t o;
  if (!hci_heap_locate(addr, &o)) return false;
  *lo = o.start;
  *hi = o.start + hci_heap_slot_bytes(&o);
  return true;
}

/* The thread's normal stack: [stack] for the main thread, else the mapping
 * holding its struct pthread (glibc puts it at the top of the stack),
 * ending where struct pthread and static TLS end. */
static void normal_stack(const hci_world_t *w, hci_thread_t *t, int pid) {
  const hci_map_t *m = NULL;
  uintptr_t top = 0;
  if (t->tid == pid) {
    m = hci_maps_find(&w->maps, (uintptr_t)__libc_stack_end);
    if (m) top = m->hi;
  } else if (t->tp) {
    m = hci_maps_find(&w->maps, t->tp);
    if (m) {
      uintptr_t lo, hi;
      hci_tls_range(t->tp, &lo, &hi);
      top = hi < m->hi ? hi : m->hi;
    }
  }
  if (m) {
    t->nstack_lo = m->lo;
    t->nstack_hi = top;
    uintptr_t olo, ohi;
    if (t->tp && heap_object(t->tp, &olo, &ohi) && olo > t->nstack_lo) t->nstack_lo = olo;
  }
}

static void thread_ranges(const hci_world_t *w, hci_thread_t *t, int pid) {
  normal_stack(w, t, pid);
  if (!t->stopped) {
    t->stack_lo = t->nstack_lo;
    t->stack_hi = t->nstack_hi;
    return;
  }
  uintptr_t sp = t->sp;
  uintptr_t lo = 0, hi = 0;
  if (t->nstack_hi && sp >= t->nstack_lo && sp < t->nstack_hi) {
    lo = t->nstack_lo;
    hi = t->nstack_hi;
    t->on_altstack = false;
  } else if (t->on_altstack && sp >= t->alt_lo && sp < t->alt_hi) {
    lo = t->alt_lo;
    hi = t->alt_hi;
  } else {
    /* Another stack (makecontext, coroutine): from sp to its mapping's end. */
    const hci_map_t *m = hci_maps_find(&w->maps, sp);
    if (!m) m = hci_maps_find(&w->maps, sp - RED_ZONE);
    if (m) {
      lo = m->lo;
      hi = m->hi;
      uintptr_t olo, ohi;
      if (heap_object(sp, &olo, &ohi)) {
        lo = olo;
        hi = ohi;
      }
    }
    t->on_altstack = true; /* "not on its normal stack": roots scan that one whole */
  }
  if (hi) {
    t->stack_lo = sp - RED_ZONE > lo ? sp - RED_ZONE : lo;
    t->stack_hi = hi;
  }
  if (!w->maps.n && !hi && sp) {
    /* No maps: best effort from what the thread itself tells. */
    t->stack_lo = sp - RED_ZONE;
    t->stack_hi = t->tid == pid ? (uintptr_t)__libc_stack_end : 0;
  }
}

/* ---------------------------------------------------------------- stop/resume */

/* The signal method: every thread but us, listed through taskfd. */
static void signal_stop(hci_world_t *w, int taskfd, int pid) {
  install_handler();
  if (!atomic_load(&stw.installed)) {
    /* Our signal sent without our handler would take the program's action
     * for it, by default the end of the process (189: a seccomp filter
     * that answered EPERM to rt_sigaction). */
    w->incomplete = true;
    w->refused = "the stop signal's handler could not be installed (sigaction refused, by a seccomp filter?)";
    return;
  }
  atomic_store(&stw.pid, pid);
  atomic_store(&stw.nslots, 1);
  atomic_store(&stw.slots, w->threads);
  int tids_cap = 4096;
  int *tids = hci_os_map((size_t)tids_cap * sizeof(int));
  w->incomplete = true; /* until a listing finds no new thread */
  for (int pass = 0; tids && pass < MAX_PASSES; pass++) {
    struct collect c = {w, tids, 0, tids_cap, false};
    if (hci_tasks_read(taskfd, collect_fn, &c) < 0) break;
    if (c.ntids == 0) {
      w->incomplete = false;
      break;
    }
    if (w->nthreads + c.ntids > w->cap && !grow_slots(w, w->nthreads + c.ntids)) break;
    int from = w->nthreads;
    for (int i = 0; i < c.ntids; i++) {
      hci_thread_t *t = &w->threads[w->nthreads];
      memset(t, 0, sizeof *t);
      t->tid = tids[i];
      atomic_store(&t->state, HCI_T_SIGNALLED);
      w->nthreads++;
    }
    atomic_store_explicit(&stw.nslots, w->nthreads, memory_order_release);
    for (int i = from; i < w->nthreads; i++) send_stop(w, i, pid, taskfd);
    wait_acks(w, from, w->nthreads, pid, taskfd);
    if (c.overflow) pass--; /* more tids than the buffer: not a new round of creation */
  }
  if (tids) hci_os_unmap(tids, (size_t)tids_cap * sizeof(int));
}

static void signal_resume(hci_world_t *w) {
  atomic_store(&stw.slots, NULL);
  atomic_store(&stw.nslots, 0);
  /* A handler preempted in its slot section (by this thread, at a higher
   * real-time priority) needs the CPU to leave it: hci_os_backoff sleeps. */
  for (unsigned round = 0; atomic_load(&stw.inside);) hci_os_backoff(&round);
  atomic_store(&stw.released, (int)w->gen);
  futex(&stw.released, FUTEX_WAKE_PRIVATE, INT_MAX, NULL);
  /* A thread that did not take our signal may still have it queued. */
  bool discard = false;
  for (int i = 0; i < w->nthreads && !discard; i++) {
    int s = atomic_load(&w->threads[i].state);
    discard = s != HCI_T_STOPPED && s != HCI_T_EXITED && s != HCI_T_SELF;
  }
  restore_handler(discard);
}

int hci_world_stop(hci_world_t *w) {
  HC_CHECK(atomic_load(&stw.ready) && w->threads, "hci_world_stop without hci_world_init");
  HC_CHECK(!w->active, "hci_world_stop: the world is already stopped");
  int pid = getpid();
  int self = hci_os_tid();
  w->nthreads = 0;
  w->nstopped = w->nnot_stopped = w->nexited = 0;
  w->incomplete = w->queue_full = false;
  w->refused = NULL;
  w->method = HCI_STOP_NONE;
  w->gen = (unsigned)atomic_fetch_add(&stw.gen, 1) + 1;
  w->active = true;
  /* Until the world is released no thread may exec (exec_watch.c): the
   * helper is a child of ours, and the fallback's signal queued to a thread
   * inside exec outlived it and killed the new image (status 189). */
  hci_exec_hold();

  hci_thread_t *me = &w->threads[0];
  memset(me, 0, sizeof *me);
  me->tid = self;
  atomic_store(&me->state, HCI_T_SELF);
  me->is_self = me->stopped = true;
  me->sp = w->self_sp ? w->self_sp : (uintptr_t)__builtin_frame_address(0);
  me->tp = (uintptr_t)__builtin_thread_pointer();
  w->nthreads = 1;

  bool kept;
  int taskfd = hci_proc_open(HCI_PROC_TASK, &kept);
  stw.translated = hci_tasks_probe_ns(taskfd, self) == 1;
  int ntasks = hci_tasks_read(taskfd, NULL, NULL);
  const char *why = NULL;
  bool transient = false;
  if (ntasks < 0) {
    w->incomplete = true; /* no task list: other threads may exist */
  } else if (ntasks <= 1) {
    hci_ptrace_end_parent(); /* the probes' parent, if any: no other thread can reap it */
  } else if (self <= 0) {
    /* Our own id unknown (hci_os_tid: gettid refused, no /proc): every
     * thread would look like another, the checking one included, and a
     * helper that stopped it waited for it for ever. */
    w->incomplete = true;
    w->refused = "the checking thread's id is unknown (gettid refused, by a seccomp filter, and /proc/thread-self "
                 "unreadable)";
  } else {
    /* Alone, no thread can appear: nothing to stop.  Otherwise ptrace,
     * unless it was refused once; then signals. */
    int pr = stw.use_ptrace ? hci_ptrace_stop(w, pid, taskfd, stw.timeout_ms, stw.yama, &why) : -1;
    if (!stw.use_ptrace && stw.no_ptrace_why) why = stw.no_ptrace_why;
    if (pr == 0) {
      w->method = HCI_STOP_PTRACE;
    } else {
      if (why) stw.use_ptrace = false;
      transient = pr == -2;
      w->method = HCI_STOP_SIGNAL;
      signal_stop(w, taskfd, pid);
      hci_ptrace_end_parent(); /* a helper's parent left by a failed ptrace stop: no thread can reap it now */
    }
  }
  hci_proc_close(taskfd, kept);

  hci_maps_read(&w->maps);
  for (int i = 0; i < w->nthreads; i++) {
    hci_thread_t *t = &w->threads[i];
    int s = atomic_load_explicit(&t->state, memory_order_acquire);
    if (s == HCI_T_SIGNALLED) { /* listing stopped early (no memory, too many passes) */
      atomic_compare_exchange_strong(&t->state, &s, HCI_T_NOT_STOPPED);
      s = atomic_load(&t->state);
    }
    if (s == HCI_T_STOPPED) {
      t->stopped = true;
      w->nstopped++;
    } else if (s == HCI_T_NOT_STOPPED) {
      w->nnot_stopped++;
      t->tp = lookup_registry_tp(t->tid);
      t->in_registry = t->tp != 0;
    } else if (s == HCI_T_EXITED) {
      w->nexited++;
      continue;
    }
    thread_ranges(w, t, pid);
  }
  /* Warnings write(2) to the diagnostic descriptor: no lock. */
  if (why && !stw.warned_fallback) {
    stw.warned_fallback = true;
    hci_warn("leak checks cannot stop threads with ptrace (%s); they use signal %d instead, which interrupts "
             "some system calls of other threads (see \"Stopping threads\" in docs/leak-checking.md)",
             why, stw.signo);
  }
  /* Not for good (the helper task could not be made now), but the program
   * sees it all the same: an unexplained EINTR in a thread of a program
   * at its RLIMIT_NPROC (non-root) had no word said. */
  if (transient && !stw.warned_transient) {
    stw.warned_transient = true;
    /* A SCHED_DEADLINE thread may not create tasks (EAGAIN): the usual
     * reasons were named for it (adv30). */
    bool deadline = sched_getscheduler(0) == 6 /* SCHED_DEADLINE */;
    hci_warn("a leak check could not create its ptrace helper task (%s); it "
             "stopped threads with signal %d instead, which interrupts some system calls of other threads (see "
             "\"Stopping threads\" in docs/leak-checking.md)",
             deadline ? "the checking thread runs under SCHED_DEADLINE, which may not create tasks"
                      : "RLIMIT_NPROC reached, or no memory",
             stw.signo);
  }
  if (w->nstopped) atomic_store(&hci_out_world_stopped, w->gen ? w->gen : 1);
  if (w->refused) {
    hci_warn("could not stop the other threads: %s", w->refused);
    return w->nnot_stopped + 1;
  }
  if (w->incomplete) {
    hci_warn("could not list every thread (out of memory, /proc unreadable, or threads keep appearing)");
    return w->nnot_stopped + 1;
  }
  return w->nnot_stopped;
}

void hci_world_release(hci_world_t *w) {
  if (!w->active) return;
  atomic_store(&hci_out_world_stopped, 0);
  if (w->method == HCI_STOP_PTRACE) hci_ptrace_resume(w);
  else if (w->method == HCI_STOP_SIGNAL) signal_resume(w);
  w->active = false;
  hci_exec_release();
  /* A report cut because its reader was stopped says so now that it runs. */
  hci_out_cut_notice(hci_log_stream_fd());
}

void hci_world_ending(hci_world_t *w) {
  if (w->active && w->method == HCI_STOP_PTRACE) hci_ptrace_ending();
}

void hci_world_resume(hci_world_t *w) {
  hci_world_release(w);
  hci_world_unblock_signals(w);
}

/* While a check holds the library's locks or keeps threads stopped, no
 * handler of the program may run on its thread: one that calls malloc (not
 * async-signal-safe, yet common: a handler formatting a message) would wait
 * for a lock this thread or a stopped one holds, and the check with it (the
 * exit check of a program with a 200 us timer hung in every run).  The
 * program's signals wait until the check lets go; faults stay deliverable. */
void hci_world_block_signals(hci_world_t *w) {
  if (w->signals_blocked) return;
  sigset_t all;
  sigfillset(&all);
  static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS};
  for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++) sigdelset(&all, faults[i]);
  w->signals_blocked = pthread_sigmask(SIG_BLOCK, &all, &w->saved_mask) == 0;
}

void hci_world_unblock_signals(hci_world_t *w) {
  if (!w->signals_blocked) return;
  w->signals_blocked = false;
  pthread_sigmask(SIG_SETMASK, &w->saved_mask, NULL);
}

/* A check whose roots are not all known cannot say "no leaks" (nor trust
 * its leaks): the first reason, in words. */
void hci_world_why_incomplete(const hci_world_t *w, char *b, size_t n) {
  if (w->refused) {
    hci_snprintf(b, n, "no other thread could be stopped: %s", w->refused);
  } else if (w->incomplete) {
    hci_snprintf(b, n, "not every thread could be listed (/proc/self/task unreadable, or threads kept appearing)");
  } else if (w->nnot_stopped) {
    int tid = 0;
    long nr = -1;
    uintptr_t a0 = 0;
    for (int i = 0; i < w->nthreads && !tid; i++)
      if (atomic_load(&w->threads[i].state) == HCI_T_NOT_STOPPED)
        tid = w->threads[i].tid, nr = w->threads[i].sys_nr, a0 = w->threads[i].sys_args[0];
    /* A thread that blocks every signal and waits in sigwaitinfo is most
     * often libc's own: glibc's thread for SIGEV_THREAD timers (timer_create)
     * lives so, and the program blocked nothing itself. */
    hci_snprintf(b, n, "%d thread%s (tid %d%s) could not be stopped (%s)", w->nnot_stopped,
                 w->nnot_stopped == 1 ? "" : "s", tid, w->nnot_stopped == 1 ? "" : ", ...",
                 w->method != HCI_STOP_SIGNAL ? "stuck in the kernel past HEAP_CHECK_STOP_TIMEOUT_MS"
                 : w->queue_full ? "the stop signal could not be queued: RLIMIT_SIGPENDING reached, and ptrace is not available"
                 : vfork_call(nr, a0) ? "it waits, with every signal blocked, for a vfork child (posix_spawn, system, vfork) that "
                                        "did not exec or exit within five HEAP_CHECK_STOP_TIMEOUT_MS"
                 : nr == SYS_rt_sigtimedwait
                     ? "it blocks the stop signal and waits in sigwaitinfo, as glibc's thread for SIGEV_THREAD timers "
                       "(timer_create) does; ptrace is not available"
                     : "they block the stop signal and ptrace is not available");
  } else if (w->maps.n == 0) {
    hci_snprintf(b, n, "/proc/self/maps could not be read, so no thread stack can be bounded");
  } else {
    for (int i = 0; i < w->nthreads; i++) {
      const hci_thread_t *t = &w->threads[i];
      if (t->stopped && !t->is_self && !t->stack_hi) {
        hci_snprintf(b, n, "the stack of thread %d could not be found (sp %p is in no mapping)", t->tid,
                     (void *)t->sp);
        break;
      }
    }
  }
}

/* ---------------------------------------------------------------- helpers */

struct loader_call {
  int (*fn)(void *);
  void *arg;
  int ret;
  bool ran;
};

static int loader_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)info;
  (void)size;
  struct loader_call *c = arg;
  if (!c->ran) {
    c->ran = true;
    c->ret = c->fn(c->arg);
  }
  return 1; /* stop the iteration: fn ran once, with the loader lock held */
}

int hci_with_loader_lock(int (*fn)(void *), void *arg) {
  struct loader_call c = {fn, arg, 0, false};
  dl_iterate_phdr(loader_cb, &c);
  if (!c.ran) c.ret = fn(arg); /* no module at all: nothing can be loaded concurrently either */
  return c.ret;
}

hc_noinline int hci_capture_regs(uintptr_t *regs, int max) {
  uintptr_t r[12];
  int n = 0;
#if defined(__x86_64__)
  __asm__ __volatile__("mov %%rbx, 0(%0)\n\t"
                       "mov %%r12, 8(%0)\n\t"
                       "mov %%r13, 16(%0)\n\t"
                       "mov %%r14, 24(%0)\n\t"
                       "mov %%r15, 32(%0)\n\t"
                       :
                       : "r"(r)
                       : "memory");
  r[5] = *(uintptr_t *)__builtin_frame_address(0); /* the caller's rbp, saved by our prologue */
  n = 6;
#elif defined(__aarch64__)
  __asm__ __volatile__("stp x19, x20, [%0, #0]\n\t"
                       "stp x21, x22, [%0, #16]\n\t"
                       "stp x23, x24, [%0, #32]\n\t"
                       "stp x25, x26, [%0, #48]\n\t"
                       "stp x27, x28, [%0, #64]\n\t"
                       :
                       : "r"(r)
                       : "memory");
  r[10] = *(uintptr_t *)__builtin_frame_address(0);
  n = 11;
#endif
  if (n > max) n = max;
  for (int i = 0; i < n; i++) regs[i] = r[i];
  return n;
}

void hci_world_set_self_regs(hci_world_t *w, const uintptr_t *regs, int n) {
  for (int i = 0; i < w->nthreads; i++) {
    hci_thread_t *t = &w->threads[i];
    if (!t->is_self) continue;
    if (n > HCI_MAX_REGS) n = HCI_MAX_REGS;
    memcpy(t->regs, regs, (size_t)n * sizeof *regs);
    t->nregs = n;
  }
}

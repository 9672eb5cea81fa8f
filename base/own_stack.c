/* own_stack.c - the library's heavy work runs on a stack of its own.
 *
 * A leak check (stopping the world, flooding, symbolizing, the report)
 * and a heap-profile dump need tens of kilobytes of stack.  They run on
 * the thread that asks - the one calling exit(), __lsan_do_leak_check or
 * HeapProfilerDump, or whose malloc made the sample that triggers a
 * HEAPPROFILE dump - and a program may give its threads 16 KiB stacks
 * (PTHREAD_STACK_MIN): on those the work overflowed the stack, and the
 * program died of SIGSEGV.  hci_own_stack_call runs such work on a
 * mapping of ours, OWN_STACK bytes (as large as a default thread stack,
 * so no work has less room than it had on the main thread), with a
 * PROT_NONE guard page below it.
 *
 * The mapping is made once and kept for the next call (address space; its
 * pages cost memory only as far as the deepest work touched them); a
 * caller that finds it in use (two threads at once, or a dump inside a
 * check) maps one of its own and unmaps it after.  hci_os_map remembers
 * the mapping, so a leak check never scans it as one of the program's.
 * Under a finite RLIMIT_AS or RLIMIT_DATA no stack is mapped for it:
 * the 8 MiB counted against the limit made a check fail where a tighter
 * limit, refusing the mapping, let it pass on the caller's stack (not
 * monotonic).  The work runs then on SMALL_STACK bytes in .bss (one caller
 * at a time; no guard page), as it does when the mapping is refused; a
 * check used at most 28 KiB of stack (python3, perl, cc1plus, gdb's strict
 * check with 1289 leaks symbolized, loaded machine, 6 Dec 2026).  When
 * that one is busy too, the work runs where it is, as it always did.
 *
 * The switch is architecture code (x86-64 here; elsewhere fn runs on the
 * current stack): a frame-pointer frame whose CFI says where the caller's
 * frame is, so unwinders and debuggers walk from the work back into the
 * program's stack.  Code that must know the program's stack pointer (the
 * checking thread's stack is scanned from its entry point up) takes it
 * from its caller, never from its own frame.
 *
 * The work runs with the thread's cancellation disabled (see
 * hci_own_stack_call), and the program's errno is kept across it.
 *
 * Locks: none (one atomic exchange); no malloc.  Safe in a fork child
 * (the kept stack is inherited with the address space).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hc_base.h"

#define OWN_STACK ((size_t)8 << 20)
#define GUARD ((size_t)4096)

static _Atomic(uintptr_t) kept; /* the mapping waiting for the next call, or 0 */
HC_PRIVATE_STATE(kept);
#define SMALL_STACK ((size_t)128 << 10)
static char small_stack[SMALL_STACK] __attribute__((aligned(64)));
HC_PRIVATE_STATE(small_stack); /* never a root (a static link's .bss is scanned) */
static _Atomic bool small_busy;
HC_PRIVATE_STATE(small_busy);
/* The own stack this thread runs on now (its mapping's start), or 0: stack
 * walks end at its top (stacks/unwind.c), never in a mapping above it.
 * The start, not the top: TLS is a root of every leak check, and the top
 * is often the start of a heap mapping the kernel placed right above. */
static HC_TLS uintptr_t on_base;
static HC_TLS size_t on_size;

#if defined(__x86_64__)
/* void hci_call_on(void *arg, void (*fn)(void *), void *top): rdi, rsi, rdx. */
__asm__(".text\n"
        ".p2align 4\n"
        ".globl hci_call_on\n"
        ".hidden hci_call_on\n"
        ".type hci_call_on, @function\n"
        "hci_call_on:\n"
        "  .cfi_startproc\n"
        "  pushq %rbp\n"
        "  .cfi_def_cfa_offset 16\n"
        "  .cfi_offset %rbp, -16\n"
        "  movq %rsp, %rbp\n"
        "  .cfi_def_cfa_register %rbp\n"
        "  movq %rdx, %rsp\n"
        "  callq *%rsi\n"
        "  movq %rbp, %rsp\n"
        "  popq %rbp\n"
        "  .cfi_def_cfa %rsp, 8\n"
        "  ret\n"
        "  .cfi_endproc\n"
        ".size hci_call_on, .-hci_call_on\n");
#define HAVE_SWITCH 1
#else
#define HAVE_SWITCH 0
void hci_call_on(void *arg, void (*fn)(void *), void *top) { (void)top; fn(arg); }
#endif

static uintptr_t map_stack(void) {
  uint8_t *p = hci_os_map(OWN_STACK);
  if (!p) return 0;
  /* The guard: an overflow faults here instead of writing below. */
  syscall(SYS_mprotect, p, GUARD, PROT_NONE);
  return (uintptr_t)p;
}

/* A finite RLIMIT_AS or RLIMIT_DATA: no mapping for the stack. */
static bool limited(void) {
  struct rlimit r;
  return (getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY) ||
         (getrlimit(RLIMIT_DATA, &r) == 0 && r.rlim_cur != RLIM_INFINITY);
}

static bool call_on_own(void (*fn)(void *), void *arg) {
  if (!HAVE_SWITCH) {
    fn(arg);
    return false;
  }
  size_t size = OWN_STACK;
  uintptr_t s = atomic_exchange_explicit(&kept, 0, memory_order_acquire);
  if (!s && !limited()) s = map_stack();
  if (!s && !atomic_exchange(&small_busy, true)) {
    s = (uintptr_t)small_stack;
    size = SMALL_STACK;
  }
  if (!s) {
    fn(arg);
    return false;
  }
  uintptr_t outer = on_base; /* a dump inside a check */
  size_t outer_size = on_size;
  on_base = s;
  on_size = size;
#if HAVE_SWITCH
  hci_call_on(arg, fn, (void *)((s + size) & ~(uintptr_t)15));
#endif
  on_base = outer;
  on_size = outer_size;
  if (size == SMALL_STACK) {
    atomic_store(&small_busy, false);
    return true;
  }
  uintptr_t none = 0;
  if (!atomic_compare_exchange_strong_explicit(&kept, &none, s, memory_order_release, memory_order_relaxed))
    hci_os_unmap((void *)s, OWN_STACK);
  return true;
}

/* Cancellation waits for the work's end: its reports and dumps call
 * libc's open, read and write, cancellation points, and a thread cancelled
 * meanwhile unwound out of a check with the other threads still stopped
 * (a thread running scoped checks, cancelled by main: the process hung in
 * every run, both stop methods), or out of a dump holding its lock. */
bool hci_own_stack_call(void (*fn)(void *), void *arg) {
  int err = errno, old = PTHREAD_CANCEL_ENABLE;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
  bool r = call_on_own(fn, arg);
  pthread_setcancelstate(old, NULL);
  errno = err; /* the work's opens and reads are not the program's: a successful malloc that dumped a
                  profile, or hc_check_end, left ENOENT behind */
  return r;
}

uintptr_t hci_own_stack_top(uintptr_t sp) {
  uintptr_t b = on_base, top = (b + on_size) & ~(uintptr_t)15;
  return b && sp >= b + (on_size == OWN_STACK ? GUARD : 0) && sp < top ? top : 0;
}

/* leaks.c - when checks run: the whole-program check at exit, NoGlobalLeaks,
 * the exit status (design D15), the checker's start-up.  Running one check
 * (whichever asked) is check_run.c's; the state both share is in
 * leaks_internal.h.
 *
 * Life cycle:
 *   hci_checker_init   (inside the first malloc) reads the options; when
 *                      checking, every allocation is recorded from then on
 *                      and diagnostics go to a private duplicate of stderr;
 *   checker_ctor       (library constructor) loads suppressions, cuts the
 *                      allocator's state out of the roots, registers the
 *                      fallback at-exit check;
 *   __libc_start_main  (interposed; weak so static links keep libc's) runs
 *                      main through start_main, which sets minimal's
 *                      baseline and registers the atexit check *after* every
 *                      global constructor, so it runs *before* the program's
 *                      global destructors (normal, minimal, as-is);
 *   checker_dtor       (library destructor, after the program's destructors)
 *                      runs the check of strict, draconian and as-is with
 *                      HEAP_CHECK_AFTER_DESTRUCTORS.
 * The final check runs the registered cleanups first, then checks; leaks
 * end the process with _exit(HEAP_CHECK_EXIT_CODE).  A forked child that
 * exits normally is checked too (the file names carry its pid).
 *
 * Entry points save the caller's callee-saved registers in their own frame
 * (__builtin_unwind_init) and pass the address of a local below them, so the
 * stack scan covers the caller's registers but no dead checker frames.
 *
 * Locks: hci_chk_lock (check_run.c) around each check and the constructor's
 * set-up.
 */
#include <dlfcn.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hc_checker.h"
#include "hc_symbolize.h"
#include "leaks_internal.h"

hci_leaks_t hci_leaks = {.base_epoch = -1, .g_bytes = -1, .g_objects = -1};
HC_PRIVATE_STATE(hci_leaks);

// ---- the whole-program check ----

static int global_check(uintptr_t sp, bool at_exit, ssize_t *bytes, ssize_t *objects) {
  hci_check_req_t req = {
      .name = "_main_",
      .whole_program = true,
      .at_exit = at_exit && !hci_chk.identify_leaks && !hci_chk.keep_status && !hci_chk_program_failed() &&
                 !hci_chk.no_leak_exit,
      /* A failing final check keeps the world stopped through its report,
       * and until _exit when the process ends on it. */
      .hold = at_exit,
      .report = true,
      .symbolize = true,
      .self_sp = sp,
  };
  if (at_exit && hci_leaks.end_sp > sp && hci_leaks.end_tp == (uintptr_t)__builtin_thread_pointer()) {
    req.self_sp = hci_leaks.end_sp;
    req.self_regs = hci_leaks.end_regs;
    req.self_nregs = hci_leaks.end_nregs;
  }
  /* LSan's tries: the earlier runs report and let the world go; leaks
   * count only when every run found some (a debugging aid: a leak that
   * comes and goes between runs is a stale pointer or a race). */
  int clean = 0, ok = 1;
  *bytes = *objects = 0;
  for (int i = 1; i < hci_chk.tries; i++) {
    hci_check_req_t once = req;
    once.at_exit = once.hold = false;
    clean += hci_lsan_turned_off() || hci_chk_run(&once, bytes, objects); /* asked at every run, as LSan */
  }
  if (!hci_lsan_turned_off()) ok = hci_chk_run(&req, bytes, objects);
  if (!ok && clean && !hci_leaks.incomplete) {
    hci_chk_release_held();
    ok = 1;
  }
  hci_leaks.g_bytes = *bytes;
  hci_leaks.g_objects = *objects;
  return ok;
}

int hci_chk_global_now(uintptr_t self_sp, const uintptr_t *regs, int nregs) {
  (void)regs;
  (void)nregs;
  if (!hci_chk.active || !hci_chk.global_check) return 1;
  ssize_t b, o;
  return global_check(self_sp, false, &b, &o);
}

void hci_chk_global_totals(ssize_t *bytes, ssize_t *objects) {
  *bytes = hci_leaks.g_bytes;
  *objects = hci_leaks.g_objects;
}

void hci_chk_cancel_global(void) {
  if (!hci_chk.active || !hci_chk.global_check) return;
  if (!atomic_exchange(&hci_leaks.main_cancelled, 1))
    hci_chk_log(0, "Canceling the automatic at-exit whole-program memory leak check");
}

/* The process ends after a failing final check, its threads still stopped:
 * the ptrace helper is told first (hci_world_ending). */
static __attribute__((noreturn)) void end_held(int status) {
  if (hci_leaks.holding) hci_world_ending(&hci_leaks.held);
  _exit(status);
}

/* Where the final whole-program check runs from. */
typedef enum {
  FINAL_AT_EXIT,  /* exit: an at-exit handler or the library destructor */
  FINAL_AT__EXIT, /* _exit (from an at-exit handler, or direct): nothing may be flushed */
  FINAL_FROM_API, /* __lsan_do_leak_check: the program goes on when nothing
                     leaked, so cleanups and libc's caches are left alone */
} final_from_t;

static hc_noinline void final_check(uintptr_t sp, final_from_t from) {
  if (atomic_exchange(&hci_leaks.main_done, 1)) return;
  if (from != FINAL_FROM_API && !hci_locks_held_here) hci_api_run_cleanups(); /* else: hci_chk_run says why */
  if (atomic_load(&hci_leaks.main_cancelled) && from != FINAL_FROM_API) return;
  /* _exit flushes nothing: neither may its check (output a program drops
   * must stay dropped), nor free libc's buffers under it. */
  if (from != FINAL_AT__EXIT) fflush(NULL);
  if (hci_chk.free_libc && from == FINAL_AT_EXIT && !hci_locks_held_here) hci_api_free_libc();
  ssize_t bytes, objects;
  int ok = global_check(sp, true, &bytes, &objects);
  hci_tree_note(bytes, objects, !ok && hci_leaks.incomplete);
  if (ok) return;
  /* The other threads are still stopped (hold): stdio was flushed before
   * the check, and flushing again could wait for a lock a stopped thread
   * holds. */
  if (hci_leaks.incomplete) {
    if (!hci_chk.keep_status && !hci_chk_program_failed()) end_held(hci_chk.error_exit_code);
    hci_chk_release_held(); /* the program's own status stays */
    return;
  }
  if (hci_chk.identify_leaks) {
    hci_chk_log(HCI_LOG_FATAL, "Whole-program memory leaks found.");
    if (hci_leaks.holding) hci_world_ending(&hci_leaks.held);
    abort(); /* gperftools: a core dump to look at the objects listed above */
  }
  /* Under the launcher, descendants keep their own status (a leaking
   * compiler must not fail the build); the launcher decides at the end. */
  if (hci_chk.keep_status) {
    hci_chk_release_held();
    return;
  }
  if (hci_chk_program_failed()) {
    hci_chk_log(HCI_LOG_ERROR,
                "heapcheck: the program exits with status %d: kept (HEAP_CHECK_EXIT_CODE applies only to status 0)",
                hci_leaks.exit_status & 0xff);
    hci_chk_release_held();
    return;
  }
  if (hci_chk.no_leak_exit) { /* LSan's exitcode=0 */
    hci_chk_release_held();
    return;
  }
  end_held(hci_chk.exit_code);
}

void hci_chk_final_now(uintptr_t sp) {
  if (hci_chk.active) final_check(sp, FINAL_FROM_API);
}

int hci_chk_recoverable_now(uintptr_t sp) {
  if (!hci_chk.active) return 0;
  ssize_t b, o;
  return !global_check(sp, false, &b, &o);
}

extern void *__libc_stack_end;
/* Weak: resolved only in a static link (a shared object sees no main). */
extern int main(int, char **, char **) __attribute__((weak));

/* In a static link, libc's start frames (roots.c), the part of the main
 * thread's stack from main's caller up to __libc_stack_end (where _start
 * left argc), found by the same walk as exit's caller: main's caller when
 * main runs (it called exit), or, when main is not on this thread's stack
 * and the walk reached _start, exit's caller, libc's, which called main
 * and then exit.  Anything else (another thread called exit, a walk that
 * stopped early) keeps them as roots.  Only the final check has them: a
 * scoped check before exit scans them, as before. */
static void static_start_frames(uintptr_t exit_sp, uintptr_t eh_lo, uintptr_t eh_hi) {
  if (!main || hci_os_tid() != getpid()) return;
  uintptr_t tp = (uintptr_t)__builtin_thread_pointer(), top = (uintptr_t)__libc_stack_end;
  hci_caller_t m;
  int r = hci_unwind_find_caller((uintptr_t)&main, eh_lo, eh_hi, &m);
  uintptr_t lo = r == HCI_CALLER_FOUND ? m.sp : r == HCI_CALLER_ABSENT ? exit_sp : 0;
  if (!lo) return;
  hci_roots_set_start_frames(tp, lo, top);
  hci_chk_log(1, "heapcheck: libc's start frames [%p, %p) are not roots (%s)", (void *)lo, (void *)top,
              r == HCI_CALLER_FOUND ? "from main's caller" : "main returned");
}

/* Where the program ended, when no interposer of ours saw it: in a static
 * link libc.a's exit and __libc_start_main are the program's (and libc may
 * call its exit itself, e.g. error()).  Run from an at-exit handler, whose
 * callers are exit -> __run_exit_handlers [-> call_fini or _dl_fini]: the
 * walk up the stack by .eh_frame (stacks/unwind_caller.c) finds exit's
 * caller and its callee-saved registers at the call, which is what the exit
 * interposer records.  When main returned, that caller is libc's
 * (__libc_start_call_main) and main's frame lies below it, dead.  Not found
 * (no unwind tables, a walk it cannot follow): hci_leaks.end_sp stays 0 and the check
 * scans this thread's stack from the checking function up, as before. */
static hc_noinline void find_exit_caller(void) {
  if (hci_leaks.end_sp || !hci_chk.active || !hci_chk.global_check) return;
  /* libc's exit: dlsym's in a dynamic process (our own exit is the one the
   * name binds to there), the linked one in a static executable. */
  uintptr_t fn = hci_leaks.real_exit ? (uintptr_t)hci_leaks.real_exit : (uintptr_t)&exit;
  /* gcc links -static executables without .eh_frame_hdr: the walk then
   * reads .eh_frame itself, found in the executable's section headers. */
  uintptr_t eh_lo = 0, eh_hi = 0;
  if (hci_eh_static_exe() && !hci_symbolize_section(fn, ".eh_frame", &eh_lo, &eh_hi)) eh_lo = eh_hi = 0;
  hci_caller_t c;
  if (hci_unwind_find_caller(fn, eh_lo, eh_hi, &c) != HCI_CALLER_FOUND) {
    hci_chk_log(1, "heapcheck: exit's caller not found by unwinding: the final check scans this thread's "
                   "stack from the check up");
    return;
  }
  memcpy(hci_leaks.end_regs, c.regs, (size_t)c.nregs * sizeof c.regs[0]);
  hci_leaks.end_nregs = c.nregs;
  hci_leaks.end_tp = (uintptr_t)__builtin_thread_pointer();
  hci_leaks.end_sp = c.sp;
  if (hci_eh_static_exe()) static_start_frames(c.sp, eh_lo, eh_hi);
}

/* on_exit handlers get the status given to exit() (atexit handlers do
 * not); both kinds run in one list, in reverse order of registration. */
/* The thread that took exit_check from the handler list (this process's). */
static _Atomic int check_taken_by;
HC_PRIVATE_STATE(check_taken_by);
/* A thread that calls exit once the final check is taken waits for good
 * (claim_exit, exit_barrier); before that, exit goes on as libc has it. */
static void wait_for_good(void) {
  for (;;) pause();
}

/* Set once the exit check has passed and exit goes on (a failing one ends
 * the process itself). */
static _Atomic bool exit_check_done;
HC_PRIVATE_STATE(exit_check_done);

/* A thread that calls exit after the check was taken waits for good, unless
 * a thread joins it once the check is done: an exit handler registered
 * before ours (from a constructor) runs after the check, and one that joins
 * a thread calling exit meanwhile waited for ever (glibc 2.36 alone ends
 * the process with the second exit's status; 2.41 hangs by itself).  That
 * exit goes on then, as libc has it: the thread in exit is the joiner,
 * blocked until this one ends, so no two threads run the rest of exit (two
 * at once crashed in the library's destructors).  A joiner waits on this
 * thread's tid word (the kernel's clear_child_tid, PR_GET_TID_ADDRESS); a
 * wake that finds a waiter tells, and the joiner, woken for nothing, waits
 * again.  Without that address (no CONFIG_CHECKPOINT_RESTORE): for good. */
static void wait_unless_joined(void) {
  int *tid_word = NULL;
  if (hci_raw6(SYS_prctl, PR_GET_TID_ADDRESS, (long)&tid_word, 0, 0, 0, 0) != 0 || !tid_word) wait_for_good();
  for (;;) {
    struct timespec ts = {0, 10000000};
    hci_raw6(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
    if (atomic_load(&exit_check_done) && hci_raw6(SYS_futex, (long)tid_word, FUTEX_WAKE, INT_MAX, 0, 0, 0) > 0)
      return;
  }
}

static hc_noinline void exit_check(int status, void *arg __attribute__((unused))) {
  HCI_ENTRY_SP(sp);
  if (hci_os_memory_borrowed()) { /* a vfork child's exit: the check is its parent's */
    hci_leaks.exit_handlers_gone = true;
    return;
  }
  atomic_store(&check_taken_by, hci_os_tid());
  find_exit_caller();
  hci_leaks.exit_status = status;
  hci_leaks.have_status = true;
  final_check(sp, FINAL_AT_EXIT);
  atomic_store(&exit_check_done, true);
}

/* strict, draconian, as-is after destructors: the check runs in the
 * library destructor, which knows no status; this handler, run by exit()
 * before any destructor of a shared object, notes it. */
static void note_status(int status, void *arg) {
  (void)arg;
  if (hci_os_memory_borrowed()) hci_leaks.exit_handlers_gone = true;
  else hci_leaks.exit_status = status;
  hci_leaks.have_status = true;
}

/* Registered just before exit_check, so they run right after it: a thread
 * that takes one when another thread took exit_check (the list is popped in
 * order) waits until the process ends instead of ending it under the check;
 * each waiting thread holds one, so the list cannot run dry under the check
 * while fewer than EXIT_BARRIERS threads call exit.  Two threads calling
 * exit(0) together ended the process before the check in 10 of 10 runs
 * with 6 threads (static link, libc.a's exit). */
#define EXIT_BARRIERS 16
static void exit_barrier(int status, void *arg) {
  (void)status;
  (void)arg;
  if (hci_os_memory_borrowed() || atomic_load(&check_taken_by) == hci_os_tid()) return;
  wait_for_good();
}

static void register_exit_check(void) {
  if (hci_chk.after_destructors || !hci_chk.check_at_exit) {
    on_exit(note_status, NULL);
    return;
  }
  for (int i = EXIT_BARRIERS; i > 0; i--) on_exit(exit_barrier, NULL);
  on_exit(exit_check, NULL);
}

/* Priority 101 runs after every other destructor of the same object (the
 * lowest priority is destroyed last): when linked into the executable
 * (libheapcheck.a), the program's own destructors share its .fini_array,
 * which runs backwards, and would otherwise run after this check. */
__attribute__((destructor(101))) static hc_noinline void checker_dtor(void) {
  HCI_ENTRY_SP(sp);
  if (!(hci_chk.active && hci_chk.check_at_exit && hci_chk.after_destructors) || hci_os_memory_borrowed()) return;
  atomic_store(&check_taken_by, hci_os_tid());
  find_exit_caller();
  final_check(sp, FINAL_AT_EXIT);
}

/* After a vfork child's exit this process's exit runs no handler and no
 * destructor: the final check runs from exit (or main's return) itself. */
static hc_noinline void check_if_handlers_gone(int status) {
  HCI_ENTRY_SP(sp);
  if (!hci_leaks.exit_handlers_gone || hci_os_memory_borrowed() || !hci_chk.check_at_exit) return;
  hci_leaks.exit_status = status;
  hci_leaks.have_status = true;
  final_check(sp, FINAL_AT_EXIT);
}

// ---- start-up ----

/* The names every process looks up at start-up (dlsym compares them), in
 * .data rather than .rodata: a literal lands anywhere in .rodata, and one
 * read there can map another 64 KiB window of it (docs/performance.md,
 * "Start-up overhead"); .data is resident anyway. */
static char name_exit[] = "exit";
static char name_start_main[] = "__libc_start_main";

/* The frame that called us ends at our frame address + the saved frame
 * pointer and return address: the caller's stack pointer at the call. */
#define CALLER_SP() ((uintptr_t)__builtin_frame_address(0) + 2 * sizeof(void *))

/* Its caller's stack pointer at the call: the bottom of the caller's frame. */
static hc_noinline uintptr_t frame_bottom_of_caller(void) { return CALLER_SP(); }

/* Two threads calling exit at once (C calls it undefined; glibc before 2.41
 * lets them race): the second one ran the exit handlers the first one had
 * not taken yet - none, once the first had taken the check's - and ended
 * the process while the first was starting the check: no report, the
 * program's leak missed in every run of a program whose two threads called
 * exit(0) together.  A thread that calls exit (or returns from main) once
 * another thread of the process has taken the final check waits until the
 * process ends (glibc 2.41's rule); before that, exit goes on as libc has
 * it (glibc 2.36: the second exit runs the handlers the first has not
 * taken; the exit barriers hold it from the check on).  Waiting whenever
 * another thread was in exit hung a program whose exit handler joins the
 * thread that called exit second (it ends under glibc 2.36); letting the
 * waiters go once the check was done crashed (SIGSEGV in 3 of 40 runs of
 * pthread-exit-race: the library's destructors run by two threads). */
static _Atomic uint64_t exit_claim; /* pid << 32 | tid of the thread in exit, 0 */
HC_PRIVATE_STATE(exit_claim);

static void claim_exit(void) {
  if (!hci_chk.active || !hci_chk.check_at_exit || hci_os_memory_borrowed()) return;
  uint64_t pid = (uint64_t)getpid(), me = pid << 32 | (uint32_t)hci_os_tid();
  uint64_t cur = atomic_load(&exit_claim);
  for (;;) {
    if (cur == me) return;          /* exit again from this thread (a handler): libc's business */
    if (cur >> 32 == pid) break;    /* another thread of this process is ending it */
    if (atomic_compare_exchange_weak(&exit_claim, &cur, me)) return;
  }
  if (atomic_load(&check_taken_by)) wait_unless_joined();
}

static hc_noinline int start_main(int argc, char **argv, char **envp) {
  /* This frame and our caller's up to argc are the start frames (roots.c):
   * this one's padding may hold a constructor's stale words. */
  hci_roots_set_start_frames((uintptr_t)__builtin_thread_pointer(), frame_bottom_of_caller(),
                             (uintptr_t)argv - sizeof(long));
  if (hci_chk.baseline_at_main)
    hci_leaks.base_epoch = hci_alloc_next_epoch();
  /* Registered after every global constructor: runs before their destructors. */
  register_exit_check();
  int rc = hci_leaks.real_main(argc, argv, envp);
  claim_exit();
  /* main returned: its frames are dead; libc calls exit from our caller. */
  if (!hci_leaks.end_sp) {
    hci_leaks.exit_tid = hci_os_tid();
    hci_leaks.end_tp = (uintptr_t)__builtin_thread_pointer();
    hci_leaks.end_nregs = 0;
    hci_leaks.end_sp = CALLER_SP();
  }
  check_if_handlers_gone(rc);
  return rc;
}

/* Records where the program ended: the frame that called exit and the
 * callee-saved registers as that frame left them (n of them in regs); that
 * frame and its callers are live, exit's own are not. */
static void note_exit_caller(const uintptr_t *regs, int n, uintptr_t caller_sp) {
  if (!hci_chk.active || !hci_chk.global_check || hci_leaks.end_sp || hci_os_memory_borrowed()) return;
  hci_leaks.exit_tid = hci_os_tid();
  if (n > (int)(sizeof hci_leaks.end_regs / sizeof hci_leaks.end_regs[0])) n = (int)(sizeof hci_leaks.end_regs / sizeof hci_leaks.end_regs[0]);
  memcpy(hci_leaks.end_regs, regs, (size_t)n * sizeof regs[0]);
  hci_leaks.end_nregs = n;
  hci_leaks.end_tp = (uintptr_t)__builtin_thread_pointer();
  hci_leaks.end_sp = caller_sp;
}

static hc_noinline __attribute__((noreturn)) void call_real_exit(int status) {
  void (*real)(int) = hci_leaks.real_exit;
  if (!real) *(void **)&real = dlsym(RTLD_NEXT, name_exit);
  if (!real) _exit(status);
  real(status);
  __builtin_unreachable();
}

#if defined(__x86_64__)
/* exit, interposed (weak, like __libc_start_main).  Its entry is a stub
 * that pushes the callee-saved registers before any compiled code can use
 * one: a C exit() keeps `status` in rbx across its first call, and rbx was
 * where ssh kept its only pointer to a live 88-byte object (reported as a
 * leak; valgrind and LSan see it).  The C half gets {rbx, r12..r15, rbp}
 * on the stack, the return address right above them; the saved rbp and
 * the return address are a frame record (with CFI) for stack walks. */
__attribute__((noreturn, used)) void hci_exit_regs(int status, const uintptr_t *regs);
__attribute__((noreturn, used)) void hci_exit_regs(int status, const uintptr_t *regs) {
  claim_exit();
  note_exit_caller(regs, 6, (uintptr_t)(regs + 7));
  check_if_handlers_gone(status);
  call_real_exit(status);
}

hc_public __attribute__((weak, naked, noreturn)) void exit(int status __attribute__((unused))) {
  __asm__("push %rbp\n\t" /* a frame record, so that walks from exit's callees reach main */
          ".cfi_adjust_cfa_offset 8\n\t"
          ".cfi_rel_offset %rbp, 0\n\t"
          "mov %rsp, %rbp\n\t"
          ".cfi_def_cfa_register %rbp\n\t"
          "push %r15\n\t"
          "push %r14\n\t"
          "push %r13\n\t"
          "push %r12\n\t"
          "push %rbx\n\t"
          "mov %rsp, %rsi\n\t"
          "sub $8, %rsp\n\t" /* 16-byte aligned at the call */
          "call hci_exit_regs\n\t"
          "ud2");
}
#else
/* Elsewhere the registers are captured first thing, in C: a register the
 * compiler used before the capture is lost (see the x86-64 stub). */
hc_public __attribute__((weak, noreturn)) void exit(int status) {
  uintptr_t regs[16];
  int n = hci_capture_regs(regs, 16);
  claim_exit();
  note_exit_caller(regs, n, CALLER_SP());
  check_if_handlers_gone(status);
  call_real_exit(status);
}
#endif

/* _exit, interposed: an at-exit handler registered in main runs before the
 * check (registered before main) and may end the process with _exit -
 * coreutils do when closing stdout or stderr fails.  Then, on the thread
 * inside exit() (a vfork child shares our memory but not our thread id),
 * the check runs first, without flushing stdio.  A direct _exit (no exit in
 * progress) checks too, as valgrind does at any end, when direct_exit.c
 * allows it: the process the checker started in, outside signal handlers,
 * not in LSan mode.  Every other _exit (a fork or vfork child, our own
 * after a report) goes straight to the kernel, as libc's does. */
hc_public __attribute__((weak, noreturn)) void _exit(int status) {
  if (hci_chk.active && hci_chk.check_at_exit && !atomic_load(&hci_leaks.main_done)) {
    /* Inside exit on this thread, or called directly in the process the
     * checker started in, outside any signal handler (direct_exit.c). */
    const char *no = hci_leaks.exit_tid ? (hci_leaks.exit_tid == hci_os_tid() ? NULL : "another thread is in exit")
                                : hci_direct_exit_refusal();
    if (!no) {
      HCI_ENTRY_SP(sp);
      hci_leaks.exit_status = status;
      hci_leaks.have_status = true;
      final_check(sp, FINAL_AT__EXIT);
    } else if (!hci_chk.lsan) {
      hci_chk_log(1, "heapcheck: _exit(%d): no leak check (%s)", status, no);
    }
  }
  hci_os_exit_now(status);
}

hc_public __attribute__((weak, noreturn, alias("_exit"))) void _Exit(int status);

typedef int (*main_fn_t)(int, char **, char **);
typedef int (*start_fn_t)(main_fn_t, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);

/* Interposed (weak: a static link keeps libc's own and uses the fallback). */
hc_public __attribute__((weak)) int __libc_start_main(main_fn_t main, int argc, char **argv, void (*init)(void),
                                                      void (*fini)(void), void (*rtld_fini)(void), void *stack_end) {
  start_fn_t real = (start_fn_t)(uintptr_t)dlsym(RTLD_NEXT, name_start_main);
  if (!real) hci_fatal("cannot find libc's __libc_start_main");
  if (hci_chk.active && hci_chk.global_check && !hci_leaks.real_main) {
    hci_leaks.real_main = main;
    main = start_main;
    hci_symbolize_hide((uintptr_t)start_main);
  }
  return real(main, argc, argv, init, fini, rtld_fini, stack_end);
}

void hci_checker_init(void) {
  hci_chk_options_read();
  if (!hci_chk.active) return;
  hci_direct_exit_init();
  if (!hci_chk.run_under_gdb && hci_proc_status_field("TracerPid") > 0) {
    hci_chk_log(HCI_LOG_WARNING, "Someone is ptrace()ing us; will turn itself off");
    hci_chk.active = false;
    return;
  }
  /* The report must reach the original stderr even if the program closes
   * fd 2 at exit (coreutils' close_stdout does), or HEAPCHECK_LOG_PATH. */
  hci_log_stream_open();
  /* A check must run when the program has used up its descriptors. */
  hci_proc_keep();
  hci_alloc_set_recording();
  /* Freed blocks are not given out again until 20 MB of frees later (as
   * valgrind's --freelist-vol): a stale pointer the program keeps to a block
   * it freed must not keep the next leak at that address alive. */
  hci_alloc_set_quarantine((size_t)hci_opt_int(HCO_HEAPCHECK_QUARANTINE));
  /* Not from every descendant of a launcher tree (a build runs thousands). */
  if (!hci_log_stream_in_tree() || hci_log_stream_tree_top())
    hci_chk_log(0, "WARNING: Perftools heap leak checker is active -- Performance may suffer");
}

static void ignore_object(void *ctx, const hci_heap_obj_t *o) {
  (void)ctx;
  atomic_fetch_or_explicit(&o->meta->xflags, HC_OBJ_IGNORED, memory_order_relaxed);
}

/* Every live object becomes an ignored one (a root). */
static void ignore_startup_objects(void) {
  hci_lock_all();
  hci_heap_for_each_object(ignore_object, NULL);
  hci_unlock_all();
  atomic_store_explicit(&hci_api_any_ignored, 1, memory_order_relaxed);
}

__attribute__((constructor(102))) static void checker_ctor(void) {
  hci_ensure_init();
  hci_chk_no_follow();
  *(void **)&hci_leaks.real_exit = dlsym(RTLD_NEXT, name_exit);
  if (!hci_chk.active) return;
  hci_symbolizer_note_exe();
  hci_lock(&hci_chk_lock);
  hci_chk_setup_once();
  hci_unlock(&hci_chk_lock);
  /* Statically linked, libc.a allocated the loader's state (link maps, the
   * search paths, _dl_find_object's tables) before any constructor: what
   * ld.so allocates in a dynamic process, and a root as those are. */
  if (hci_eh_static_exe()) ignore_startup_objects();
}

/* Without a priority: in a static link this runs after the constructors of
 * the objects linked before libheapcheck.a (the program's), a stand-in for
 * the start of main, whose __libc_start_main is libc.a's own. */
__attribute__((constructor)) static void checker_late_ctor(void) {
  if (!hci_chk.active || !hci_chk.global_check) return;
  /* Fallback when main does not start through our __libc_start_main
   * (static link): minimal's baseline is now, and the atexit check runs
   * after the destructors of constructors that ran before this one. */
  if (hci_chk.baseline_at_main)
    hci_leaks.base_epoch = hci_alloc_next_epoch();
  register_exit_check();
}

// ---- fork ----

void hci_checker_fork_locks(hci_lock_fn *each) { each(&hci_chk_lock); }

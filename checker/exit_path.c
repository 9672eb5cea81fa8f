/* exit_path.c - how the final whole-program check (leaks.c's
 * hci_chk_final) is reached when the program ends: the exit handlers (the
 * check's, its barriers, the status note), the library destructor of
 * HEAP_CHECK_AFTER_DESTRUCTORS, main run through start_main, the exit,
 * _exit and __libc_start_main interposers, where the program ended (exit's
 * caller, for the scan of its thread), and threads that call exit
 * together.  Moved out of leaks.c unchanged (session 16).
 *
 * Locks: none of its own; the fields of hci_leaks it writes (end_*, exit_*,
 * real_*) are written by the thread ending the program.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hc_checker.h"
#include "hc_symbolize.h"
#include "leaks_internal.h"

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
 * the process itself): exit_check's, or checker_dtor's after destructors. */
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
  atomic_store(&check_taken_by, hci_os_walled ? -1 : hci_os_tid());
  if (!hci_os_walled) find_exit_caller();
  hci_leaks.exit_status = status;
  hci_leaks.have_status = true;
  hci_chk_final(sp, FINAL_AT_EXIT);
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
/* Registration can fail: glibc's at-exit list grows by calloc, and a
 * program that has used up its memory (RLIMIT_DATA, RLIMIT_AS) before
 * main gets NULL.  A barrier registered without the exit_check above it
 * would wait for a check nobody takes: python under `ulimit -d 30000`
 * (its start-up failed, exit(1)) hung in exit for good.  Each
 * registration's barriers get a flag (their arg) set only once its
 * exit_check is registered; an unset one lets exit go on. */
#define EXIT_REGISTRATIONS 4 /* checker_late_ctor and start_main: 2 */
static _Atomic bool check_registered[EXIT_REGISTRATIONS];
static int registrations;
static void exit_barrier(int status, void *arg) {
  (void)status;
  if (!atomic_load((_Atomic bool *)arg)) return;
  if (hci_os_walled || hci_os_memory_borrowed() || atomic_load(&check_taken_by) == hci_os_tid()) return;
  wait_for_good();
}

void hci_exit_path_register(void) {
  if (hci_chk.after_destructors || !hci_chk.check_at_exit) {
    on_exit(note_status, NULL);
    return;
  }
  int k = registrations < EXIT_REGISTRATIONS ? registrations++ : EXIT_REGISTRATIONS - 1;
  _Atomic bool *registered = &check_registered[k];
  for (int i = EXIT_BARRIERS; i > 0; i--) on_exit(exit_barrier, (void *)registered);
  if (on_exit(exit_check, NULL) == 0) {
    atomic_store(registered, true);
    return;
  }
  /* No handler will run the check: exit (interposed) and main's return run
   * it themselves, as after a vfork child's exit (check_if_handlers_gone),
   * unless an earlier registration's handler is there to do it. */
  for (int i = 0; i < EXIT_REGISTRATIONS; i++)
    if (atomic_load(&check_registered[i])) return;
  hci_leaks.exit_handlers_gone = true;
  hci_chk_log(1, "heapcheck: no memory to register the exit check's handler: exit runs it");
}

/* The check of strict, draconian and as-is after destructors (the world
 * stopped, exit's caller found first); passed, exit goes on. */
static void after_destructors_check(uintptr_t sp) {
  atomic_store(&check_taken_by, hci_os_walled ? -1 : hci_os_tid());
  if (!hci_os_walled) find_exit_caller();
  hci_chk_final(sp, FINAL_AT_EXIT);
  /* Passed: exit goes on.  A later destructor or handler that joins a
   * thread which called exit meanwhile lets it go (wait_unless_joined): it
   * waited for good (glibc 2.36 alone: status 5). */
  atomic_store(&exit_check_done, true);
}

/* Set by our __libc_start_main when it registered late_check: the library
 * destructor then leaves the check to it. */
static bool late_check_registered;
HC_PRIVATE_STATE(late_check_registered);

/* strict, draconian, as-is after destructors, in a dynamic process: the
 * check runs from this exit handler, which our __libc_start_main registers
 * before libc's registers the loader's _dl_fini.  exit runs its handlers
 * backwards, so this one runs after _dl_fini: after the destructors of
 * every shared object, where valgrind looks.  The library destructor below
 * runs inside _dl_fini, in the loader's order, which puts the libraries the
 * program links (initialised before a preloaded libheapcheck.so, which none
 * of them needs) after it: their ELF destructors, and the C++ globals they
 * built at load time (destroyed there by __cxa_finalize), ran after that
 * check.  aspell's dictionary lists, freed by a global's destructor in
 * libaspell, were 206 objects "possibly lost" for strict and gone for
 * valgrind; a pointer such a destructor drops was no leak (scenario
 * lib_dtor_forget). */
static hc_noinline void late_check(int status, void *arg) {
  HCI_ENTRY_SP(sp);
  note_status(status, arg);
  if (!(hci_chk.active && hci_chk.check_at_exit && hci_chk.after_destructors) || hci_os_memory_borrowed()) return;
  after_destructors_check(sp);
}

/* Priority 101 runs after every other destructor of the same object (the
 * lowest priority is destroyed last): when linked into the executable
 * (libheapcheck.a), the program's own destructors share its .fini_array,
 * which runs backwards, and would otherwise run after this check.  Where
 * late_check is registered (our __libc_start_main ran) it checks instead. */
__attribute__((destructor(101))) static hc_noinline void checker_dtor(void) {
  HCI_ENTRY_SP(sp);
  if (!(hci_chk.active && hci_chk.check_at_exit && hci_chk.after_destructors) || hci_os_memory_borrowed() ||
      late_check_registered)
    return;
  after_destructors_check(sp);
}

/* After a vfork child's exit this process's exit runs no handler and no
 * destructor: the final check runs from exit (or main's return) itself. */
static hc_noinline void check_if_handlers_gone(int status) {
  HCI_ENTRY_SP(sp);
  if (!hci_leaks.exit_handlers_gone || hci_os_memory_borrowed() || !hci_chk.check_at_exit) return;
  hci_leaks.exit_status = status;
  hci_leaks.have_status = true;
  hci_chk_final(sp, FINAL_AT_EXIT);
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
  /* Walled in (a seccomp filter that may kill, os.c): no check will run,
   * and getpid or gettid may be what the filter kills. */
  if (!hci_chk.active || !hci_chk.check_at_exit || hci_os_walled || hci_os_memory_borrowed()) return;
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
  hci_exit_path_register();
  int rc = hci_leaks.real_main(argc, argv, envp);
  claim_exit();
  /* main returned: its frames are dead; libc calls exit from our caller. */
  if (!hci_leaks.end_sp && !hci_os_walled) {
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
  if (!hci_chk.active || !hci_chk.global_check || hci_leaks.end_sp || hci_os_walled || hci_os_memory_borrowed())
    return;
  hci_leaks.exit_tid = hci_os_tid();
  if (n > (int)(sizeof hci_leaks.end_regs / sizeof hci_leaks.end_regs[0])) n = (int)(sizeof hci_leaks.end_regs / sizeof hci_leaks.end_regs[0]);
  memcpy(hci_leaks.end_regs, regs, (size_t)n * sizeof regs[0]);
  hci_leaks.end_nregs = n;
  hci_leaks.end_tp = (uintptr_t)__builtin_thread_pointer();
  hci_leaks.end_sp = caller_sp;
}

/* A failing check at exit (normal, minimal) let exit go on under its status
 * (hci_exit_path_go_on): 0x100 | the status, and the process it is for (a
 * fork or vfork child of a destructor ends with its own).  An exit or _exit
 * of status 0 that ends the process after that ends it with this status; a
 * failing one (an exit handler's exit(8) after the check) is the program's
 * own failure, and kept, as a failing status at the check is (it was
 * replaced by the check's 1). */
static _Atomic int failing_status;
static _Atomic int failing_pid;
HC_PRIVATE_STATE(failing_status);
HC_PRIVATE_STATE(failing_pid);

static int ending_status(int status) {
  int f = atomic_load(&failing_status);
  if (!f || (status & 0xff) != 0 || hci_os_memory_borrowed() ||
      (!hci_os_walled && atomic_load(&failing_pid) != (int)hci_raw6(SYS_getpid, 0, 0, 0, 0, 0, 0)))
    return status;
  return f & 0xff;
}

static hc_noinline __attribute__((noreturn)) void call_real_exit(int status) {
  status = ending_status(status);
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
  /* Another thread's final check is running: not under it (leaks.c). */
  if (hci_chk.active && hci_chk.check_at_exit) hci_chk_final_wait();
  if (hci_chk.active && hci_chk.check_at_exit && !atomic_load(&hci_leaks.main_done)) {
    /* Inside exit on this thread, or called directly in the process the
     * checker started in, outside any signal handler (direct_exit.c). */
    const char *no = hci_leaks.exit_tid ? (hci_leaks.exit_tid == hci_os_tid() ? NULL : "another thread is in exit")
                                : hci_direct_exit_refusal();
    if (!no) {
      HCI_ENTRY_SP(sp);
      hci_leaks.exit_status = status;
      hci_leaks.have_status = true;
      hci_chk_final(sp, FINAL_AT__EXIT);
    } else if (!hci_chk.lsan) {
      hci_chk_log(1, "heapcheck: _exit(%d): no leak check (%s)", status, no);
    }
  }
  hci_os_exit_now(ending_status(status));
}

hc_public __attribute__((weak, noreturn, alias("_exit"))) void _Exit(int status);

/* daemon(3), interposed in checker mode.  glibc's forks and ends the
 * parent with libc's internal _exit(0), which no interposer sees: the
 * parent, the process the checker started in, ended unchecked (valgrind
 * checks it), and the launcher could only say it ended "without its leak
 * check" (heapcheck nghttpx --daemon).  The same steps, with the parent
 * ending through our _exit, which checks it as any daemon's parent that
 * calls _exit after fork: fork; in the child setsid, chdir("/") unless
 * nochdir, and unless noclose /dev/null on descriptors 0, 1 and 2 when it
 * is a character device (ENODEV otherwise, as glibc).  Without the checker
 * (or its check at exit), libc's own. */
static char name_daemon[] = "daemon";
hc_public __attribute__((weak)) int daemon(int nochdir, int noclose) {
  if (!(hci_chk.active && hci_chk.check_at_exit)) {
    int (*real)(int, int);
    *(void **)&real = dlsym(RTLD_NEXT, name_daemon);
    if (real) return real(nochdir, noclose);
  }
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid > 0) _exit(0);
  if (setsid() < 0) return -1;
  if (!nochdir) (void)!chdir("/");
  if (!noclose) {
    int fd = open("/dev/null", O_RDWR);
    if (fd < 0) return -1;
    struct stat st;
    int bad = fstat(fd, &st) != 0 ? errno : S_ISCHR(st.st_mode) ? 0 : ENODEV;
    if (bad) {
      close(fd);
      errno = bad;
      return -1;
    }
    for (int i = 0; i < 3; i++) (void)dup2(fd, i);
    if (fd > 2) close(fd);
  }
  return 0;
}

/* Called by the check's own thread from exit_check, the world let go: a
 * nested exit from an exit handler runs the handlers left and the
 * destructors and ends with the last exit's status (glibc's exit, 2.36 and
 * 2.41 alike).  Ending the process with _exit there instead dropped what
 * the program writes after our handler: libgfortran's units, flushed by its
 * destructor (a leaking Fortran program printed nothing), a handler a
 * constructor registered.  Threads waiting in exit (claim_exit) still wait,
 * unless a destructor joins them; they, and a destructor's _exit, end the
 * process with this status.  Returns when libc's exit is unknown (a static
 * link): the caller ends the process itself. */
void hci_exit_path_go_on(int status) {
  if (!hci_leaks.real_exit || hci_os_memory_borrowed()) return;
  atomic_store(&failing_pid, hci_os_walled ? 0 : (int)hci_raw6(SYS_getpid, 0, 0, 0, 0, 0, 0));
  atomic_store(&failing_status, 0x100 | (status & 0xff));
  atomic_store(&exit_check_done, true);
  hci_leaks.real_exit(status);
  __builtin_unreachable();
}

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
    /* Before real() registers rtld_fini: runs after it (late_check). */
    if (hci_chk.check_at_exit && hci_chk.after_destructors && on_exit(late_check, NULL) == 0)
      late_check_registered = true;
  }
  return real(main, argc, argv, init, fini, rtld_fini, stack_end);
}

/* Our exit under a name no link can take from it. */
extern void hci_own_exit(int) __attribute__((alias("exit"), visibility("hidden"), noreturn, leaf, nothrow));

/* libc's exit: the next definition (dynamic), or in a static link libc.a's,
 * which takes the name `exit` from our weak one - dlsym finds nothing there,
 * and the process ended with _exit after a failing check, so a handler
 * registered by a constructor or a destructor never ran (its output lost). */
void hci_exit_path_init(void) {
  *(void **)&hci_leaks.real_exit = dlsym(RTLD_NEXT, name_exit);
  if (!hci_leaks.real_exit && (uintptr_t)&exit != (uintptr_t)&hci_own_exit) hci_leaks.real_exit = exit;
}

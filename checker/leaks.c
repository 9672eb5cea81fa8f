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
 * exits normally is checked too (the file names carry its pid).  How the
 * final check is reached when the program ends (the exit handlers and
 * barriers, the exit, _exit and __libc_start_main interposers, threads
 * calling exit together) is exit_path.c's.
 *
 * Entry points save the caller's callee-saved registers in their own frame
 * (__builtin_unwind_init) and pass the address of a local below them, so the
 * stack scan covers the caller's registers but no dead checker frames.
 *
 * Locks: hci_chk_lock (check_run.c) around each check and the constructor's
 * set-up.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
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

/* A failing final check ends the program with status.  In exit's handler
 * (normal, minimal: before the destructors) exit goes on under that status,
 * the threads let go, as after a passing check: the program's output
 * written by later handlers and destructors is kept. */
static __attribute__((noreturn)) void end_failing(int status, hci_final_from_t from) {
  if (from == FINAL_AT_EXIT && !hci_chk.after_destructors) {
    hci_chk_release_held();
    hci_exit_path_go_on(status);
  }
  end_held(status);
}

/* Two threads ending the process together (h2o's main thread and a worker
 * both call _exit(0) on SIGTERM): the second one's _exit found the check
 * taken and ended the process under it, so the report was cut short or
 * never written and the status was the program's 0 (scenario
 * threads_underscore_exit_race: lost in nearly every run with four threads).
 * The thread running the check is noted; another thread of the process
 * waits until the check is over: its thread then ends the process (leaks,
 * or the _exit it was in), or the program goes on (a check it asked for),
 * and so does the waiter.  Polled: a futex word here would be one more
 * thing the check stops the world around. */
static uint64_t final_owner_me(void) {
  return (uint64_t)hci_raw6(SYS_getpid, 0, 0, 0, 0, 0, 0) << 32 | (uint32_t)hci_os_tid();
}

void hci_chk_final_wait(void) {
  uint64_t o = atomic_load(&hci_leaks.final_owner);
  if (!o || hci_os_walled || hci_os_memory_borrowed()) return;
  uint64_t me = final_owner_me();
  if (o >> 32 != me >> 32 || o == me) return; /* a fork child's copy, or this thread's own */
  while (atomic_load(&hci_leaks.final_owner) == o) {
    struct timespec ts = {0, 1000000};
    hci_raw6(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
  }
}

static void final_check(uintptr_t sp, hci_final_from_t from);

/* glibc's list of open streams and its lock (exported since 2.2.5; libc.a
 * has them too). */
extern FILE *_IO_list_all;
extern void _IO_list_lock(void);
extern void _IO_list_unlock(void);

/* Whether stream f writes where the report goes (the same file, pipe or
 * terminal as report_fd): unknown counts as yes. */
static bool shares_report(FILE *f, int report_fd) {
  int fd = fileno_unlocked(f);
  struct stat a, b;
  if (fd < 0 || report_fd < 0 || syscall(SYS_fstat, fd, &a) != 0 || syscall(SYS_fstat, report_fd, &b) != 0) return true;
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* Flushes the program's streams before the final check, so that its output
 * comes before the report (which ends with SUMMARY).  fflush(NULL) takes every stream's lock, and a thread
 * blocked in fgets(stdin) holds stdin's for good: the exit check of such a
 * program hung for ever (libc's own flush at exit takes no stream lock).  A
 * stream another thread holds is left as it is (it is in the middle of an
 * operation of that thread's).  With `all` false (exit goes on after the
 * check, and libc flushes at its end) only the streams that share the
 * report's destination: a stdout going elsewhere flushed early came before
 * what a later exit handler wrote to it with write(2) - the program's own
 * bytes reordered (plain: the handler's line first). */
static void flush_streams(bool all) {
  int report_fd = all ? -1 : hci_log_stream_fd();
  _IO_list_lock();
  for (FILE *f = _IO_list_all; f; f = f->_chain) {
    if (ftrylockfile(f) != 0) continue;
    /* Output waiting only, as fflush(NULL): fflush of a stream being read
     * seeks its descriptor back (a stdin shared with the parent).  A wide
     * stream: writing (_IO_CURRENTLY_PUTTING). */
    if ((f->_mode <= 0 ? f->_IO_write_ptr > f->_IO_write_base : (f->_flags & 0x800) != 0) &&
        (all || shares_report(f, report_fd)))
      fflush_unlocked(f);
    funlockfile(f);
  }
  _IO_list_unlock();
}

/* The owner is claimed before main_done is taken, in one compare-and-swap:
 * claimed after it, a second thread's _exit that came in between found
 * main_done set and no owner yet, did not wait, and ended the process under
 * the check (threads_underscore_exit_race: 29 runs of 40 in the release
 * build, exit 0 and no report).  A fork child's copy of its parent's owner
 * (another pid) is replaced. */
static bool claim_final(uint64_t me) {
  uint64_t o = 0;
  while (!atomic_compare_exchange_weak(&hci_leaks.final_owner, &o, me)) {
    if (o != 0 && o >> 32 == me >> 32) return false; /* this process's: a check is running or ran here */
  }
  return true;
}

hc_noinline void hci_chk_final(uintptr_t sp, hci_final_from_t from) {
  bool track = !hci_os_walled && !hci_os_memory_borrowed();
  if (track && !claim_final(final_owner_me())) {
    hci_chk_final_wait();
    return;
  }
  if (atomic_exchange(&hci_leaks.main_done, 1)) { /* a check ran already and is over (its owner let go): no wait */
    if (track) atomic_store(&hci_leaks.final_owner, 0);
    return;
  }
  /* The exit handlers after ours see the errno the ones before left (its
   * flush, report and record files are not the program's: they saw ENOENT). */
  int err = errno;
  final_check(sp, from);
  if (track) atomic_store(&hci_leaks.final_owner, 0);
  errno = err;
}

static void final_check(uintptr_t sp, hci_final_from_t from) {
  if (from != FINAL_FROM_API && !hci_locks_held_here) hci_api_run_cleanups(); /* else: hci_chk_run says why */
  if (atomic_load(&hci_leaks.main_cancelled) && from != FINAL_FROM_API) return;
  if (from != FINAL_FROM_API) hci_log_stream_ending();
  /* _exit flushes nothing: neither may its check (output a program drops
   * must stay dropped), nor free libc's buffers under it.  Else the
   * program's output comes before the report (which ends with SUMMARY). */
  /* Where exit goes on after the check (end_failing: normal and minimal,
   * in exit's handler) libc flushes the rest at its end. */
  if (from != FINAL_AT__EXIT)
    flush_streams(from != FINAL_AT_EXIT || hci_chk.after_destructors || hci_chk.identify_leaks);
  if (hci_chk.free_libc && from == FINAL_AT_EXIT && !hci_locks_held_here) hci_api_free_libc();
  ssize_t bytes, objects;
  int ok = global_check(sp, true, &bytes, &objects);
  /* Under the launcher a process keeps its own status and the launcher
   * decides from its record (hci_chk.keep_status), but not the program
   * the launcher started when its record could not be written (an
   * inherited RLIMIT_FSIZE: the launcher said "no leaks found" and exited
   * 0 under the program's report): it ends as without the launcher. */
  bool told = hci_tree_note(bytes, objects, !ok && hci_leaks.incomplete);
  bool keep = hci_chk.keep_status && (told || !hci_log_stream_tree_top());
  if (ok) return;
  /* The other threads are still stopped (hold): stdio was flushed before
   * the check, and flushing again could wait for a lock a stopped thread
   * holds. */
  if (hci_leaks.incomplete) {
    if (!keep && !hci_chk_program_failed()) end_failing(hci_chk.error_exit_code, from);
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
  if (keep) {
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
  end_failing(hci_chk.exit_code, from);
}

void hci_chk_final_now(uintptr_t sp) {
  if (hci_chk.active) hci_chk_final(sp, FINAL_FROM_API);
}

int hci_chk_recoverable_now(uintptr_t sp) {
  if (!hci_chk.active) return 0;
  ssize_t b, o;
  return !global_check(sp, false, &b, &o);
}

void hci_checker_init(void) {
  hci_chk_options_read();
  if (!hci_chk.active) {
    if (hci_chk.double_free == 0) hci_mem_errors_init(); /* LSan's detect_double_free=0 (not in start-up's hot text) */
    return;
  }
  hci_direct_exit_init();
  hci_exec_watch_init();
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
  /* Double frees say where the block was allocated and first freed. */
  hci_mem_errors_init();
  /* Not from every descendant of a launcher tree (a build runs thousands). */
  if (!hci_log_stream_in_tree() || hci_log_stream_tree_top())
    hci_chk_log(0, "WARNING: Perftools heap leak checker is active -- Performance may suffer");
}

void hci_checker_stand_down(const char *why) {
  if (!hci_chk.active) return;
  /* Not from a descendant of a launcher tree: its report file would hold
   * this line alone, and the launcher kept it as an unfinished report
   * (val29); with no record either, the process is simply not counted. */
  if (!hci_log_stream_in_tree() || hci_log_stream_tree_top())
    hci_chk_log(HCI_LOG_WARNING, "heapcheck: %s: no leak check", why);
  hci_chk.active = false;
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
  hci_exit_path_init();
  hci_exec_watch_resolve();
  hci_close_watch_resolve();
  hci_sigwait_watch_resolve();
  hci_sigaction_watch_resolve();
  /* In every mode: found at a first call, libc's poll, nanosleep... were
   * looked up with dlsym, which waits for the loader's lock; a thread
   * inside dlopen whose module's constructor waited for the main loop
   * deadlocked the process at its first poll, without the checker too
   * (adv29; glibc alone ends). */
  hci_timed_waits_resolve();
  if (!hci_chk.active) return;
  hci_stw_watch_actions();
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
  hci_exit_path_register();
}

// ---- fork ----

/* In rank order.  The set-up and root-table locks are taken outside the
 * checker's: a fork beside another thread's first check or root
 * registration left them held in the child (fork_gate2 in
 * docs/validation.md, session 24). */
void hci_checker_fork_locks(hci_lock_fn *each) {
  each(&hci_chk_lock);
  hci_stw_fork_locks(each);
  hci_tls_fork_locks(each);
  hci_roots_fork_locks(each);
}

/* The fork child: the seccomp gate's owner was another thread of the
 * parent's (a check asked beside the fork): it spun in the child for good. */
void hci_checker_fork_child(void) { hci_seccomp_fork_child(); }

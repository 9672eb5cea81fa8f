/* leaks.c - when checks run and what they do: the whole-program check at
 * exit, scoped checks, NoGlobalLeaks, the exit status (design D15).
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
 * Locks: hci_chk_lock (first in the lock order) is held from before the
 * world stops until the report is printed; world init comes before it
 * because it may malloc (dlsym).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hc_checker.h"
#include "hc_symbolize.h"

hci_lock_t hci_chk_lock = HCI_LOCK_INIT(HC_RANK_CHECKER);

static struct {
  _Atomic int main_done;        /* the final whole-program check started */
  _Atomic int main_cancelled;   /* hc_cancel_global_check */
  int base_epoch;               /* minimal: first epoch reported; -1 = all */
  bool setup_done;              /* exclusions and suppressions (under hci_chk_lock) */
  bool traced_noted;
  bool have_status;             /* exit_status is the status given to exit() */
  int exit_status;
  bool incomplete;              /* the last check could not complete */
  hci_world_t held;             /* a failing final check's world, still stopped */
  bool holding;
  ssize_t g_bytes, g_objects;   /* last whole-program check; -1 = none yet */
  int (*real_main)(int, char **, char **);
  /* Where the program ended: the stack pointer of the frame that called
   * exit (or that main returned to) and its thread.  The final check scans
   * that thread's stack from there up: below it lie only dead frames (main's
   * and its callees' after main returned, exit's own).  The registers are
   * exit's caller's callee-saved ones (main's values live there). */
  uintptr_t end_sp, end_tp;
  int exit_tid;                 /* the thread inside exit() (0: none): its _exit checks first */
  uintptr_t end_regs[16];
  int end_nregs;
  void (*real_exit)(int);
  /* A vfork child called exit: libc ran (and so removed) every exit handler
   * of this process, ours among them, in the child, and refuses new ones. */
  bool exit_handlers_gone;
} L = {.base_epoch = -1, .g_bytes = -1, .g_objects = -1};
HC_PRIVATE_STATE(L);

// ---- small helpers ----

static void fmt_ms(char *buf, size_t size, uint64_t ns) {
  hci_snprintf(buf, size, "%llu.%03llu", (unsigned long long)(ns / 1000000),
               (unsigned long long)(ns / 1000 % 1000));
}

/* The writable segments of libheapcheck.so itself: allocator, checker,
 * symbolizer and profiler state that holds no pointer the program owns, but
 * may hold heap-looking values (a mapping's bounds remembered after it was
 * given back and reused for the heap, a span start): excluded as a whole
 * (design D13).  Not when the library is linked into the executable, whose
 * data segment holds the program's globals too. */
static int own_segments_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  int *index = arg;
  bool is_main = (*index)++ == 0;
  uintptr_t us = (uintptr_t)&hci_chk;
  bool ours = false;
  for (int i = 0; i < info->dlpi_phnum && !ours; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    ours = ph->p_type == PT_LOAD && us >= lo && us < lo + ph->p_memsz;
  }
  if (!ours) return 0;
  if (is_main) return 1; /* static link: only the ranges named in setup_once */
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W)) continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    hci_roots_exclude(lo, lo + ph->p_memsz);
  }
  return 1;
}

extern const hci_state_range_t __start_hc_state_ranges[] __attribute__((visibility("hidden")));
extern const hci_state_range_t __stop_hc_state_ranges[] __attribute__((visibility("hidden")));

/* Once, under hci_chk_lock and with the world running. */
static void setup_once(void) {
  if (L.setup_done) return;
  L.setup_done = true;
  /* Every module's registered private state (HC_PRIVATE_STATE; the
   * allocator's central lists, page heap, pagemap root, empty cache and
   * sample list among them: they point only at metadata or free objects):
   * needed when the library is linked statically, harmless (already
   * covered) otherwise. */
  for (const hci_state_range_t *r = __start_hc_state_ranges; r < __stop_hc_state_ranges; r++)
    hci_roots_exclude((uintptr_t)r->addr, (uintptr_t)r->addr + r->size);
  int index = 0;
  dl_iterate_phdr(own_segments_cb, &index);
  hci_roots_static_loader();
  hci_supp_init();
}

static void note_if_traced(void) {
  if (L.traced_noted) return;
  L.traced_noted = true;
  long tracer = hci_proc_status_field("TracerPid");
  if (tracer > 0)
    hci_chk_log(HCI_LOG_INFO,
                "heapcheck: note: traced by pid %ld; leak checks stop threads with signal %d (in gdb: "
                "handle SIG%d nostop noprint pass)",
                tracer, hci_stop_signal(), hci_stop_signal());
}

// ---- one check ----

/* Drops suppressed leaks from r (counting them); true when a stack matched
 * for the first time, i.e. the check must be redone with it as a root. */
static bool apply_suppressions(hci_flood_result_t *r, bool count) {
  bool fresh = false;
  size_t keep = 0;
  r->leaked_bytes = 0;
  for (size_t i = 0; i < r->nleaks; i++) {
    hci_leak_t *l = &r->leaks[i];
    bool known = hci_supp_is_suppressed(l->stack_id);
    int rule = hci_supp_match(l->stack_id);
    if (rule >= 0) {
      if (!known) fresh = true;
      if (count) hci_supp_count(rule, 1, l->size);
      continue;
    }
    r->leaked_bytes += l->size;
    r->leaks[keep++] = *l;
  }
  r->nleaks = keep;
  return fresh;
}

static void test_alignment(hci_world_t *w, const hci_flood_params_t *p0) {
  hci_flood_params_t p = *p0;
  p.align = 1;
  hci_flood_result_t r;
  if (hci_flood_check(w, &p, &r) != 0) return;
  apply_suppressions(&r, false);
  if (r.nleaks == 0) {
    hci_chk_log(HCI_LOG_ERROR,
                "Found no leaks without pointer alignment: something might be placing pointers at unaligned "
                "addresses! This needs to be fixed.");
  } else {
    hci_chk_log(HCI_LOG_ERROR,
                "Found leaks without pointer alignment as well: unaligned pointers must not be the cause of leaks.");
    hci_chk_log(HCI_LOG_ERROR, "--heap_check_test_pointer_alignment did not help to diagnose the leaks.");
  }
  hci_flood_result_free(&r);
}

static void log_timing(const hci_check_req_t *req, const hci_flood_result_t *r, int passes, uint64_t report_ns) {
  if (!hci_chk_log_on(1)) return;
  char stop[32], flood[32], rep[32], cpu[32];
  fmt_ms(cpu, sizeof cpu, r->t_flood_cpu_ns);
  fmt_ms(stop, sizeof stop, r->t_stop_ns);
  fmt_ms(flood, sizeof flood, r->t_flood_ns);
  fmt_ms(rep, sizeof rep, report_ns);
  hci_chk_log(1,
              "heapcheck: check \"%s\" timing: stop %s ms (%d threads), flood %s ms (%zu reachable objects, "
              "%zu bytes, %zu words scanned, %d pass%s), report %s ms, flood cpu %s ms",
              req->name, stop, r->nthreads, flood, r->reach_objects, r->reach_bytes, r->scanned_words, passes,
              passes == 1 ? "" : "es", rep, cpu);
  if (r->skipped_ranges)
    hci_chk_log(1, "heapcheck: check \"%s\": %zu unreadable bytes in %zu ranges not scanned (guard pages, "
                   "unmapped or PROT_NONE parts of roots and heap blocks)",
                req->name, r->skipped_bytes, r->skipped_ranges);
  if (!hci_chk_log_on(2)) return;
  char a[32], b[32], c[32], d[32];
  fmt_ms(a, sizeof a, r->t_setup_ns);
  fmt_ms(b, sizeof b, r->t_roots_ns);
  fmt_ms(c, sizeof c, r->t_extra_ns);
  fmt_ms(d, sizeof d, r->t_classify_ns);
  hci_chk_log(2, "heapcheck: check \"%s\" flood: marks %s ms, roots %s ms, ld.so/suppressed %s ms, leaks %s ms",
              req->name, a, b, c, d);
}

static bool program_failed(void);

/* A check that could not complete: said plainly, never "No leaks found". */
static void say_incomplete(const hci_check_req_t *req, const char *why) {
  hci_chk_log(HCI_LOG_ERROR,
              "heapcheck: error: leak check \"%s\" could not complete: %s. Its result is unknown: this is "
              "not a \"no leaks\" result",
              req->name, why);
  if (req->hold && !hci_chk.keep_status && !program_failed())
    hci_chk_log(HCI_LOG_ERROR, "Exiting with error code %d because the leak check could not complete "
                               "(HEAP_CHECK_ERROR_EXIT_CODE)", hci_chk.error_exit_code);
}

static int run_check(const hci_check_req_t *req, ssize_t *bytes, ssize_t *objects) {
  *bytes = *objects = 0;
  L.incomplete = false;
  hci_world_t w;
  if (hci_world_init(&w) != 0) {
    L.incomplete = true;
    say_incomplete(req, "out of memory for the check's own buffers (RLIMIT_AS or RLIMIT_DATA, or the address space is full)");
    return 0;
  }
  w.self_sp = req->self_sp;
  hci_lock(&hci_chk_lock);
  setup_once();
  note_if_traced();
  if (req->whole_program && !hci_chk.scan_threads)
    hci_chk_log(HCI_LOG_INFO, "Not looking for thread stacks; objects reachable only from there will be reported as leaks");
  if (req->whole_program && !hci_chk.scan_globals)
    hci_chk_log(1, "Not looking for global data; objects reachable only from there will be reported as leaks");
  hci_flood_params_t p = {
      /* The mode's roots hold for every check (gperftools: draconian's
       * scoped checks have no liveness flood either). */
      .scan_threads = hci_chk.scan_threads,
      .thread_parts = hci_chk.thread_parts,
      .scan_globals = hci_chk.scan_globals,
      .no_ld_roots = hci_chk.no_ld_roots,
      .no_regions = hci_chk.no_regions,
      .no_mappings = hci_chk.no_mapping_roots,
      .report_all = req->whole_program && L.base_epoch < 0,
      .base_epoch = (uint16_t)(req->whole_program ? (L.base_epoch < 0 ? 0 : L.base_epoch) : req->base_epoch),
      .align = hci_chk.pointer_alignment,
      .max_offset = hci_chk.max_pointer_offset,
      .self_sp = req->self_sp,
      .self_regs = req->self_regs,
      .self_nregs = req->self_nregs,
      .hold = req->hold,
  };
  hci_flood_result_t r;
  int passes = 0, rc;
  /* Suppressed stacks become roots and the check is redone, so what only
   * they reach is not reported as indirect leaks (LSan does the same).
   * With req->hold the world stays stopped through the report when the
   * process is to end on it: the symbolizer's lock is taken before the stop,
   * like the allocator's, so no stopped thread holds it. */
  for (;;) {
    if (p.hold) hci_symbolizer_lock();
    rc = hci_flood_check(&w, &p, &r);
    if (p.hold) hci_symbolizer_unlock();
    if (rc == 0 && hci_chk.log_threads && req->whole_program) hci_lsan_log_threads(&w, req->self_sp);
    if (rc != 0 || !(++passes < 8 && hci_supp_any() && r.nleaks && apply_suppressions(&r, true))) break;
    hci_flood_result_free(&r);
    hci_world_resume(&w);
  }
  if (rc != 0) {
    hci_world_resume(&w);
    hci_unlock(&hci_chk_lock);
    hci_world_destroy(&w);
    L.incomplete = true;
    say_incomplete(req, "the threads could not be stopped");
    return 0;
  }
  if (hci_supp_any()) apply_suppressions(&r, true);
  bool incomplete = r.incomplete[0] != 0;
  /* Passing: the program goes on, and so do its threads. */
  if (!incomplete && r.nleaks == 0) hci_world_resume(&w);
  uint64_t t0 = hci_os_now_ns();
  hci_report_in_t in = {
      .name = req->name, .leaks = r.leaks, .nleaks = r.nleaks, .bytes = r.leaked_bytes,
      .reach_objects = r.reach_objects, .reach_bytes = r.reach_bytes,
      .possible_objects = r.possible_objects, .possible_bytes = r.possible_bytes,
      .possible = r.possible, .npossible = r.npossible,
      .whole_program = req->whole_program, .at_exit = req->at_exit && !incomplete, .symbolize = req->symbolize,
  };
  /* Incomplete: the leaks it found are shown, never a "no leaks" result. */
  if (r.nleaks || !incomplete) {
    if (req->report) hci_report_print(&in);
    hci_fmt_check(&in); /* HEAPCHECK_REPORT's files (json, sarif, svg, folded, suppressions) */
  }
  if (incomplete) say_incomplete(req, r.incomplete);
  log_timing(req, &r, passes, hci_os_now_ns() - t0);
  *bytes = (ssize_t)r.leaked_bytes;
  *objects = (ssize_t)r.nleaks;
  int ok = r.nleaks == 0 && !incomplete;
  L.incomplete = incomplete;
  /* Freed first: the next flood scans the program's anonymous mappings,
   * and this array (one) holds the leaks' addresses. */
  hci_flood_result_free(&r);
  if (*objects > 0 && hci_chk.test_pointer_alignment) {
    hci_world_resume(&w);
    test_alignment(&w, &p);
  }
  hci_unlock(&hci_chk_lock);
  /* A failing check with hold: the world stays stopped until the caller
   * _exits (no other thread races the report) or calls release_held. */
  if (w.active) {
    L.held = w;
    L.holding = true;
  } else {
    hci_world_destroy(&w);
  }
  return ok;
}

/* Every check runs on the library's own stack (base/own_stack.c): the asking
 * thread may have a 16 KiB stack; the program's sp is req->self_sp. */
struct run_call { const hci_check_req_t *req; ssize_t *bytes, *objects; int ok; };
static void run_call(void *arg) { struct run_call *c = arg; c->ok = run_check(c->req, c->bytes, c->objects); }
int hci_chk_run(const hci_check_req_t *req, ssize_t *bytes, ssize_t *objects) {
  /* A handler that interrupted the allocator on this thread (exit() in a SIGTERM handler):
   * the lock its frame holds never comes to the check, what it guards may be half-changed. */
  if (hci_locks_held_here > 0) {
    *bytes = *objects = 0;
    L.incomplete = true;
    say_incomplete(req, "it was asked from a signal handler that interrupted the allocator on this thread");
    return 0;
  }
  /* A sandbox that kills unlisted system calls: refused before the check's
   * first one (the own stack's mprotect killed sshd-like programs). */
  const char *sandboxed = hci_seccomp_refusal();
  if (!sandboxed) sandboxed = hci_seccomp_gate();
  if (sandboxed) {
    *bytes = *objects = 0;
    L.incomplete = true;
    say_incomplete(req, sandboxed);
    return 0;
  }
  struct run_call c = {req, bytes, objects, 0};
  hci_own_stack_call(run_call, &c);
  return c.ok;
}

/* The process goes on after a failing final check: its threads too. */
static void release_held(void) {
  if (!L.holding) return;
  L.holding = false;
  hci_world_resume(&L.held);
  hci_world_destroy(&L.held);
}

// ---- the whole-program check ----

/* The program's own status at exit is not 0: it is kept, leaks or not, in
 * every mode - LSan mode too, though LeakSanitizer's exitcode replaces any
 * status: a checker never changes what a failing program says
 * (docs/leak-checking.md, "Exit status"). */
static bool program_failed(void) { return L.have_status && (L.exit_status & 0xff) != 0; }


static int global_check(uintptr_t sp, bool at_exit, ssize_t *bytes, ssize_t *objects) {
  hci_check_req_t req = {
      .name = "_main_",
      .whole_program = true,
      .at_exit = at_exit && !hci_chk.identify_leaks && !hci_chk.keep_status && !program_failed() &&
                 !hci_chk.no_leak_exit,
      /* A failing final check keeps the world stopped through its report,
       * and until _exit when the process ends on it. */
      .hold = at_exit,
      .report = true,
      .symbolize = true,
      .self_sp = sp,
  };
  if (at_exit && L.end_sp > sp && L.end_tp == (uintptr_t)__builtin_thread_pointer()) {
    req.self_sp = L.end_sp;
    req.self_regs = L.end_regs;
    req.self_nregs = L.end_nregs;
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
  if (!ok && clean && !L.incomplete) {
    release_held();
    ok = 1;
  }
  L.g_bytes = *bytes;
  L.g_objects = *objects;
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
  *bytes = L.g_bytes;
  *objects = L.g_objects;
}

void hci_chk_cancel_global(void) {
  if (!hci_chk.active || !hci_chk.global_check) return;
  if (!atomic_exchange(&L.main_cancelled, 1))
    hci_chk_log(0, "Canceling the automatic at-exit whole-program memory leak check");
}

/* Where the final whole-program check runs from. */
typedef enum {
  FINAL_AT_EXIT,  /* exit: an at-exit handler or the library destructor */
  FINAL_AT__EXIT, /* _exit (from an at-exit handler, or direct): nothing may be flushed */
  FINAL_FROM_API, /* __lsan_do_leak_check: the program goes on when nothing
                     leaked, so cleanups and libc's caches are left alone */
} final_from_t;

static hc_noinline void final_check(uintptr_t sp, final_from_t from) {
  if (atomic_exchange(&L.main_done, 1)) return;
  if (from != FINAL_FROM_API && !hci_locks_held_here) hci_api_run_cleanups(); /* else: hci_chk_run says why */
  if (atomic_load(&L.main_cancelled) && from != FINAL_FROM_API) return;
  /* _exit flushes nothing: neither may its check (output a program drops
   * must stay dropped), nor free libc's buffers under it. */
  if (from != FINAL_AT__EXIT) fflush(NULL);
  if (hci_chk.free_libc && from == FINAL_AT_EXIT && !hci_locks_held_here) hci_api_free_libc();
  ssize_t bytes, objects;
  int ok = global_check(sp, true, &bytes, &objects);
  hci_tree_note(bytes, objects, !ok && L.incomplete);
  if (ok) return;
  /* The other threads are still stopped (hold): stdio was flushed before
   * the check, and flushing again could wait for a lock a stopped thread
   * holds. */
  if (L.incomplete) {
    if (!hci_chk.keep_status && !program_failed()) _exit(hci_chk.error_exit_code);
    release_held(); /* the program's own status stays */
    return;
  }
  if (hci_chk.identify_leaks) {
    hci_chk_log(HCI_LOG_FATAL, "Whole-program memory leaks found.");
    abort(); /* gperftools: a core dump to look at the objects listed above */
  }
  /* Under the launcher, descendants keep their own status (a leaking
   * compiler must not fail the build); the launcher decides at the end. */
  if (hci_chk.keep_status) {
    release_held();
    return;
  }
  if (program_failed()) {
    hci_chk_log(HCI_LOG_ERROR,
                "heapcheck: the program exits with status %d: kept (HEAP_CHECK_EXIT_CODE applies only to status 0)",
                L.exit_status & 0xff);
    release_held();
    return;
  }
  if (hci_chk.no_leak_exit) { /* LSan's exitcode=0 */
    release_held();
    return;
  }
  _exit(hci_chk.exit_code);
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
 * (no unwind tables, a walk it cannot follow): L.end_sp stays 0 and the check
 * scans this thread's stack from the checking function up, as before. */
static hc_noinline void find_exit_caller(void) {
  if (L.end_sp || !hci_chk.active || !hci_chk.global_check) return;
  /* libc's exit: dlsym's in a dynamic process (our own exit is the one the
   * name binds to there), the linked one in a static executable. */
  uintptr_t fn = L.real_exit ? (uintptr_t)L.real_exit : (uintptr_t)&exit;
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
  memcpy(L.end_regs, c.regs, (size_t)c.nregs * sizeof c.regs[0]);
  L.end_nregs = c.nregs;
  L.end_tp = (uintptr_t)__builtin_thread_pointer();
  L.end_sp = c.sp;
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

static hc_noinline void exit_check(int status, void *arg __attribute__((unused))) {
  HCI_ENTRY_SP(sp);
  if (hci_os_memory_borrowed()) { /* a vfork child's exit: the check is its parent's */
    L.exit_handlers_gone = true;
    return;
  }
  atomic_store(&check_taken_by, hci_os_tid());
  find_exit_caller();
  L.exit_status = status;
  L.have_status = true;
  final_check(sp, FINAL_AT_EXIT);
}

/* strict, draconian, as-is after destructors: the check runs in the
 * library destructor, which knows no status; this handler, run by exit()
 * before any destructor of a shared object, notes it. */
static void note_status(int status, void *arg) {
  (void)arg;
  if (hci_os_memory_borrowed()) L.exit_handlers_gone = true;
  else L.exit_status = status;
  L.have_status = true;
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
  if (!L.exit_handlers_gone || hci_os_memory_borrowed() || !hci_chk.check_at_exit) return;
  L.exit_status = status;
  L.have_status = true;
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
  if (atomic_load(&check_taken_by)) wait_for_good();
}

static hc_noinline int start_main(int argc, char **argv, char **envp) {
  /* This frame and our caller's up to argc are the start frames (roots.c):
   * this one's padding may hold a constructor's stale words. */
  hci_roots_set_start_frames((uintptr_t)__builtin_thread_pointer(), frame_bottom_of_caller(),
                             (uintptr_t)argv - sizeof(long));
  if (hci_chk.baseline_at_main)
    L.base_epoch = hci_alloc_next_epoch();
  /* Registered after every global constructor: runs before their destructors. */
  register_exit_check();
  int rc = L.real_main(argc, argv, envp);
  claim_exit();
  /* main returned: its frames are dead; libc calls exit from our caller. */
  if (!L.end_sp) {
    L.exit_tid = hci_os_tid();
    L.end_tp = (uintptr_t)__builtin_thread_pointer();
    L.end_nregs = 0;
    L.end_sp = CALLER_SP();
  }
  check_if_handlers_gone(rc);
  return rc;
}

/* Records where the program ended: the frame that called exit and the
 * callee-saved registers as that frame left them (n of them in regs); that
 * frame and its callers are live, exit's own are not. */
static void note_exit_caller(const uintptr_t *regs, int n, uintptr_t caller_sp) {
  if (!hci_chk.active || !hci_chk.global_check || L.end_sp || hci_os_memory_borrowed()) return;
  L.exit_tid = hci_os_tid();
  if (n > (int)(sizeof L.end_regs / sizeof L.end_regs[0])) n = (int)(sizeof L.end_regs / sizeof L.end_regs[0]);
  memcpy(L.end_regs, regs, (size_t)n * sizeof regs[0]);
  L.end_nregs = n;
  L.end_tp = (uintptr_t)__builtin_thread_pointer();
  L.end_sp = caller_sp;
}

static hc_noinline __attribute__((noreturn)) void call_real_exit(int status) {
  void (*real)(int) = L.real_exit;
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
  if (hci_chk.active && hci_chk.check_at_exit && !atomic_load(&L.main_done)) {
    /* Inside exit on this thread, or called directly in the process the
     * checker started in, outside any signal handler (direct_exit.c). */
    const char *no = L.exit_tid ? (L.exit_tid == hci_os_tid() ? NULL : "another thread is in exit")
                                : hci_direct_exit_refusal();
    if (!no) {
      HCI_ENTRY_SP(sp);
      L.exit_status = status;
      L.have_status = true;
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
  if (hci_chk.active && hci_chk.global_check && !L.real_main) {
    L.real_main = main;
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
  *(void **)&L.real_exit = dlsym(RTLD_NEXT, name_exit);
  if (!hci_chk.active) return;
  hci_symbolizer_note_exe();
  hci_lock(&hci_chk_lock);
  setup_once();
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
    L.base_epoch = hci_alloc_next_epoch();
  register_exit_check();
}

// ---- fork ----

void hci_checker_fork_locks(hci_lock_fn *each) { each(&hci_chk_lock); }

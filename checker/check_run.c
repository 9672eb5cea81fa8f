/* check_run.c - one leak check, whichever asked for it (the final check,
 * a scoped check, the API, LSan's): the set-up every check needs once (the
 * roots' exclusions, suppressions), the flood with the mode's parameters,
 * suppressed stacks made roots and the flood redone, the report and the
 * report files, an incomplete check said as such, the timing lines.
 *
 * A check runs on the library's own stack (base/own_stack.c) and takes
 * hci_chk_lock (first in the lock order) from before the world stops until
 * the report is printed; world init comes before it because it may malloc
 * (dlsym).  A failing check that is to end the process keeps the world
 * stopped (hci_leaks.held) until _exit or hci_chk_release_held.
 */
#include <link.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>

#include "hc_checker.h"
#include "hc_symbolize.h"
#include "leaks_internal.h"

hci_lock_t hci_chk_lock = HCI_LOCK_INIT(HC_RANK_CHECKER);

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
void hci_chk_setup_once(void) {
  if (hci_leaks.setup_done) return;
  hci_leaks.setup_done = true;
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
  if (hci_leaks.traced_noted) return;
  hci_leaks.traced_noted = true;
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

/* A check that could not complete: said plainly, never "No leaks found". */
static void say_incomplete(const hci_check_req_t *req, const char *why) {
  hci_chk_log(HCI_LOG_ERROR,
              "heapcheck: error: leak check \"%s\" could not complete: %s. Its result is unknown: this is "
              "not a \"no leaks\" result",
              req->name, why);
  if (req->hold && !hci_chk.keep_status && !hci_chk_program_failed())
    hci_chk_log(HCI_LOG_ERROR, "Exiting with error code %d because the leak check could not complete "
                               "(HEAP_CHECK_ERROR_EXIT_CODE)", hci_chk.error_exit_code);
}

static int run_check(const hci_check_req_t *req, ssize_t *bytes, ssize_t *objects) {
  *bytes = *objects = 0;
  hci_leaks.incomplete = false;
  hci_world_t w;
  if (hci_world_init(&w) != 0) {
    hci_leaks.incomplete = true;
    say_incomplete(req, "out of memory for the check's own buffers (RLIMIT_AS or RLIMIT_DATA, RLIMIT_MEMLOCK under mlockall(MCL_FUTURE), or the address space is full)");
    return 0;
  }
  w.self_sp = req->self_sp;
  hci_lock(&hci_chk_lock);
  hci_chk_setup_once();
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
      .report_all = req->whole_program && hci_leaks.base_epoch < 0,
      .base_epoch = (uint16_t)(req->whole_program ? (hci_leaks.base_epoch < 0 ? 0 : hci_leaks.base_epoch) : req->base_epoch),
      .align = hci_chk.pointer_alignment,
      .max_offset = hci_chk.max_pointer_offset,
      .self_sp = req->self_sp,
      .self_regs = req->self_regs,
      .self_nregs = req->self_nregs,
      .hold = req->hold,
  };
  hci_flood_result_t r;
  int passes = 0, rc;
  /* The final check waits for threads it finds inside pthread_exit
   * (exiting.c): stopped there, their live frames lie over dead ones. */
  p.wait_exiting = req->hold && req->whole_program; /* hold: the final check (at_exit says less) */
  if (p.wait_exiting) hci_exiting_init();
  uint64_t waiting_since = 0;
  /* Suppressed stacks become roots and the check is redone, so what only
   * they reach is not reported as indirect leaks (LSan does the same).
   * With req->hold the world stays stopped through the report when the
   * process is to end on it: the symbolizer's lock is taken before the stop,
   * like the allocator's, so no stopped thread holds it. */
  for (;;) {
    if (p.hold) hci_symbolizer_lock();
    rc = hci_flood_check(&w, &p, &r);
    if (p.hold) hci_symbolizer_unlock();
    if (rc == 0 && r.exiting_tid) { /* nothing checked, the world let go */
      uint64_t now = hci_os_now_ns();
      if (!waiting_since) {
        waiting_since = now;
        hci_chk_log(1, "heapcheck: thread %d is inside pthread_exit: the final check waits for its end (at most %d ms)",
                    r.exiting_tid, HCI_EXITING_WAIT_MS);
      }
      if (now - waiting_since >= (uint64_t)HCI_EXITING_WAIT_MS * 1000000u) p.wait_exiting = false; /* check as it is */
      struct timespec ts = {0, 1000000};
      hci_raw6(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
      continue;
    }
    if (rc == 0 && hci_chk.log_threads && req->whole_program) hci_lsan_log_threads(&w, req->self_sp);
    if (rc != 0 || !(++passes < 8 && hci_supp_any() && r.nleaks && apply_suppressions(&r, true))) break;
    hci_flood_result_free(&r);
    hci_world_resume(&w);
  }
  if (rc != 0) {
    hci_world_resume(&w);
    hci_unlock(&hci_chk_lock);
    hci_world_destroy(&w);
    hci_leaks.incomplete = true;
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
  hci_leaks.incomplete = incomplete;
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
    hci_leaks.held = w;
    hci_leaks.holding = true;
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
    hci_leaks.incomplete = true;
    say_incomplete(req, "it was asked from a signal handler that interrupted the allocator on this thread");
    return 0;
  }
  /* A sandbox that kills unlisted system calls: refused before the check's
   * first one (the own stack's mprotect killed sshd-like programs). */
  const char *sandboxed = hci_seccomp_refusal();
  if (!sandboxed) sandboxed = hci_seccomp_gate();
  if (sandboxed) {
    hci_ptrace_end_parent(); /* the probes' parent: no stop follows (the world runs) */
    *bytes = *objects = 0;
    hci_leaks.incomplete = true;
    say_incomplete(req, sandboxed);
    return 0;
  }
  /* A timer slack of seconds (PR_SET_TIMERSLACK, systemd's TimerSlackNSec=)
   * stretched every timed wait of the check and of its helper: ptrace checks
   * took 0.8 s each, and the signal fallback's stop timed out on threads
   * that had stopped ("they block the stop signal": the check could not
   * complete; adv29).  The check runs with the kernel's default 50 us; the
   * thread's own slack is put back after. */
  long slack = hci_raw6(SYS_prctl, PR_GET_TIMERSLACK, 0, 0, 0, 0, 0);
  bool reslack = slack > 1000000;
  if (reslack) hci_raw6(SYS_prctl, PR_SET_TIMERSLACK, 50000, 0, 0, 0, 0);
  struct run_call c = {req, bytes, objects, 0};
  hci_own_stack_call(run_call, &c);
  hci_ptrace_end_parent(); /* normally ended at the stop already */
  if (reslack) hci_raw6(SYS_prctl, PR_SET_TIMERSLACK, slack, 0, 0, 0, 0);
  return c.ok;
}

/* The process goes on after a failing final check: its threads too. */
void hci_chk_release_held(void) {
  if (!hci_leaks.holding) return;
  hci_leaks.holding = false;
  hci_world_resume(&hci_leaks.held);
  hci_world_destroy(&hci_leaks.held);
}

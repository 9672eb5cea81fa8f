/* mem_errors.c - the report of a double or invalid free in checker mode.
 *
 * The allocator finds the error (the object's record, the free mark, the
 * span's state: allocator/alloc.c) and hands it here before anything is
 * freed (hci_alloc_set_error_listener).  The report names the stacks a
 * user needs to find the bug, as valgrind and AddressSanitizer do: for a
 * double free the second free, the first one and the allocation (from the
 * table of recent frees, allocator/free_history.c); for a pointer inside a
 * live block, that block and where it was allocated.  Then the process
 * ends as before (abort, as glibc), or in LSan mode (LSAN_OPTIONS) with
 * the exit status, as LeakSanitizer's Die(); LSan's detect_double_free=0
 * lets a double free pass instead (nothing is freed twice).
 *
 * Runs inside free or realloc with no allocator lock held: it may
 * symbolize (the symbolizer's lock, the metadata arena) and allocate.
 */
#include <sched.h>
#include <unistd.h>

#include "hc_checker.h"
#include "hc_heap_view.h"
#include "hc_internal.h"
#include "hc_symbolize.h"

static void emit_line(void *ctx, const char *line) { hci_out_puts(ctx, line); }

/* A stack's lines after a header; `first` numbers the first frame (the
 * entry point, printed by the caller, is #0). */
static void stack_block(hci_out_t *o, const char *header, uint32_t id, int first) {
  if (header) hci_out_printf(o, "%s\n", header);
  hci_stack_lines_at(id, first, 64, emit_line, o);
}

static void one_frame_block(hci_out_t *o, const char *header, uintptr_t pc) {
  stack_block(o, header, hci_depot_put(&pc, 1), 0);
}

/* What the table of recent frees holds of the block, read before the
 * report allocates anything: the symbolizer's own blocks (a demangled name)
 * may take the freed block's address and leave their free in its entry. */
typedef struct first_free {
  bool found;
  uint32_t alloc_id, free_id;
  uintptr_t free_ra;
} first_free_t;

static void double_free_report(hci_out_t *o, const first_free_t *f) {
  if (!f->found) {
    hci_out_printf(o, "The block was freed before; the table of recent frees no longer holds it "
                      "(HEAPCHECK_FREE_HISTORY).\n");
    return;
  }
  /* Its caller alone: free stacks off, or none taken (a free inside a
   * signal handler that interrupted a stack capture, or before the thread
   * had a cache). */
  if (f->free_id != HC_STACK_NONE && f->free_id != HC_STACK_UNKNOWN)
    stack_block(o, "The first free occurred here:", f->free_id, 0);
  else if (hci_chk.free_stacks == HC_FREE_STACKS_OFF)
    one_frame_block(o, "The first free occurred here (its caller; HEAPCHECK_FREE_STACKS=0):", f->free_ra);
  else if (f->free_id == HC_STACK_NONE)
    one_frame_block(o, "The first free occurred here (its caller: its stack was not walked; "
                       "HEAPCHECK_FREE_STACKS=1 walks it in code without frame pointers too):", f->free_ra);
  else
    one_frame_block(o, "The first free occurred here (its caller; its stack was not taken):", f->free_ra);
  stack_block(o, "The memory was allocated here:", f->alloc_id, 0);
}

/* A pointer into a live block: which block, and where it came from. */
static void bad_pointer_report(hci_out_t *o, const hci_memerr_t *e) {
  hci_heap_obj_t obj;
  if (!hci_heap_find((uintptr_t)e->p, &obj) || !obj.meta) return;
  char head[160];
  hci_snprintf(head, sizeof head, "%p is %zu bytes inside a block of %zu bytes, allocated here:", e->p,
               (size_t)((uintptr_t)e->p - obj.start), obj.size);
  stack_block(o, head, obj.meta->stack_id, 0);
}

/* One report per process: the thread that makes it ends the process; a
 * thread that finds another error meanwhile waits for that end, and an
 * error inside the report itself (the reporting thread again) says its
 * line and aborts at once. */
static _Atomic int reporter;

static void claim_report(const hci_memerr_t *e) {
  int me = hci_os_tid(), none = 0;
  if (atomic_compare_exchange_strong(&reporter, &none, me)) return;
  if (none == me) hci_fatal("%s (inside the report of another)", e->line);
  for (;;) pause();
}

/* The report's text: symbolizing and the buffered writer take tens of
 * kilobytes of stack, so it runs on the library's own stack
 * (base/own_stack.c): a thread with a 16 KiB stack died of SIGSEGV there. */
struct report {
  const hci_memerr_t *e;
  int fd;
  uint32_t now;      /* the stack of this free */
  first_free_t f;
};

static void write_report(void *arg) {
  const struct report *r = arg;
  const hci_memerr_t *e = r->e;
  bool dbl = e->kind == HCI_MEMERR_DOUBLE_FREE;
  hci_out_t o = {.fd = r->fd};
  hci_out_printf(&o, "heapcheck: %s\n", e->line);
  hci_out_printf(&o, dbl ? "The second free occurred here:\n" : "The bad free occurred here:\n");
  hci_out_printf(&o, "    #0 %s (heapcheck's entry point)\n", e->fn);
  stack_block(&o, NULL, r->now, 1);
  if (dbl) double_free_report(&o, &r->f);
  else bad_pointer_report(&o, e);
  hci_out_printf(&o, "SUMMARY: heapcheck: %s\n", dbl ? "double-free" : "bad-free");
  hci_out_flush(&o);
}

static int on_error(const hci_memerr_t *e) {
  bool dbl = e->kind == HCI_MEMERR_DOUBLE_FREE;
  if (dbl && e->ignorable && hci_chk.double_free == 0) return HCI_MEMERR_IGNORE;
  claim_report(e);
  /* A program that sandboxed itself (the stream muted, or a filter known
   * to kill calls the report makes: opening module files, the own stack's
   * mapping): the line alone. */
  int fd = hci_log_stream_fd();
  if (fd < 0 || hci_seccomp_refusal()) hci_fatal("%s", e->line);
  /* A signal handler that interrupted the allocator on this thread: a lock
   * the report needs (the metadata arena's) may be held below us. */
  if (hci_locks_held_here > 0) hci_fatal("%s", e->line);
  /* Both before anything allocates or switches stacks (first_free_t). */
  struct report r = {.e = e, .fd = fd, .f = {.found = false}};
  /* Freed by another thread this moment: its entry is written right after
   * its exchange (alloc.c's free_small), which it may not have reached:
   * asked again after each of up to 64 yields. */
  for (int k = 0; dbl && !(r.f.found = hci_free_history_find(e->p, &r.f.alloc_id, &r.f.free_id, &r.f.free_ra)) &&
                  hci_chk.free_history > 0 && k < 64;
       k++)
    sched_yield();
  r.now = hci_capture_stack_from(e->ra);
  hci_own_stack_call(write_report, &r);
  /* LSan mode: LeakSanitizer's Die() (its exit status, no signal). */
  if (hci_chk.lsan) _exit(hci_chk.exit_code ? hci_chk.exit_code : 1);
  return HCI_MEMERR_ABORT;
}

/* With the checker off: only LSan's detect_double_free=0 needs us. */
static int pass_double_free(const hci_memerr_t *e) {
  return e->ignorable && e->kind == HCI_MEMERR_DOUBLE_FREE ? HCI_MEMERR_IGNORE : HCI_MEMERR_ABORT;
}

void hci_mem_errors_init(void) {
  if (!hci_chk.active) {
    if (hci_chk.double_free == 0) hci_alloc_set_error_listener(pass_double_free);
    return;
  }
  if (hci_chk.free_history > 0 && !hci_alloc_set_free_history((size_t)hci_chk.free_history, hci_chk.free_stacks))
    hci_chk_log(HCI_LOG_WARNING, "heapcheck: warning: no memory for the table of recent frees: double-free "
                                 "reports will not say where the block was allocated and first freed");
  hci_alloc_set_error_listener(on_error);
}

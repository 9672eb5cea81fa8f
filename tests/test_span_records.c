/* test_span_records.c - in checker mode (meson runs it with HEAPCHECK=normal)
 * the heap view must never show a live object in a span being given back to
 * the page heap, at any instruction of the thread giving it back: a leak
 * check stops threads wherever they are (ptrace), and what it reads there is
 * what this test reads.
 *
 * The case it guards (session 18): central.c's free_span freed the span's
 * records (the per-object stack id, epoch and flags) to the metadata bins
 * and only then cleared the span's pointer to them.  A freed bin block's
 * first word is the bin's link, so a thread stopped between the two showed
 * record 0 with a stack id made of a pointer's low half: a live object of
 * the class's size, reached by nothing, reported as "Leak of 32768 bytes in
 * 1 objects" with "allocation stack unknown" (test_fork_signals_exit_normal,
 * clang build, once in about 600 runs).
 *
 * The interleaving is forced: the thread single-steps itself (x86-64's trap
 * flag) through a malloc_trim(0) that gives back a span holding one freed
 * object, and the SIGTRAP handler reads the view of that object's slot at
 * every step.  Elsewhere, or without the checker, it exits 77 (skipped). */
#include <malloc.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>

#include "hc_check.h"
#include "hc_heap_view.h"
#include "hc_internal.h"

#define SIZE 36000 /* a class of one object per span: its only free empties it */
#define SPARE 4    /* spans freed first: their records fill the bin (a non-zero link) */

static uintptr_t watched;       /* the freed object's address */
static volatile long steps;     /* single steps taken */
static volatile long with_recs; /* ... while its span still had records */
static volatile long live_steps;
static volatile uintptr_t first_bad_ip;
static volatile uint32_t bad_id;

static void on_trap(int sig, siginfo_t *si, void *ctx) {
  (void)sig;
  (void)si;
  steps++;
  hci_heap_slot_t o;
  if (!hci_heap_locate(watched, &o) || !o.cls || o.index >= hci_heap_span_slots(o.span)) return;
  with_recs++;
  if (!hci_heap_slot_live(&o)) return;
  if (!live_steps++) {
    first_bad_ip = (uintptr_t)((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RIP];
    bad_id = hci_heap_slot_record(&o)->stack_id;
  }
}

/* Out of line, and nothing else in them: pushfq writes below the stack
 * pointer, where only a leaf function's own locals could be. */
static __attribute__((noinline)) void trace_on(void) {
  __asm__ volatile("pushfq\n\torq $0x100, (%%rsp)\n\tpopfq" ::: "memory", "cc");
}
static __attribute__((noinline)) void trace_off(void) {
  __asm__ volatile("pushfq\n\tandq $~0x100, (%%rsp)\n\tpopfq" ::: "memory", "cc");
}

int main(void) {
#if !defined(__x86_64__)
  return 77;
#else
  if (!hci_record_all) return 77; /* no records without the checker */
  void *spare[SPARE];
  for (int i = 0; i < SPARE; i++) spare[i] = malloc(SIZE);
  for (int i = 0; i < SPARE; i++) free(spare[i]);
  malloc_trim(0);
  void *p = malloc(SIZE);
  CHECK(p != NULL, "malloc(%d)", SIZE);
  if (!p) return 1;
  watched = (uintptr_t)p;
  hci_heap_slot_t o;
  CHECK(hci_heap_locate(watched, &o) && o.cls && hci_heap_slot_live(&o), "%p: a live small object with a record", p);
  free(p);
  CHECK(!hci_heap_slot_live(&o), "%p: freed", p);

  struct sigaction sa = {.sa_sigaction = on_trap, .sa_flags = SA_SIGINFO};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTRAP, &sa, NULL);
  trace_on();
  malloc_trim(0);
  trace_off();
  signal(SIGTRAP, SIG_DFL);
  /* Read before printf, whose buffer may take the same pages. */
  bool gone = !hci_heap_locate(watched, &o) || !o.cls || o.index >= hci_heap_span_slots(o.span);

  printf("%ld steps, %ld with the span's records, %ld showing a live object\n", steps, with_recs, live_steps);
  CHECK(steps > 100, "malloc_trim was single-stepped (%ld steps)", steps);
  CHECK(with_recs > 0, "the object's span had records at the start (%ld steps)", with_recs);
  CHECK(gone, "malloc_trim gave the span back");
  CHECK(live_steps == 0, "the freed object showed as live in %ld steps, first at ip %#lx (stack id %#x)",
        live_steps, (unsigned long)first_bad_ip, bad_id);
  return failures != 0;
#endif
}

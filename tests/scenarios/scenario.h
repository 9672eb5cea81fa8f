/* scenario.h - helpers shared by the leak scenarios (tests/scenarios).
 *
 * Every scenario is a small program linked normally (not against heapcheck)
 * so the same binary runs under LD_PRELOAD=libheapcheck.so, valgrind, and,
 * rebuilt with clang -fsanitize=leak, LeakSanitizer.  Its header comment
 * states the expected totals in lines the harness parses:
 *   // EXPECT: bytes=N objects=M            HEAPCHECK=normal (and strict)
 *   // EXPECT-STRICT|MINIMAL|DRACONIAN: ... that mode, when it differs
 *   // EXPECT-ENV: VAR=VALUE bytes=N objects=M   normal, with VAR set
 *   // EXPECT-CHILD: bytes=N objects=M      one more checked process (fork)
 *   // EXPECT-EXIT: N                       exit status when nothing leaks
 *   // EXPECT-STDOUT: text                  a line stdout must contain
 *   // EXPECT-UNCHECKED: why                the main process runs no check
 *   // REF-VALGRIND: / REF-LSAN: bytes=N objects=M   a reference tool's
 *                 totals where they legitimately differ (docs/validation.md)
 *
 * The helpers exist because a conservative leak checker finds any stale
 * copy of a pointer: a leak must leave no copy in a live stack frame, a dead
 * frame below it that a later frame leaves uninitialised, or a register.
 * Allocation happens in noinline functions, results go through a volatile
 * sink that is then cleared, and sc_end() scrubs the stack below main.
 */
#ifndef SCENARIO_H
#define SCENARIO_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SC_NOINLINE __attribute__((noinline))
#define SC_UNUSED __attribute__((unused))

/* Stores the compiler cannot drop, read by nothing that matters. */
static void *volatile sc_sink SC_UNUSED;

/* Overwrites 64 KiB of stack below the caller: stale pointers left by
 * earlier, deeper calls (malloc's own frames, the leaking function) vanish. */
static SC_NOINLINE SC_UNUSED void sc_scrub_stack(void) {
  volatile uintptr_t buf[64 * 1024 / sizeof(uintptr_t)];
  for (size_t i = 0; i < sizeof buf / sizeof buf[0]; i++) buf[i] = 0;
  __asm__ volatile("" ::: "memory");
}

/* Leaks n bytes from malloc: the pointer passes only through the sink. */
static SC_NOINLINE SC_UNUSED void sc_leak(size_t n) {
  sc_sink = malloc(n);
  sc_sink = NULL;
}

/* Called last in main (and before a thread returns). */
static SC_NOINLINE SC_UNUSED void sc_end(void) { sc_scrub_stack(); }

/* Builds a 4-node list of 32-byte nodes and drops it: the only pointers
 * left are stale words in this function's dead frame (stale_* scenarios). */
struct sc_node {
  struct sc_node *next;
  char pad[24];
};
static SC_NOINLINE SC_UNUSED void sc_build_and_drop(void) {
  struct sc_node *head = NULL;
  for (int i = 0; i < 4; i++) {
    struct sc_node *n = (struct sc_node *)malloc(sizeof *n);
    n->next = head;
    head = n;
  }
  sc_sink = head;
  sc_sink = NULL;
}

/* Mixes a pointer so no word in memory equals it (or any interior address). */
#define SC_XOR_KEY ((uintptr_t)0x5a5a5a5a5a5a5a5aULL)

/* ---- the fixtures' helpers (fx_*.c: programs the shell tests test_leak_modes,
 * test_report, test_suppress run under every mode, preloaded or linked with
 * -lheapcheck; fixtures.sh).  Globals that keep objects reachable are
 * non-static and volatile so the compiler can neither drop them nor keep the
 * pointer only in a register; wipe_stack() clears the dead stack below the
 * caller so stale copies of pointers cannot hide a leak from the at-exit
 * check (which scans the live stack only).  Fixtures initialise what they
 * allocate: an uninitialised first word may hold a stale free-list link to
 * the next object, which would turn that object's classification from
 * direct into indirect. */

/* noipa (gcc): no inter-procedural shortcut either; gcc otherwise drops the
 * stores into malloc'd memory that never escapes, and whole calls. */
#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

#define wipe_stack() sc_scrub_stack()

/* *slot = v, out of line: a store into malloc'd memory that never escapes
 * may otherwise be dropped by the compiler. */
static NOINLINE SC_UNUSED void store_ptr(void **slot, void *v) { *slot = v; }

/* XOR mask that turns a pointer into a non-pointer (gperftools' HiddenPointer). */
#define HIDE_MASK ((unsigned long)0xF03A5F7BF03A5F7Bull)

#endif

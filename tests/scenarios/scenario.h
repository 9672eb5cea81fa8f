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

/* Mixes a pointer so no word in memory equals it (or any interior address). */
#define SC_XOR_KEY ((uintptr_t)0x5a5a5a5a5a5a5a5aULL)

#endif

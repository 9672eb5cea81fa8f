/* fixture.h - helpers shared by the leak fixtures (tests/leak_fixtures/).
 *
 * Fixtures are tiny programs with known leaks, run by the shell tests under
 * HEAPCHECK=<mode> with LD_PRELOAD or linked with -lheapcheck.  Globals that
 * keep objects reachable are non-static and volatile so the compiler can
 * neither drop them nor keep the pointer only in a register; wipe_stack()
 * clears the dead stack below the caller so stale copies of pointers cannot
 * hide a leak from the at-exit check (which scans the live stack only).
 * Fixtures initialise what they allocate: an uninitialised first word may
 * hold a stale free-list link to the next object, which would turn that
 * object's classification from direct into indirect. */
#ifndef LEAK_FIXTURE_H
#define LEAK_FIXTURE_H

#include <string.h>

/* noipa (gcc): no inter-procedural shortcut either; gcc otherwise drops the
 * stores into malloc'd memory that never escapes, and whole calls. */
#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noipa))
#endif

/* The one stack scrubber of the tests: the scenarios' (64 KiB below the caller). */
#include "../scenarios/scenario.h"
#define wipe_stack() sc_scrub_stack()

/* *slot = v, out of line: a store into malloc'd memory that never escapes
 * may otherwise be dropped by the compiler. */
static NOINLINE __attribute__((unused)) void store_ptr(void **slot, void *v) { *slot = v; }

/* XOR mask that turns a pointer into a non-pointer (gperftools' HiddenPointer). */
#define HIDE_MASK ((unsigned long)0xF03A5F7BF03A5F7Bull)

#endif

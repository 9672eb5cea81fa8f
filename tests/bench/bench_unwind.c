/* bench_unwind.c - cost of one stack capture (not a test: nothing is asserted).
 *
 * Captures a stack 20 frames deep (20 recursive frames plus main and libc's
 * start frames) with hci_backtrace and prints ns per capture for:
 *   fp          frame-pointer walk
 *   dwarf warm  DWARF walk, every PC's rule already in the cache
 *   dwarf cold  DWARF walk after clearing the cache (each capture resolves
 *               every frame: _dl_find_object, FDE search, CFA program): the
 *               time of clear+capture minus the time of clear alone
 *   depot hit   hci_depot_put of an already known 20-frame stack
 * Times are thread CPU time (wall time on a shared VM includes stolen time).
 * Usage: bench_unwind [iterations]   (default 1000000; cold uses 1/20 of it) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hc_internal.h"

#define NOINL __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")
#define DEPTH 20

enum { M_FP, M_DWARF_WARM, M_DWARF_COLD, M_DEPOT };

static long iters = 1000000;
static double result_ns;
static int result_frames;

/* Thread CPU time: this machine is a shared VM, and wall time includes the
 * time other guests steal. */
static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void measure(int mode) {
  uintptr_t pcs[HC_MAX_STACK_DEPTH];
  int n = 0;
  hci_unwinder = mode == M_FP ? HC_UNWIND_FP : HC_UNWIND_DWARF;
  n = hci_backtrace(pcs, HC_MAX_STACK_DEPTH, 0); /* warm up: bounds cache, rule cache */
  uint32_t id = hci_depot_put(pcs, n);
  uint64_t t0 = now_ns();
  if (mode == M_DEPOT) {
    for (long i = 0; i < iters; i++) {
      id ^= hci_depot_put(pcs, n);
      BARRIER();
    }
    if (id == 12345) puts("");
    result_ns = (double)(now_ns() - t0) / (double)iters;
  } else if (mode != M_DWARF_COLD) {
    for (long i = 0; i < iters; i++) {
      n = hci_backtrace(pcs, HC_MAX_STACK_DEPTH, 0);
      BARRIER();
    }
    result_ns = (double)(now_ns() - t0) / (double)iters;
  } else {
    /* (clear + capture) minus (clear alone). */
    long cold = iters / 20 > 0 ? iters / 20 : 1;
    for (long i = 0; i < cold; i++) {
      hci_unwind_dwarf_cache_clear();
      n = hci_backtrace(pcs, HC_MAX_STACK_DEPTH, 0);
      BARRIER();
    }
    uint64_t t1 = now_ns();
    for (long i = 0; i < cold; i++) {
      hci_unwind_dwarf_cache_clear();
      BARRIER();
    }
    uint64_t t2 = now_ns();
    result_ns = ((double)(t1 - t0) - (double)(t2 - t1)) / (double)cold;
  }
  result_frames = n;
}

NOINL static void descend(int depth, int mode) {
  if (depth == 0) measure(mode);
  else descend(depth - 1, mode);
  BARRIER();
}

int main(int argc, char **argv) {
  if (argc > 1) iters = atol(argv[1]);
  if (iters <= 0) iters = 1;
  if (!hci_unwind_dwarf_available()) printf("note: no DWARF unwinder here; 'dwarf' rows use the fp walk\n");
  static const char *names[] = {"fp", "dwarf warm", "dwarf cold", "depot hit"};
  for (int mode = M_FP; mode <= M_DEPOT; mode++) {
    descend(DEPTH - 1, mode); /* descend frames + measure = DEPTH frames of ours */
    printf("%-11s %8.1f ns per %s of %d frames (%.1f ns per frame)\n", names[mode], result_ns,
           mode == M_DEPOT ? "put" : "capture", result_frames, result_ns / result_frames);
  }
  return 0;
}

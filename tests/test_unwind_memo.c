/* test_unwind_memo.c - the DWARF unwinder's memo of the last walk
 * (stacks/unwind_memo.h, memo_site.c): every capture that takes frames from
 * the memo, or a depot id from a call site, must equal a fresh walk's.
 * Covered: random depths and call paths, past the frame limit and with
 * fewer frames asked; a random walk of depths on one path; paths that part
 * in one call site; two and four call sites in turn (ways, sites); frame
 * records handed in that must be refused; a frame without frame pointer
 * whose rbp holds data (tests/unwind_nofp.c); a frameless entry point that
 * leaves no frame record holding its return address (as operator new). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hc_internal.h"
#include "hc_check.h"

#define NOINL __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")
#define RA() ((uintptr_t)__builtin_return_address(0))

static void dump(const char *what, const uintptr_t *pcs, int n) {
  fprintf(stderr, "  %s: %d frames:", what, n);
  for (int i = 0; i < n; i++) fprintf(stderr, " %#lx", (unsigned long)pcs[i]);
  fprintf(stderr, "\n");
}

/* ---- the memo of the last walk: a later walk that meets one of its frames
 * takes the rest from it; every such walk must equal a fresh one ---- */

static hc_unwind_memo_t memo_t;
static volatile int memo_sink;
static int memo_max = HC_MAX_STACK_DEPTH; /* frames asked for */
static int memo_badhash;                  /* memo walks whose hash was not hci_stack_hash's */
static unsigned memo_recs;                /* captures so far: picks the frame record handed in */
static int memo_same;                     /* memo walks that found their way's last frames again */
static int memo_site = -1;                /* >= 0: memo_deep captures from call site memo_site of memo_at */
static int memo_badid;                    /* memo walks whose depot id (hci_unwind_memo_id) names other frames */
static bool memo_by_id;                   /* every memo capture through hci_unwind_memo_stack_id (else every other) */
static int memo_badref;                   /* fresh walks that did not start at RA(): not a reference */

/* With the memo: its frames in place and their hash (as the allocator
 * takes them); without: a fresh walk.  The frame record holding RA() is
 * handed in as hci_alloc_slow does (our own frame's), or not (0: searched),
 * or a wrong one that must be refused: a word off, one below the walker
 * (dead stack), one whose return address is not RA(). */
NOINL static int memo_capture(uintptr_t *pcs, hc_unwind_memo_t *memo) {
  int n;
  /* Taken in both branches: it gives this function a frame record {saved
   * rbp, RA()} even when built with -fomit-frame-pointer.  The fresh walk
   * needs it too: hci_unwind_dwarf_at finds the frame holding RA() through
   * frame records, else walks from its own frame (its caller is to look
   * for RA(), hc_stacks.h), one more frame at the top and one fewer at the
   * limit.  At -O3 gcc clones this function for memo == NULL
   * (memo_capture.constprop.0) and, with the address taken only in the memo
   * branch, the clone had no record: 308 of the 4032 captures "differed",
   * the reference being the walk that was off by one frame, the memo's
   * frames equal to a fresh walk's from RA() (release build, session 11). */
  uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
  if (memo) {
    const uintptr_t *mp;
    uint64_t h;
    uintptr_t rec;
    volatile uintptr_t fake[2] = {((const uintptr_t *)fp)[0], RA() + 1};
    switch (memo_recs++ % 5) {
    case 0: rec = 0; break;
    case 1: rec = fp + 8; break;
    case 2: rec = fp - 4096; break;
    case 3: rec = (uintptr_t)fake; break;
    default: rec = fp; break;
    }
    if (memo_by_id || (memo_recs & 1)) {
      /* As the allocator captures: only the depot id (a site's, the way's
       * last, or the depot's), whose frames the caller compares with a
       * fresh walk's. */
      uint64_t hits = memo->site_hits;
      uint32_t id = hci_unwind_memo_stack_id(memo, memo_max, RA(), rec);
      n = id ? hci_depot_get(id, &mp) : -1;
      if (n > 0) memcpy(pcs, mp, (size_t)n * sizeof *pcs);
      if (memo->site_hits == hits && hci_unwind_memo_cur(memo)->same) memo_same++;
    } else {
      n = hci_unwind_memo_walk(memo, memo_max, RA(), rec, &mp, &h);
      if (n > 0) {
        memcpy(pcs, mp, (size_t)n * sizeof *pcs);
        if (h != hci_stack_hash(mp, n)) memo_badhash++;
        if (hci_unwind_memo_cur(memo)->same) memo_same++;
        /* The id the allocator would record: it must name exactly these frames. */
        const uintptr_t *dp;
        uint32_t id = hci_unwind_memo_id(memo, mp, n, h);
        if (hci_depot_get(id, &dp) != n || memcmp(dp, pcs, (size_t)n * sizeof *pcs) != 0) memo_badid++;
      }
    }
  } else {
    __asm__ volatile("" ::"r"(fp) : "memory"); /* the frame record, in this branch too */
    n = hci_unwind_dwarf_at(pcs, memo_max, RA(), NULL);
    if (n < 1 || pcs[0] != RA()) memo_badref++; /* walked from elsewhere: no reference */
  }
  BARRIER();
  return n;
}

/* Captures with the memo and without it from call site `site` of eight
 * (the ways of the memo are chosen by call site); different code after each
 * keeps the compiler from merging them. */
#define MEMO_AT(k, nops)                                                                                   \
  case k:                                                                                                  \
    n[0] = memo_capture(got[0], &memo_t);                                                                  \
    n[1] = memo_capture(got[1], NULL);                                                                     \
    __asm__ volatile(nops ::: "memory");                                                                   \
    break;
NOINL static void memo_at(int site, uintptr_t got[2][HC_MAX_STACK_DEPTH], int n[2]) {
  switch (site & 7) {
    MEMO_AT(0, "nop")
    MEMO_AT(1, "nop; nop")
    MEMO_AT(2, "nop; nop; nop")
    MEMO_AT(3, "nop; nop; nop; nop")
    MEMO_AT(4, "nop; nop; nop; nop; nop")
    MEMO_AT(5, "nop; nop; nop; nop; nop; nop")
    MEMO_AT(6, "nop; nop; nop; nop; nop; nop; nop")
    default: MEMO_AT(7, "nop; nop; nop; nop; nop; nop; nop; nop")
  }
  BARRIER();
}

/* Recurses d levels, through one of two call sites per level (bit i of
 * path), then captures with the memo and without it from one call site. */
NOINL static int memo_deep(int d, unsigned path, int *bad) {
  volatile char pad[16 + (d % 3) * 16]; /* frames of different sizes */
  pad[0] = (char)d;
  int r;
  /* Two call sites, kept apart by different code after each call (the
   * compiler merges identical ones). */
  if (d > 0 && (path & 1)) {
    r = memo_deep(d - 1, path >> 1, bad);
    __asm__ volatile("nop" ::: "memory");
  } else if (d > 0) {
    memo_sink++;
    r = memo_deep(d - 1, path >> 1, bad);
    __asm__ volatile("nop; nop" ::: "memory");
  } else {
    uintptr_t got[2][HC_MAX_STACK_DEPTH];
    int n[2];
    if (memo_site >= 0)
      memo_at(memo_site, got, n);
    else
      for (int m = 0; m < 2; m++) n[m] = memo_capture(got[m], m == 0 ? &memo_t : NULL);
    /* frame 0 is the call site of memo_capture: two of them when unrolled */
    if (n[0] != n[1] || n[0] < 1 || memcmp(got[0] + 1, got[1] + 1, (size_t)(n[0] - 1) * sizeof(uintptr_t)) != 0) {
      if (*bad == 0) {
        dump("with the memo", got[0], n[0]);
        dump("fresh", got[1], n[1]);
      }
      ++*bad;
    }
    r = n[1];
  }
  BARRIER();
  return r + pad[0] * 0;
}

/* The memo through a frame without frame pointer whose rbp (data, not a
 * frame) differs at each call: rbp is compared only where a step uses it,
 * so each capture finds the last one's frames at its first frame. */
void nofp_rbp(void (*cb)(void *), void *arg, uintptr_t v);
typedef struct rbp_run {
  uintptr_t got[2][HC_MAX_STACK_DEPTH];
  int n[2], fresh;
} rbp_run_t;

NOINL static void rbp_cb(void *arg) {
  rbp_run_t *r = arg;
  r->n[0] = memo_capture(r->got[0], &memo_t);
  r->fresh = hci_unwind_memo_cur(&memo_t)->fresh;
  r->n[1] = memo_capture(r->got[1], NULL);
  BARRIER();
}

NOINL static void test_memo_dead_rbp(void) {
  rbp_run_t r;
  int bad = 0, at_first = 0;
  memo_max = HC_MAX_STACK_DEPTH;
  memo_badref = 0; /* test_memo checked its own */
  for (int t = 0; t < 100; t++) {
    nofp_rbp(rbp_cb, &r, 0x1000 + (uintptr_t)t * 0x10);
    /* frame 0: the two call sites of memo_capture */
    if (r.n[0] != r.n[1] || r.n[0] < 3 || memcmp(r.got[0] + 1, r.got[1] + 1, (size_t)(r.n[0] - 1) * sizeof(uintptr_t))) {
      if (bad++ == 0) {
        dump("with the memo", r.got[0], r.n[0]);
        dump("fresh", r.got[1], r.n[1]);
      }
    }
    if (t > 0 && r.fresh == 0) at_first++;
  }
  CHECK(bad == 0, "through a frame with data in rbp: %d of 100 memo walks differ from fresh walks", bad);
  CHECK(at_first >= 95, "through a frame with data in rbp: %d of 99 captures found the last frames at their first frame",
        at_first);
  CHECK(memo_badid == 0, "through a frame with data in rbp: %d memo walks got a depot id that names other frames",
        memo_badid);
  CHECK(memo_badref == 0, "through a frame with data in rbp: %d fresh walks did not start at their return address",
        memo_badref);
}

static void test_memo(void) {
  memset(&memo_t, 0, sizeof memo_t);
  int bad = 0, shallow = 0, deep = 0;
  unsigned seed = 12345;
  for (int k = 0; k < 3000; k++) {
    seed = seed * 1103515245u + 12345u;
    /* mostly shallow, sometimes past the frame limit (HC_MAX_STACK_DEPTH) */
    int d = (k % 7 == 0) ? 50 + (int)(seed >> 27) : (int)((seed >> 16) % 24);
    unsigned path = (k % 5 == 0) ? (unsigned)k : (seed >> 4);
    /* the memo keeps more frames than asked: some captures ask for fewer */
    memo_max = k % 11 == 0 ? 7 : k % 13 == 0 ? 30 : HC_MAX_STACK_DEPTH;
    int n = memo_deep(d, path, &bad);
    if (n >= HC_MAX_STACK_DEPTH) deep++;
    else shallow++;
  }
  /* One call path at depths 3..105 that differ by multiples of 3 (frame
   * sizes repeat with d % 3), in a random walk: each capture meets the last
   * one's frames at the same places, deeper than the memo holds (its outer
   * frames dropped) or shallower than a memo cut at its frame limit. */
  int d = 60;
  for (int t = 0; t < 400; t++) {
    seed = seed * 1103515245u + 12345u;
    d += 3 * ((int)(seed >> 16) % 17 - 8); /* a random walk in steps of 3, up to 24 */
    d = d < 3 ? 3 : d > 105 ? 105 : d; /* multiples of 3, as 60 is */
    memo_max = t % 3 == 0 ? HC_MAX_STACK_DEPTH : t % 3 == 1 ? 20 : 50;
    memo_deep(d, 0x5a5a5a5au, &bad);
  }
  /* One depth, call paths that differ in one call site: the frames below
   * it match the memo's, and only the words above them tell the walks apart
   * (the innermost of those words too). */
  memo_max = HC_MAX_STACK_DEPTH;
  for (int t = 0; t < 124; t++) memo_deep(30, 0x12345678u ^ (t & 1 ? 1u << (t / 2 % 31) : 0), &bad);
  /* Two call sites in turn, each under its own call path (parting at the
   * outermost of 20 levels): with a way each, each finds its last frames at
   * its first frame (one memo would step out 20 levels each time and find
   * the other's frames).  Two sites of memo_at that take different ways: */
  int way_of[8], sa = -1, sb = -1;
  for (int k = 0; k < 8; k++) {
    memo_site = k;
    memo_deep(20, 0, &bad);
    way_of[k] = memo_t.cur;
    for (int i = 0; i < k && sa < 0; i++)
      if (way_of[i] != way_of[k]) sa = i, sb = k;
  }
  CHECK(sa >= 0, "eight call sites all took way %d of the memo", way_of[0]);
  int same0 = memo_same;
  for (int t = 0; t < 200 && sa >= 0; t++) {
    memo_site = t & 1 ? sa : sb;
    memo_deep(20, t & 1 ? 0x5555u : 0xaaaau, &bad);
  }
  memo_site = -1;
  CHECK(memo_same - same0 >= 190, "two call sites in turn: %d of 200 captures found their last frames",
        memo_same - same0);
  /* Four call paths that part one and two levels above the capture, in
   * turn (one way, through hci_unwind_memo_stack_id as the allocator): the
   * way keeps the frames of the last capture it walked; the others step two
   * or three frames out to where the paths meet, and from their second turn
   * on a site answers them (memo_site.c) without a walk.  Then the same
   * under two outer call paths (parting 10 levels out) in turn: equal first
   * steps, other frames outward, which a site must not answer for.  Every
   * id must name the frames of a fresh walk (memo_deep checks). */
  memo_by_id = true;
  uint64_t hits0 = memo_t.site_hits;
#ifdef MEMO_NOFP
  uint64_t early0 = memo_t.site_early;
  memo_site = 0; /* captures from memo_at, whose frame has no array of varying size: CFA from rsp */
#endif
  for (int t = 0; t < 100; t++) memo_deep(20, (t & 3u) << 18, &bad);
  CHECK(memo_t.site_hits - hits0 >= 60, "four inner call paths in turn: %llu of 100 captures answered by a site",
        (unsigned long long)(memo_t.site_hits - hits0));
#ifdef MEMO_NOFP
  /* Built without frame pointers (test_unwind_memo_nofp): the capture's
   * first step takes its CFA from rsp, so the sites are asked before it. */
  CHECK(memo_t.site_early - early0 >= 60, "without frame pointers: %llu of 100 captures answered before a step",
        (unsigned long long)(memo_t.site_early - early0));
  memo_site = -1;
#endif
  for (int t = 0; t < 200; t++) memo_deep(20, (t & 3u) << 18 ^ (t & 4 ? 1u << 10 : 0), &bad);
  memo_by_id = false;
  CHECK(bad == 0, "memo walks differ from fresh walks in %d of 4032 captures", bad);
  CHECK(memo_badhash == 0, "%d memo walks gave a hash other than hci_stack_hash of their frames", memo_badhash);
  CHECK(memo_badid == 0, "%d memo walks got a depot id that names other frames", memo_badid);
  CHECK(memo_badref == 0, "%d fresh walks (the reference) did not start at their return address", memo_badref);
  CHECK(deep > 0 && shallow > 0, "both shapes ran (%d at the frame limit, %d shorter)", deep, shallow);
  CHECK(hci_unwind_memo_cur(&memo_t)->gen != 0 && hci_unwind_memo_cur(&memo_t)->n > 0, "the memo holds a walk");
}

/* Sites for walks whose steps each read a word that does not matter:
 * four call paths through nofp_press (tests/unwind_nofp.c) that part 5 and
 * 6 frames above the capture, in turn.  Each step out of nofp_press reads
 * the return address and rbp's word (rbp holds data there: only the first
 * matters), so a walk that meets the memo after 5 or 6 steps read 10 or 12
 * words, keeping 5 or 6; a site keeps 8 (HC_UNWIND_MEMO_SITE_WORDS).  Sites
 * were made only when the words read fitted (none here: every capture
 * walked, as 162 000 of yosys's); now when the words kept do. */
void nofp_press(int d, unsigned path, void (*cb)(void *), void *arg);

NOINL static void press_cb(void *arg) {
  rbp_run_t *r = arg;
  r->n[0] = memo_capture(r->got[0], &memo_t);
  r->n[1] = memo_capture(r->got[1], NULL);
  BARRIER();
}

NOINL static void test_memo_site_words(void) {
  rbp_run_t r;
  int bad = 0;
  memo_max = HC_MAX_STACK_DEPTH;
  memo_by_id = true;
  memo_badref = 0;
  uint64_t hits0 = memo_t.site_hits;
  for (int t = 0; t < 100; t++) {
    nofp_press(8, (unsigned)(t & 3) << 2, press_cb, &r);
    if (r.n[0] != r.n[1] || r.n[0] < 3 || memcmp(r.got[0] + 1, r.got[1] + 1, (size_t)(r.n[0] - 1) * sizeof(uintptr_t))) {
      if (bad++ == 0) {
        dump("with the memo", r.got[0], r.n[0]);
        dump("fresh", r.got[1], r.n[1]);
      }
    }
  }
  memo_by_id = false;
  CHECK(bad == 0, "four paths through nofp_press: %d of 100 memo captures differ from fresh walks", bad);
  CHECK(memo_t.site_hits - hits0 >= 60, "four paths through nofp_press: %llu of 100 captures answered by a site",
        (unsigned long long)(memo_t.site_hits - hits0));
  CHECK(memo_badid == 0, "four paths through nofp_press: %d memo walks got a depot id that names other frames",
        memo_badid);
  CHECK(memo_badref == 0, "four paths through nofp_press: %d fresh walks did not start at their return address",
        memo_badref);
}

/* ---- a frameless entry point (runtime/override.c's operator new until
 * session 19, its aligned forms still: gcc keeps the return address in rbp,
 * pushed as a callee-saved register, and calls the slow path with it): no
 * frame record holds ra, so
 * the capture finds malloc's caller's frame by CFI steps (unwind_dwarf.c's
 * entry_by_cfi).  Before, the memo refused such captures (id 0) and
 * hci_unwind_dwarf_at walked from its own frame. ---- */

uint32_t shim_stack_id(hc_unwind_memo_t *memo, int max);
int shim_dwarf_at(uintptr_t *pcs, int max);
#define SHIM(name, target)                          \
  ".p2align 4\n"                                    \
  ".globl " name "\n"                               \
  ".type " name ", @function\n" name ":\n"          \
  ".cfi_startproc\n"                                \
  "pushq %rbp\n"                                    \
  ".cfi_def_cfa_offset 16\n"                        \
  ".cfi_offset %rbp, -16\n"                         \
  "movq 8(%rsp), %rbp\n"                            \
  "movq %rbp, %rdx\n"                               \
  "xorl %ecx, %ecx\n"                               \
  "call " target "\n"                               \
  "popq %rbp\n"                                     \
  ".cfi_def_cfa_offset 8\n"                         \
  "ret\n"                                           \
  ".cfi_endproc\n"                                  \
  ".size " name ", .-" name "\n"
__asm__(".text\n" SHIM("shim_stack_id", "hci_unwind_memo_stack_id") SHIM("shim_dwarf_at", "hci_unwind_dwarf_at"));

typedef struct fl_run {
  int bad, zero, same, notra;
} fl_run_t;

/* Captures through both shims, and a fresh walk from here (its frame 0 is
 * our return address: the shims' frame 1). */
NOINL static void fl_capture(fl_run_t *r) {
  uintptr_t ref[HC_MAX_STACK_DEPTH], at[HC_MAX_STACK_DEPTH];
  const uintptr_t *mp;
  int max = HC_MAX_STACK_DEPTH;
  uint32_t id = shim_stack_id(&memo_t, max);
  __asm__ volatile("nop" ::: "memory");
  bool same = hci_unwind_memo_cur(&memo_t)->same;
  int na = shim_dwarf_at(at, max);
  __asm__ volatile("nop; nop" ::: "memory");
  int nref = hci_unwind_dwarf(ref, max, 0);
  int want = nref < max - 1 ? nref : max - 1;
  int nm = id ? hci_depot_get(id, &mp) : 0;
  if (id == 0) r->zero++;
  if (same) r->same++;
  if (nm - 1 != want || memcmp(mp + 1, ref, (size_t)want * sizeof *ref) != 0 || na - 1 != want ||
      memcmp(at + 1, ref, (size_t)want * sizeof *ref) != 0) {
    if (r->bad++ == 0) {
      if (nm > 0) dump("memo, from the frameless entry", mp, nm);
      dump("hci_unwind_dwarf_at, from the frameless entry", at, na);
      dump("fresh, one frame out", ref, nref);
    }
  }
  BARRIER();
}

NOINL static void fl_deep(int d, fl_run_t *r) {
  volatile char pad[16 + (d % 3) * 16];
  pad[0] = (char)d;
  if (d > 0)
    fl_deep(d - 1, r);
  else
    fl_capture(r);
  BARRIER();
  (void)pad[0];
}

NOINL static void test_memo_frameless_entry(void) {
  fl_run_t r = {0};
  for (int t = 0; t < 60; t++) fl_deep(t % 3 == 0 ? 90 : t % 3 == 1 ? 5 : 30, &r);
  /* The last 20 from one call site: the same stack each time.  The loop
   * count is hidden from the compiler: clang 14 unrolled this loop into 20
   * calls, 20 call sites, so no capture had the last one's frames (they
   * differed 43 frames out, in this function's return address) and the
   * memo rightly found none (0 of 80; session 18 took it for a memo miss). */
  for (int t = 0; t < 20; t++) {
    __asm__ volatile("" : "+r"(t));
    fl_deep(40, &r);
  }
  CHECK(r.zero == 0, "frameless entry point: %d of 80 captures got no id from the memo", r.zero);
  CHECK(r.bad == 0, "frameless entry point: %d of 80 captures differ from a fresh walk", r.bad);
  /* The first 60 alternate depths 90, 5 and 30 (a memo cut at its 80
   * frames, then more than 24 fresh steps to the last walk's frames): all
   * walk afresh.  The last 20 find the one before's frames, from the
   * second on. */
  CHECK(r.same >= 19, "frameless entry point: %d of 80 captures found the last one's frames", r.same);
}

int main(void) {
  CHECK(hci_unwind_dwarf_available(), "_dl_find_object is present on glibc >= 2.35");
  test_memo();
  test_memo_dead_rbp();
  test_memo_site_words();
  test_memo_frameless_entry();
  if (failures) {
    fprintf(stderr, "test_unwind_memo: %d failures\n", failures);
    return 1;
  }
  printf("test_unwind_memo: ok\n");
  return 0;
}

/* test_unwind.c - hci_backtrace with the frame-pointer and DWARF unwinders.
 *
 * Frames are checked exactly: every function of a chain records its own
 * return address with __builtin_return_address(0), and the unwinder must
 * report those addresses in order.  Covered: a plain chain (both unwinders,
 * skip, max), code built without frame pointers (tests/unwind_nofp.c), libc's
 * qsort calling back into us, signal handlers (own stack and sigaltstack),
 * crafted junk frame chains for hci_unwind_fp, frames whose saved return
 * address and frame pointer are junk, many threads, a million captures, the
 * stack recorded for a sampled malloc called from code without frame
 * pointers (auto mode's DWARF fallback), and HEAPCHECK_UNWINDER parsing.
 * The memo of the last walk is tested in test_unwind_memo.c. */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hc_internal.h"
#include "hc_check.h"

#define NOINL __attribute__((noinline))
#define BARRIER() __asm__ volatile("" ::: "memory")
#define RA() ((uintptr_t)__builtin_return_address(0))

static const char *uname_of(int u) { return u == HC_UNWIND_DWARF ? "dwarf" : "fp"; }

static void dump(const char *what, const uintptr_t *pcs, int n) {
  fprintf(stderr, "  %s: %d frames:", what, n);
  for (int i = 0; i < n; i++) fprintf(stderr, " %#lx", (unsigned long)pcs[i]);
  fprintf(stderr, "\n");
}

/* Index of v in pcs[0..n), or -1. */
static int find_pc(const uintptr_t *pcs, int n, uintptr_t v) {
  for (int i = 0; i < n; i++)
    if (pcs[i] == v) return i;
  return -1;
}

/* ---- a plain chain: main -> run_chain -> f1 -> f2 -> f3 -> hci_backtrace ---- */

typedef struct chain {
  int skip, max;
  uintptr_t ra[4]; /* ra[0]: f3 -> f2, ra[1]: f2 -> f1, ra[2]: f1 -> run_chain, ra[3]: run_chain -> its caller */
  uintptr_t pcs[HC_MAX_STACK_DEPTH];
  int n;
} chain_t;

NOINL static void f3(chain_t *c) {
  c->ra[0] = RA();
  c->n = hci_backtrace(c->pcs, c->max, c->skip);
  BARRIER();
}
NOINL static void f2(chain_t *c) {
  c->ra[1] = RA();
  f3(c);
  BARRIER();
}
NOINL static void f1(chain_t *c) {
  c->ra[2] = RA();
  f2(c);
  BARRIER();
}
NOINL static void run_chain(chain_t *c) {
  c->ra[3] = RA();
  f1(c);
  BARRIER();
}

/* Checks c after run_chain: pcs must start with ra[skip..3]. */
static bool chain_ok(const chain_t *c, bool report) {
  int want = 4 - c->skip;
  if (want > c->max) want = c->max;
  bool ok = c->n >= want && (c->max >= 4 - c->skip || c->n == c->max);
  for (int i = 0; ok && i < want; i++) ok = c->pcs[i] == c->ra[c->skip + i];
  if (!ok && report) {
    fprintf(stderr, "  expected:");
    for (int i = c->skip; i < 4; i++) fprintf(stderr, " %#lx", (unsigned long)c->ra[i]);
    fprintf(stderr, "\n");
    dump("got", c->pcs, c->n);
  }
  return ok;
}

static void test_chain(int unwinder) {
  hci_unwinder = unwinder;
  for (int skip = 0; skip <= 3; skip++) {
    chain_t c = {.skip = skip, .max = HC_MAX_STACK_DEPTH};
    run_chain(&c);
    CHECK(chain_ok(&c, true), "%s chain skip=%d", uname_of(unwinder), skip);
  }
  /* max limits the depth exactly. */
  for (int max = 1; max <= 3; max++) {
    chain_t c = {.skip = 0, .max = max};
    run_chain(&c);
    CHECK(c.n == max && chain_ok(&c, true), "%s chain max=%d n=%d", uname_of(unwinder), max, c.n);
  }
  chain_t c = {.skip = 0, .max = 0};
  run_chain(&c);
  CHECK(c.n == 0, "%s max=0 gives %d frames", uname_of(unwinder), c.n);
  /* Depth is capped at HC_MAX_STACK_DEPTH even when asked for more. */
  uintptr_t big[HC_MAX_STACK_DEPTH + 8];
  int n = hci_backtrace(big, HC_MAX_STACK_DEPTH + 8, 0);
  CHECK(n >= 1 && n <= HC_MAX_STACK_DEPTH, "%s n=%d", uname_of(unwinder), n);
}

/* ---- deep recursion: the walk fills all 64 slots ---- */

NOINL static int recurse(int depth, uintptr_t *pcs, uintptr_t *first_ra) {
  int r;
  if (depth == 0) {
    *first_ra = RA();
    r = hci_backtrace(pcs, HC_MAX_STACK_DEPTH, 0);
  } else {
    r = recurse(depth - 1, pcs, first_ra);
  }
  BARRIER();
  return r;
}

static void test_deep(int unwinder) {
  hci_unwinder = unwinder;
  uintptr_t pcs[HC_MAX_STACK_DEPTH], first;
  int n = recurse(100, pcs, &first);
  CHECK(n == HC_MAX_STACK_DEPTH, "%s deep recursion gave %d frames", uname_of(unwinder), n);
  CHECK(n > 0 && pcs[0] == first, "%s deep recursion first frame", uname_of(unwinder));
  for (int i = 1; i < n; i++) CHECK(pcs[i] == pcs[1], "%s deep frame %d differs", uname_of(unwinder), i);
}

/* ---- through code built without frame pointers ---- */

typedef void (*nofp_cb)(void *arg);
void nofp_a(nofp_cb cb, void *arg, uintptr_t *ras);

typedef struct nofp_run {
  uintptr_t ras[5]; /* 0: cb -> nofp_c, 1..3 from nofp_a/b/c, 4: run_nofp -> caller */
  uintptr_t pcs[HC_MAX_STACK_DEPTH];
  int n;
} nofp_run_t;

NOINL static void nofp_callback(void *arg) {
  nofp_run_t *r = arg;
  r->ras[0] = RA();
  r->n = hci_backtrace(r->pcs, HC_MAX_STACK_DEPTH, 0);
  BARRIER();
}

NOINL static void run_nofp(nofp_run_t *r) {
  r->ras[4] = RA();
  nofp_a(nofp_callback, r, r->ras);
  BARRIER();
}

static void test_nofp(int unwinder) {
  hci_unwinder = unwinder;
  nofp_run_t r;
  memset(&r, 0, sizeof r);
  run_nofp(&r);
  if (unwinder == HC_UNWIND_DWARF) {
    bool ok = r.n >= 5;
    for (int i = 0; ok && i < 5; i++) ok = r.pcs[i] == r.ras[i];
    CHECK(ok, "dwarf through -fomit-frame-pointer code");
    if (!ok) {
      dump("expected", r.ras, 5);
      dump("got", r.pcs, r.n);
    }
  } else {
    /* The chain is broken there: only the first frame is certain. */
    CHECK(r.n >= 1 && r.pcs[0] == r.ras[0], "fp first frame into nofp code (n=%d)", r.n);
  }
}

/* ---- a sampled malloc called from code without frame pointers ---- */

void *nofp_alloc(size_t size, uintptr_t *ras);
void *nofp_via1(size_t size, uintptr_t *ras);
void *nofp_via2(size_t size, uintptr_t *ras);

/* The recorded stack of a sampled object allocated through nofp_alloc:
 * frame 0 is malloc's return address inside nofp_alloc2, then ras[1..3]. */
NOINL static int sampled_nofp_stack(uintptr_t *ras, const uintptr_t **pcs) {
  ras[3] = RA();
  for (int tries = 0; tries < 100000; tries++) {
    void *p = nofp_alloc(100, ras);
    hc_span_t *s = hci_pagemap_span((uintptr_t)p);
    if (s && s->state == HC_SPAN_LARGE && s->is_sampled) {
      int n = hci_depot_get(s->meta.stack_id, pcs);
      free(p);
      BARRIER();
      return n;
    }
    free(p);
  }
  return -1;
}

/* HEAPCHECK_UNWINDER=auto: nofp_alloc2 has no frame pointer (its CFI says
 * so), so the DWARF walk is used, not a frame-pointer walk, which would skip
 * nofp_alloc2 and nofp_alloc silently (they leave rbp alone, so the chain
 * goes on at sampled_nofp_stack).  The second capture from the same call
 * site uses the cached decision and must give the same stack.  With
 * HEAPCHECK_UNWINDER=fp those frames are missing. */
static void test_sampled_nofp(void) {
  uint64_t saved = atomic_exchange(&hci_sample_interval, 1);
  hci_tc_get()->smp.left = -1; /* end the current draw */
  hci_unwinder = HC_UNWIND_FP;
  hci_unwind_fallback = true;
  uintptr_t ras[4] = {0};
  const uintptr_t *pcs[2];
  int n[2];
  for (int k = 0; k < 2; k++) {
    n[k] = sampled_nofp_stack(ras, &pcs[k]);
    bool ok = n[k] >= 4;
    for (int i = 1; ok && i < 4; i++) ok = pcs[k][i] == ras[i];
    CHECK(ok, "auto, capture %d: stack of a sampled malloc from -fomit-frame-pointer code", k + 1);
    if (!ok) {
      dump("expected (from frame 1)", ras + 1, 3);
      dump("got", pcs[k], n[k] < 0 ? 0 : n[k]);
    }
  }
  CHECK(n[0] == n[1] && n[0] > 0 && memcmp(pcs[0], pcs[1], (size_t)n[0] * sizeof(uintptr_t)) == 0,
        "the second capture (straight to DWARF) differs from the first (%d vs %d frames)", n[0], n[1]);
  /* One site, two callers, alternating (the memo of the last walk must not
   * hand one caller's stack to the other), then the same caller twice. */
  for (int k = 0; k < 6; k++) {
    uintptr_t ra0 = 0;
    int via = k < 4 ? 1 + k % 2 : 2;
    const uintptr_t *got = NULL;
    int m = -1;
    for (int tries = 0; tries < 100000 && m < 0; tries++) {
      void *p = via == 1 ? nofp_via1(100, &ra0) : nofp_via2(100, &ra0);
      hc_span_t *s = hci_pagemap_span((uintptr_t)p);
      if (s && s->state == HC_SPAN_LARGE && s->is_sampled) m = hci_depot_get(s->meta.stack_id, &got);
      free(p);
    }
    CHECK(m >= 2 && got[1] == ra0, "capture %d through nofp_via%d: frame 1 is %p, want %p (n=%d)", k + 1, via,
          m >= 2 ? (void *)got[1] : NULL, (void *)ra0, m);
  }
  hci_unwind_fallback = false; /* HEAPCHECK_UNWINDER=fp */
  int m = sampled_nofp_stack(ras, &pcs[0]);
  CHECK(m >= 1 && !(m >= 4 && pcs[0][1] == ras[1] && pcs[0][2] == ras[2] && pcs[0][3] == ras[3]),
        "fp only: %d frames, expected the walk to stop inside the code without frame pointers", m);
  hci_unwind_fallback = true;
  atomic_store(&hci_sample_interval, saved);
}

/* ---- checker mode: every small malloc recorded (alloc.c's alloc_checked_small) ---- */

/* The stack recorded for the small object p (its span's objmeta), or NULL. */
static const uintptr_t *checked_stack(void *p, int *n) {
  hc_span_t *s = hci_pagemap_span((uintptr_t)p);
  unsigned cls = hci_pagemap_class((uintptr_t)p);
  if (!s || !cls || !s->objmeta) return NULL;
  const uintptr_t *pcs;
  *n = hci_depot_get(s->objmeta[((uintptr_t)p - s->start) / hci_classes[cls].size].stack_id, &pcs);
  return pcs;
}

/* Checker mode for the rest of the run, every malloc recorded; *outer gets
 * the frames outward from the caller's return (into main), by DWARF. */
NOINL static int checked_mode_outer(uintptr_t *outer) {
  hci_unwinder = HC_UNWIND_FP;
  hci_unwind_fallback = true;
  int nout = hci_unwind_dwarf(outer, HC_MAX_STACK_DEPTH, 1); /* outer[0]: the caller's return into main */
  hci_alloc_set_recording();
  hci_tc_get()->smp.left = -1; /* the sampler's count below 0: every malloc takes the slow path */
  return nout;
}

/* The recorded stack of p is malloc's caller, ra1, one frame (the test's),
 * then outer[0..nout); false (and the first three printed) otherwise. */
static bool stack_goes_out(void *p, uintptr_t ra1, const uintptr_t *outer, int nout, int *bad, const char *what,
                           int k) {
  int n = 0;
  const uintptr_t *got = checked_stack(p, &n);
  bool ok = got && n >= 3 && got[1] == ra1 && n - 3 == (nout < HC_MAX_STACK_DEPTH - 3 ? nout : HC_MAX_STACK_DEPTH - 3);
  for (int i = 3; ok && i < n; i++) ok = got[i] == outer[i - 3];
  if (!ok && (*bad)++ < 3) {
    fprintf(stderr, "capture %d %s:\n", k + 1, what);
    dump("expected from frame 3", outer, nout);
    dump("got", got, got ? n : 0);
  }
  return ok;
}

/* Checker mode from code without frame pointers (as python3's malloc
 * calls): one malloc call site (nofp_leaf) reached from two callers, in
 * turn and then one of them repeatedly, so the captures after the first
 * are answered by the memo's way and its sites.  Every recorded stack must
 * be malloc's caller, ras[0] (nofp_leaf -> nofp_viaN), the return into
 * this function, then exactly the frames a fresh DWARF walk from here
 * finds outward.  Runs last: recording stays on. */
NOINL static void test_checked_nofp(void) {
  uintptr_t outer[HC_MAX_STACK_DEPTH];
  int nout = checked_mode_outer(outer);
  int bad = 0, checked = 0;
  for (int k = 0; k < 60; k++) {
    int via = k < 30 ? 1 + k % 2 : 1 + (k / 15) % 2;
    uintptr_t ras[1] = {0};
    /* 3000 bytes: a class no earlier test used, so its spans are made
     * with records (a span made before recording began has none). */
    void *p = via == 1 ? nofp_via1(3000, ras) : nofp_via2(3000, ras);
    int n = 0;
    checked += checked_stack(p, &n) != NULL;
    stack_goes_out(p, ras[0], outer, nout, &bad, via == 1 ? "through nofp_via1" : "through nofp_via2", k);
    free(p);
  }
  CHECK(checked == 60, "checker mode: %d of 60 small objects have a record", checked);
  CHECK(bad == 0, "checker mode: %d of 60 recorded stacks differ from the call path", bad);
}

/* Checker mode, malloc called from code with frame pointers (fp_alloc_cb,
 * as LuaJIT's lj_vm_ffi_call) whose caller has none and holds a small
 * number in rbp (nofp_rbp, in the same module): the frame-pointer chain
 * ends one frame after malloc's caller, and the stack stopped there (two
 * frames; valgrind and the DWARF walk go on to main).  Every recorded stack
 * must be malloc's caller, the return into nofp_rbp, the return into this
 * function, then the frames a fresh DWARF walk from here finds outward. */
void nofp_rbp(nofp_cb cb, void *arg, uintptr_t v);

typedef struct fp_alloc_arg {
  void *p;
  uintptr_t ra; /* fp_alloc_cb -> nofp_rbp */
} fp_alloc_arg_t;

NOINL static void fp_alloc_cb(void *arg) {
  fp_alloc_arg_t *a = arg;
  a->ra = RA();
  a->p = malloc(3000);
  BARRIER();
}

/* cb (fp_alloc_cb, or unwind_fp_module.c's fp_module_alloc_cb, a shared
 * library with frame pointers: the walk's two frames are then in two
 * modules, as a complete walk's - main, then libc's start - and the stack
 * stopped there, as iconv's from glibc's __gconv_open, whose caller keeps
 * argv in rbp) called by nofp_rbp 20 times. */
NOINL static void fp_cb_into_nofp(nofp_cb cb, const char *what) {
  uintptr_t outer[HC_MAX_STACK_DEPTH];
  int nout = checked_mode_outer(outer);
  int bad = 0;
  for (int k = 0; k < 20; k++) {
    fp_alloc_arg_t a = {NULL, 0};
    nofp_rbp(cb, &a, 5 + (uintptr_t)k); /* rbp: a multiple of 5 + k, never a frame */
    stack_goes_out(a.p, a.ra, outer, nout, &bad, what, k);
    free(a.p);
  }
  CHECK(bad == 0, "checker mode: %d of 20 stacks %s stop early", bad, what);
}

/* Takes an fp_alloc_arg_t (unwind_fp_module.c's fp_module_arg_t, the same layout). */
void fp_module_alloc_cb(void *arg);

NOINL static void test_checked_fp_into_nofp(void) {
  fp_cb_into_nofp(fp_alloc_cb, "from fp code called by nofp_rbp");
  fp_cb_into_nofp(fp_module_alloc_cb, "from another module's fp code called by nofp_rbp");
}

/* Checker mode, every operator new form called from code without frame
 * pointers (nofp_new: plain, array, aligned to 64; the nothrow forms take
 * the same paths, test_cxx_new): each recorded
 * stack is operator new's caller, ras[1], ras[2] (the return into this
 * function), then the frames a fresh DWARF walk from here finds; and no
 * capture starts with CFI steps (the memo's cfi_starts): every form
 * tail-calls its slow path, whose frame record holds the program's return
 * address.  The aligned forms called new_slow until session 20, which kept
 * that address in rbp: their captures found no record and took the steps. */
void *nofp_new(void *(*f)(size_t), void *(*fa)(size_t, size_t), size_t size, uintptr_t *ras);
void *_Znwm(size_t size);
void *_Znam(size_t size);
void *_ZnwmSt11align_val_t(size_t size, size_t align);
void *_ZnamSt11align_val_t(size_t size, size_t align);

NOINL static void test_checked_nofp_new(void) {
  static const char *const names[4] = {"new", "new[]", "new align 64", "new[] align 64"};
  uintptr_t outer[HC_MAX_STACK_DEPTH];
  int nout = checked_mode_outer(outer);
  hc_unwind_memo_t *memo = &hci_tc_memo(hci_tc_get())->memo;
  uint64_t cfi0 = memo->cfi_starts;
  int bad = 0, checked = 0, cfi_forms = 0;
  for (int k = 0; k < 32; k++) {
    uintptr_t ras[3] = {0, 0, 0};
    uint64_t c0 = memo->cfi_starts;
    int form = k % 4;
    void *p = nofp_new(form == 0 ? _Znwm : form == 1 ? _Znam : NULL,
                       form == 2 ? _ZnwmSt11align_val_t : _ZnamSt11align_val_t, 3000, ras);
    int n = 0;
    const uintptr_t *got = checked_stack(p, &n);
    checked += got != NULL;
    if (got && !(n >= 3 && got[2] == ras[2]) && bad++ < 3) dump(names[k % 4], got, n);
    stack_goes_out(p, ras[1], outer, nout, &bad, names[k % 4], k);
    if (memo->cfi_starts != c0 && cfi_forms++ < 8)
      fprintf(stderr, "  %s: the capture took CFI steps to operator new's caller\n", names[k % 4]);
    free(p);
  }
  CHECK(checked == 32, "checker mode: %d of 32 objects from operator new have a record", checked);
  CHECK(bad == 0, "checker mode: %d of 32 stacks through operator new differ from the call path", bad);
  CHECK(memo->cfi_starts == cfi0, "checker mode: %llu of 32 captures through operator new took CFI steps",
        (unsigned long long)(memo->cfi_starts - cfi0));
}

/* A return address just past the end of a function (noreturn call). */
void nofp_noreturn(nofp_cb cb, void *arg, uintptr_t *ras);
static jmp_buf nr_env;

NOINL static void noreturn_callback(void *arg) {
  nofp_run_t *r = arg;
  r->ras[0] = RA();
  r->n = hci_backtrace(r->pcs, HC_MAX_STACK_DEPTH, 0);
  longjmp(nr_env, 1);
}

NOINL static void run_noreturn(nofp_run_t *r) {
  r->ras[4] = RA();
  if (setjmp(nr_env) == 0) nofp_noreturn(noreturn_callback, r, r->ras);
  BARRIER();
}

static void test_noreturn(int unwinder) {
  hci_unwinder = unwinder;
  static nofp_run_t r; /* static: survives the longjmp unchanged */
  memset(&r, 0, sizeof r);
  run_noreturn(&r);
  if (unwinder == HC_UNWIND_DWARF) {
    bool ok = r.n >= 5;
    for (int i = 0; ok && i < 5; i++) ok = r.pcs[i] == r.ras[i];
    CHECK(ok, "dwarf through a call that ends its function");
    if (!ok) {
      dump("expected", r.ras, 5);
      dump("got", r.pcs, r.n);
    }
  } else {
    CHECK(r.n >= 1 && r.pcs[0] == r.ras[0], "fp first frame into noreturn code (n=%d)", r.n);
  }
}

/* ---- through libc's qsort (no frame pointers in Debian's libc) ---- */

static uintptr_t q_pcs[HC_MAX_STACK_DEPTH];
static int q_n = -1;

static int cmp_int(const void *a, const void *b) {
  if (q_n < 0) q_n = hci_backtrace(q_pcs, HC_MAX_STACK_DEPTH, 0);
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

NOINL static void sort_something(uintptr_t *ra) {
  *ra = RA();
  int v[64];
  for (int i = 0; i < 64; i++) v[i] = (i * 37) % 64;
  qsort(v, 64, sizeof v[0], cmp_int);
  BARRIER();
  for (int i = 0; i < 64; i++)
    if (v[i] != i) abort();
}

static void test_qsort(int unwinder) {
  hci_unwinder = unwinder;
  uintptr_t ra;
  q_n = -1;
  sort_something(&ra);
  CHECK(q_n >= 1, "%s qsort callback capture", uname_of(unwinder));
  if (unwinder == HC_UNWIND_DWARF) {
    /* ... -> qsort internals -> sort_something -> (ra) test_qsort -> main */
    int i = find_pc(q_pcs, q_n, ra);
    bool ok = i >= 2 && q_pcs[i - 1] > (uintptr_t)sort_something && q_pcs[i - 1] < (uintptr_t)sort_something + 1024;
    CHECK(ok, "dwarf reaches sort_something's caller through qsort");
    if (!ok) dump("got", q_pcs, q_n);
  }
}

/* ---- signal handlers ---- */

static volatile sig_atomic_t sig_done;
static uintptr_t sig_pcs[HC_MAX_STACK_DEPTH];
static volatile int sig_n;

static void on_signal(int sig) {
  (void)sig;
  sig_n = hci_backtrace(sig_pcs, HC_MAX_STACK_DEPTH, 0);
  sig_done = 1;
}

NOINL static void raise_here(uintptr_t *ra) {
  *ra = RA();
  raise(SIGUSR1);
  BARRIER();
}

static void test_signal(int unwinder, bool altstack) {
  hci_unwinder = unwinder;
  stack_t ss, old_ss;
  void *alt = NULL;
  size_t alt_size = 256 << 10;
  struct sigaction sa, old;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  if (altstack) {
    alt = mmap(NULL, alt_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(alt != MAP_FAILED, "mmap");
    ss.ss_sp = alt;
    ss.ss_size = alt_size;
    ss.ss_flags = 0;
    CHECK(sigaltstack(&ss, &old_ss) == 0, "sigaltstack");
    sa.sa_flags = SA_ONSTACK;
  }
  CHECK(sigaction(SIGUSR1, &sa, &old) == 0, "sigaction");
  uintptr_t ra;
  sig_done = 0;
  sig_n = -1;
  raise_here(&ra);
  CHECK(sig_done && sig_n >= 1, "%s signal capture (alt=%d) n=%d done=%d", uname_of(unwinder), altstack, (int)sig_n, (int)sig_done);
  if (unwinder == HC_UNWIND_DWARF) {
    /* handler <- __restore_rt <- raise's insides <- raise_here <- (ra), also
     * from an alternate signal stack back onto the thread's stack. */
    CHECK(find_pc(sig_pcs, sig_n, ra) >= 2, "dwarf walks through the signal frame (alt=%d)", altstack);
    if (find_pc(sig_pcs, sig_n, ra) < 2) dump("got", sig_pcs, sig_n);
  }
  sigaction(SIGUSR1, &old, NULL);
  if (altstack) {
    ss.ss_flags = SS_DISABLE;
    sigaltstack(&ss, NULL);
    munmap(alt, alt_size);
  }
  /* Normal captures still work after the bounds cache moved to the altstack. */
  chain_t c = {.skip = 0, .max = HC_MAX_STACK_DEPTH};
  run_chain(&c);
  CHECK(chain_ok(&c, true), "%s chain after signal test", uname_of(unwinder));
}

/* ---- hci_unwind_fp on crafted chains ---- */

NOINL static void test_fp_junk(void) {
  uintptr_t buf[64];
  uintptr_t pcs[HC_MAX_STACK_DEPTH];
  uintptr_t sp = (uintptr_t)buf; /* lower bound: everything read is in buf or above */
  /* A good chain of three frames ending in a zero return address. */
  memset(buf, 0, sizeof buf);
  buf[0] = (uintptr_t)&buf[4];  buf[1] = 0x111111;
  buf[4] = (uintptr_t)&buf[10]; buf[5] = 0x222222;
  buf[10] = (uintptr_t)&buf[20]; buf[11] = 0x333333;
  buf[20] = (uintptr_t)&buf[30]; buf[21] = 0;
  int n = hci_unwind_fp(pcs, HC_MAX_STACK_DEPTH, (uintptr_t)buf, sp);
  CHECK(n == 3 && pcs[0] == 0x111111 && pcs[1] == 0x222222 && pcs[2] == 0x333333, "crafted chain n=%d", n);
  n = hci_unwind_fp_skip(pcs, HC_MAX_STACK_DEPTH, 2, (uintptr_t)buf, sp);
  CHECK(n == 1 && pcs[0] == 0x333333, "crafted chain skip=2 n=%d", n);
  /* Decreasing frame pointer: stop after the frame that links back. */
  buf[10] = (uintptr_t)&buf[2];
  n = hci_unwind_fp(pcs, HC_MAX_STACK_DEPTH, (uintptr_t)buf, sp);
  CHECK(n == 3, "decreasing chain n=%d", n);
  /* A self loop. */
  buf[0] = (uintptr_t)&buf[0];
  n = hci_unwind_fp(pcs, HC_MAX_STACK_DEPTH, (uintptr_t)buf, sp);
  CHECK(n == 1, "self loop n=%d", n);
  /* Misaligned link. */
  buf[0] = (uintptr_t)&buf[4] + 3;
  n = hci_unwind_fp(pcs, HC_MAX_STACK_DEPTH, (uintptr_t)buf, sp);
  CHECK(n == 1, "misaligned link n=%d", n);
  /* Links out of the stack: heap, code, unmapped, the top of the address space. */
  static uintptr_t global_frame[2] = {0, 0x444444};
  uintptr_t outside[] = {(uintptr_t)global_frame, (uintptr_t)&test_fp_junk & ~(uintptr_t)7,
                         (uintptr_t)16 << 40, ~(uintptr_t)7, 8, (uintptr_t)malloc(64)};
  for (size_t i = 0; i < sizeof outside / sizeof outside[0]; i++) {
    buf[0] = outside[i];
    n = hci_unwind_fp(pcs, HC_MAX_STACK_DEPTH, (uintptr_t)buf, sp);
    CHECK(n == 1, "link %#lx out of the stack n=%d", (unsigned long)outside[i], n);
    /* Starting there directly reads nothing. */
    n = hci_unwind_fp(pcs, HC_MAX_STACK_DEPTH, outside[i], sp);
    CHECK(n == 0, "start at %#lx n=%d", (unsigned long)outside[i], n);
  }
  free((void *)outside[5]);
  /* fp below sp, or an sp in no stack at all. */
  n = hci_unwind_fp(pcs, HC_MAX_STACK_DEPTH, (uintptr_t)buf - 64, sp);
  CHECK(n == 0, "fp below sp n=%d", n);
  n = hci_unwind_fp(pcs, HC_MAX_STACK_DEPTH, (uintptr_t)buf, (uintptr_t)16 << 40);
  CHECK(n == 0, "sp unmapped n=%d", n);
  /* A large jump (> 1 MiB) ends the walk. */
  buf[0] = (uintptr_t)&buf[4];
  buf[4] = (uintptr_t)&buf[4] + (2 << 20);
  n = hci_unwind_fp(pcs, HC_MAX_STACK_DEPTH, (uintptr_t)buf, sp);
  CHECK(n == 2, "huge frame n=%d", n);
}

/* ---- a frame whose saved return address / frame pointer is junk ---- */

static uintptr_t some_global[4];

/* Overwrites its own frame record {saved rbp, return address} while it
 * captures, then puts it back.  pcs[0] is the (junk) return address. */
NOINL static int corrupt_and_capture(uintptr_t junk_ra, uintptr_t junk_fp, bool set_fp, uintptr_t *pcs) {
  uintptr_t *frame = __builtin_frame_address(0);
  uintptr_t save_fp = frame[0], save_ra = frame[1];
  frame[1] = junk_ra;
  if (set_fp) frame[0] = junk_fp;
  BARRIER();
  int n = hci_backtrace(pcs, HC_MAX_STACK_DEPTH, 0);
  BARRIER();
  frame[0] = save_fp;
  frame[1] = save_ra;
  BARRIER();
  return n;
}

static void test_corrupt(int unwinder) {
  hci_unwinder = unwinder;
  uintptr_t local[8] = {0};
  uintptr_t ras[] = {0, 1, 4095, (uintptr_t)1 << 44, ~(uintptr_t)0, (uintptr_t)1 << 47,
                     (uintptr_t)some_global, (uintptr_t)&test_corrupt + 1, (uintptr_t)&run_chain + 3,
                     (uintptr_t)local, (uintptr_t)&hci_backtrace};
  uintptr_t fps[] = {0, 3, (uintptr_t)local + 4, (uintptr_t)local, (uintptr_t)some_global, ~(uintptr_t)15,
                     (uintptr_t)1 << 44};
  uintptr_t pcs[HC_MAX_STACK_DEPTH];
  for (size_t i = 0; i < sizeof ras / sizeof ras[0]; i++) {
    for (size_t j = 0; j <= sizeof fps / sizeof fps[0]; j++) {
      bool set_fp = j < sizeof fps / sizeof fps[0];
      int n = corrupt_and_capture(ras[i], set_fp ? fps[j] : 0, set_fp, pcs);
      if (ras[i] < 4096) CHECK(n == 0, "%s junk ra %#lx: %d frames", uname_of(unwinder), (unsigned long)ras[i], n);
      /* A return address in the stack ends the frame-pointer walk there
       * (libffi's frames: unwind.c's fp_walk). */
      else if (ras[i] == (uintptr_t)local && unwinder == HC_UNWIND_FP)
        CHECK(n == 0, "%s junk ra %#lx (in the stack): %d frames", uname_of(unwinder), (unsigned long)ras[i], n);
      else CHECK(n >= 1 && pcs[0] == ras[i], "%s junk ra %#lx: n=%d", uname_of(unwinder), (unsigned long)ras[i], n);
    }
  }
  /* Afterwards everything is normal again. */
  chain_t c = {.skip = 0, .max = HC_MAX_STACK_DEPTH};
  run_chain(&c);
  CHECK(chain_ok(&c, true), "%s chain after corruption test", uname_of(unwinder));
}

/* ---- threads ---- */

typedef struct thr_arg {
  int iters, bad;
} thr_arg_t;

static void *thread_main(void *p) {
  thr_arg_t *a = p;
  for (int i = 0; i < a->iters; i++) {
    chain_t c = {.skip = i & 1, .max = HC_MAX_STACK_DEPTH};
    run_chain(&c);
    if (!chain_ok(&c, a->bad == 0)) a->bad++;
    if (hci_unwinder == HC_UNWIND_DWARF && (i & 63) == 0) {
      nofp_run_t r;
      memset(&r, 0, sizeof r);
      run_nofp(&r);
      bool ok = r.n >= 5;
      for (int j = 0; ok && j < 5; j++) ok = r.pcs[j] == r.ras[j];
      if (!ok) a->bad++;
    }
  }
  return NULL;
}

static void test_threads(int unwinder) {
  hci_unwinder = unwinder;
  enum { T = 8 };
  pthread_t th[T];
  thr_arg_t args[T];
  for (int i = 0; i < T; i++) {
    args[i].iters = 20000;
    args[i].bad = 0;
    CHECK(pthread_create(&th[i], NULL, thread_main, &args[i]) == 0, "pthread_create");
  }
  for (int i = 0; i < T; i++) {
    pthread_join(th[i], NULL);
    CHECK(args[i].bad == 0, "%s thread %d had %d bad captures", uname_of(unwinder), i, args[i].bad);
  }
  /* A thread with a small user-provided stack. */
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  size_t sz = 128 << 10;
  void *stk = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  pthread_attr_setstack(&attr, stk, sz);
  thr_arg_t one = {.iters = 1000, .bad = 0};
  pthread_t t;
  CHECK(pthread_create(&t, &attr, thread_main, &one) == 0, "pthread_create user stack");
  pthread_join(t, NULL);
  CHECK(one.bad == 0, "%s user-stack thread: %d bad captures", uname_of(unwinder), one.bad);
  pthread_attr_destroy(&attr);
  munmap(stk, sz);
}

/* ---- a million captures ---- */

static void test_stress(void) {
  int bad = 0;
  for (int i = 0; i < 1000000; i++) {
    hci_unwinder = (i & 1) ? HC_UNWIND_DWARF : HC_UNWIND_FP;
    chain_t c = {.skip = 0, .max = HC_MAX_STACK_DEPTH};
    run_chain(&c);
    if (!chain_ok(&c, bad == 0)) bad++;
    if ((i & 0xffff) == 0) hci_unwind_dwarf_cache_clear(); /* exercise the cold path too */
  }
  CHECK(bad == 0, "%d of a million captures were wrong", bad);
}

/* ---- HEAPCHECK_UNWINDER ---- */

static void test_env(void) {
  setenv("HEAPCHECK_UNWINDER", "dwarf", 1);
  hci_unwinder = HC_UNWIND_FP;
  hci_unwind_init();
  CHECK(hci_unwinder == HC_UNWIND_DWARF, "HEAPCHECK_UNWINDER=dwarf");
  setenv("HEAPCHECK_UNWINDER", "fp", 1);
  hci_unwind_init();
  CHECK(hci_unwinder == HC_UNWIND_FP, "HEAPCHECK_UNWINDER=fp");
  setenv("HEAPCHECK_UNWINDER", "libunwind", 1); /* warns, keeps the default */
  hci_unwind_init();
  CHECK(hci_unwinder == HC_UNWIND_FP, "HEAPCHECK_UNWINDER=libunwind");
  unsetenv("HEAPCHECK_UNWINDER");
}

int main(void) {
  CHECK(hci_unwind_dwarf_available(), "_dl_find_object is present on glibc >= 2.35");
  int unwinders[2] = {HC_UNWIND_FP, HC_UNWIND_DWARF};
  for (int k = 0; k < 2; k++) {
    int u = unwinders[k];
    test_chain(u);
    test_deep(u);
    test_nofp(u);
    test_noreturn(u);
    test_qsort(u);
    test_signal(u, false);
    test_signal(u, true);
    test_corrupt(u);
    test_threads(u);
  }
  test_fp_junk();
  test_sampled_nofp();
  test_stress();
  test_env();
  test_checked_nofp();
  test_checked_fp_into_nofp();
  test_checked_nofp_new();
  if (failures) {
    fprintf(stderr, "test_unwind: %d failures\n", failures);
    return 1;
  }
  printf("test_unwind: ok\n");
  return 0;
}

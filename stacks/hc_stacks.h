/* hc_stacks.h - the stacks layer (stacks/): call stacks of allocations.
 *
 * The frame-pointer and DWARF (.eh_frame) unwinders (unwind.c,
 * unwind_dwarf.c) and the stack depot that deduplicates captured stacks
 * into ids (stackdepot.c).  Uses only base/ (hc_base.h); the allocator
 * keeps a thread's last DWARF walk (hc_unwind_memo_t) in its thread cache
 * and hands it in.  Never faults, never calls malloc.
 */
#ifndef HC_STACKS_H
#define HC_STACKS_H

#include "hc_base.h"


/* The hash of a stack, shared by the depot and the memo: the sum of pcs[k] *
 * B^k (mod 2^64), innermost frame first.  A polynomial in B, so the memo
 * gets the hash of any run of its frames from per-frame partial sums (hv
 * below) instead of a pass over the frames: hash(s, s + L) = hv[s] -
 * hv[s + L] * B^L. */
#define HCI_STACK_HASH_B 0xff51afd7ed558ccdull
static inline uint64_t hci_stack_hash(const uintptr_t *pcs, int n) {
  uint64_t h = 0;
  for (int i = n - 1; i >= 0; i--) h = h * HCI_STACK_HASH_B + pcs[i];
  return h;
}

/* A thread's last DWARF walk (unwind_dwarf.c), one per way below: the registers at each
 * frame it passed, every stack word it read and the frames it found.  A
 * walk from the same registers over the same words finds the same frames
 * (rules are a function of the PC), so a later capture that reaches one of
 * these frames with the same registers checks the words the rest of the
 * walk read instead of walking on: consecutive allocations that share their
 * outer callers cost a few steps plus one compare per outer word instead of
 * a rule lookup per frame.  rbp and the words saved from it count only
 * where a step uses rbp before one reloads it (lv): code without frame
 * pointers keeps data in rbp, which would otherwise make the memo miss.
 * Layout: the frames fill the top slots, [F - n, F), outermost in slot F - 1,
 * so the frames are in the order a stack is reported (innermost first) and a
 * walk that shares the memo's outer frames writes only its own inner ones
 * below them: nothing is copied, and the caller reads the frames (and their
 * hash) in place.  The words likewise fill [W - wtop[F - n], W), those of the
 * steps from outer frames at the top.  It holds more frames than a stack
 * records (HC_MAX_STACK_DEPTH), so a capture up to 16 frames shallower than a
 * deep last one still finds all its frames in it. */
#define HC_UNWIND_MEMO_FRAMES 80
#define HC_UNWIND_MEMO_WORDS (2 * HC_UNWIND_MEMO_FRAMES) /* a step reads at most 2 (a K_EXPR one 3: a walk that
                                                          reads more is not kept) */
typedef struct hc_unwind_memo_way {
  uint32_t gen;            /* rule-cache generation it was made in; 0 = empty */
  uint32_t id;             /* the caller's: the depot id of the frames it last returned (0: none) */
  int idn;                 /* how many frames that id has (a capture may ask for fewer) */
  int n;                   /* frames held, in slots [F - n, F) */
  uint8_t end;             /* why the walk stopped (unwind_dwarf.c's END_*) */
  bool same;               /* the last walk found the frames of the one before it */
  uint8_t fresh;           /* frames the last walk stepped to itself before the memo's took over (tests) */
  uintptr_t rsp0;          /* the walk's start: rsp at malloc's caller */
  uintptr_t amax;          /* no word's address is above this */
  uint16_t wtop[HC_UNWIND_MEMO_FRAMES]; /* the words of the steps from slot s outward: [W - wtop[s], W) */
  uintptr_t pcs[HC_UNWIND_MEMO_FRAMES];
  uintptr_t rsp[HC_UNWIND_MEMO_FRAMES + 1]; /* the registers at each frame; rsp[F]: all ones */
  uintptr_t rbp[HC_UNWIND_MEMO_FRAMES];
  uint64_t hv[HC_UNWIND_MEMO_FRAMES + 1]; /* hv[s] = hv[s + 1] * B + pcs[s]; hv[F]: frames dropped past F - 1 */
  uint8_t lv[HC_UNWIND_MEMO_FRAMES];      /* rbp at slot s matters to the walk from s outward (else not compared) */
  /* ver[s]: a stamp (hc_unwind_memo_t.vnext) given when slot s was last
   * written and renewed whenever any slot outward of it is: equal stamps
   * mean equal slots [s, F) while s is inside the memo (s >= F - n): a
   * site (below) names the slot it met by its stamp. */
  uint64_t ver[HC_UNWIND_MEMO_FRAMES];
  uintptr_t addr[HC_UNWIND_MEMO_WORDS], val[HC_UNWIND_MEMO_WORDS];
} hc_unwind_memo_way_t;
/* One way per group of malloc call sites (ra hashed): a capture walks with
 * the last walk from its own group, and a call site that allocates again
 * under the same callers finds its frames whole at its first frame (and its
 * last depot id) even when other call sites allocated in between. */
#define HC_UNWIND_MEMO_WAYS 4
/* A call site's own steps (memo_site.c): a capture that took c
 * fresh steps (1..HC_UNWIND_MEMO_SITE_FRAMES) before it met a memo slot
 * keeps its start registers, the words those steps read (the ones that
 * matter: rbp's only where it is used), its frames, the slot met with that
 * slot's stamp, and the depot id of the whole stack.  A later capture from
 * the same registers over the same words steps to the same registers at the
 * same slot; while that slot keeps its stamp and the words from it outward
 * hold, its stack is the same: the id comes without a step, a splice or a
 * depot lookup.  python3 allocates from a few hundred callers of one malloc
 * call site in turn, under outer frames that stay: the way's last frames
 * are another caller's, the site's are its own. */
#define HC_UNWIND_MEMO_SITES 32 /* sets of 4 */
/* Start pcs whose first step's word sites_early knows (first[] below): 16
 * held too few of yosys's malloc callers (330 000 of its 2.29 M captures
 * found their pc's entry taken by another, and asked the sites a step
 * later or not at all); 128 (2 KiB): 27 000. */
#define HC_UNWIND_MEMO_FIRST_BITS 7
#define HC_UNWIND_MEMO_FIRST (1 << HC_UNWIND_MEMO_FIRST_BITS)
#define HC_UNWIND_MEMO_SITE_FRAMES 6
#define HC_UNWIND_MEMO_SITE_WORDS 8
typedef struct hc_unwind_memo_site {
  uintptr_t ra, rsp0, rbp0; /* the start (rbp0 compared only when it matters: lv0) */
  uintptr_t a0;             /* the first word's address: frame 0's return address */
  uint64_t ver;             /* the stamp of the slot met */
  uintptr_t amax;           /* the highest word address (of the site's words) */
  uint32_t id;              /* depot id of the stack; 0: empty, or not known yet */
  uint8_t way, at, c, n, nw, lv0;
  uintptr_t pcs[HC_UNWIND_MEMO_SITE_FRAMES];
  uintptr_t addr[HC_UNWIND_MEMO_SITE_WORDS], val[HC_UNWIND_MEMO_SITE_WORDS]; /* [W - nw, W), frame 0's first */
} hc_unwind_memo_site_t;
typedef struct hc_unwind_memo {
  hc_unwind_memo_way_t way[HC_UNWIND_MEMO_WAYS];
  int cur; /* the way of the last walk */
  int pow_n;     /* pow_v = B^pow_n (0: none yet) */
  uint64_t pow_v;
  uint64_t vnext; /* the last stamp given (hc_unwind_memo_way_t.ver), in all ways: stamps are unique per memo */
  uint64_t site_hits; /* captures a site answered (tests, counting builds) */
  uint64_t site_early; /* of which before any step (unwind_dwarf.c's sites_early; tests) */
  uint64_t cfi_starts; /* captures whose start took CFI steps: no frame record held ra (caller_regs; tests, gdb) */
  int site_new;       /* the site the last walk made (its id is filled in by hci_unwind_memo_id), -1: none */
  uint32_t site_clock; /* picks the site replaced in a full set */
  /* Site lookups left before sites stop being asked: a site given an id
   * adds HC_SITE_CREDIT_MADE, an answer HC_SITE_CREDIT_HIT, a miss takes
   * one.  A program whose walks make no site (sqlite3) asks none. */
  int32_t site_credit;
  /* Where the first step from a start pc reads its word: rsp + off (CFA
   * from rsp), per pc hashed (unwind_dwarf.c's sites_early); pc 0: none. */
  struct { uintptr_t pc, off; } first[HC_UNWIND_MEMO_FIRST];
  hc_unwind_memo_site_t site[HC_UNWIND_MEMO_SITES];
} hc_unwind_memo_t;
/* The way holding the frames of the last hci_unwind_memo_walk. */
static inline hc_unwind_memo_way_t *hci_unwind_memo_cur(hc_unwind_memo_t *m) { return &m->way[m->cur]; }

/* ======================= unwind.c / unwind_dwarf.c ======================= */
enum { HC_UNWIND_FP = 0, HC_UNWIND_DWARF = 1 };
extern int hci_unwinder;                     /* HEAPCHECK_UNWINDER */
/* HEAPCHECK_UNWINDER=auto (the default): allocation stacks are walked by
 * frame pointers, and again with the DWARF unwinder when the frame-pointer
 * walk stops right after the caller of malloc (code built without frame
 * pointers, such as Debian's binaries). */
extern bool hci_unwind_fallback;
/* Return addresses of the caller's callers: pcs[0] is the return address in
 * the function that called the function that called hci_backtrace, after
 * skipping `skip` more frames.  Never faults, never allocates. */
int hci_backtrace(uintptr_t *pcs, int max, int skip);
int hci_unwind_fp(uintptr_t *pcs, int max, uintptr_t fp, uintptr_t sp);
int hci_unwind_dwarf(uintptr_t *pcs, int max, int skip);
/* The stack from the frame that returns to ra: pcs[0] = ra, then its
 * callers by DWARF.  The frame is found through the allocator's own frame
 * pointers (a few steps, no CFI lookups), and a CFI step from where their
 * chain ends (a frameless entry point that calls the slow path: none of
 * ours since session 20); when it is not
 * found, a whole DWARF walk from here, in which the caller looks for ra.  memo (may
 * be NULL): the calling thread's last walk, checked and replaced. */
int hci_unwind_dwarf_at(uintptr_t *pcs, int max, uintptr_t ra, hc_unwind_memo_t *memo);
/* The same through memo (not NULL), without a copy: *pcs points at the
 * innermost of the returned frames inside the memo (valid until its next
 * use) and *hash is hci_stack_hash of them.  -1 when malloc's caller's frame
 * is not among the allocator's (then hci_unwind_dwarf_at walks afresh).
 * rec: the frame record {saved rbp, ra} of the entry point's frame when
 * the caller knows it (hci_alloc_slow's own frame, reached by malloc's tail
 * call), else 0.  It is used only when it lies on the live stack above
 * this call and holds ra; otherwise the allocator's frames are searched for
 * it (hci_unwind_fp_find) as without it: the frames are the same. */
int hci_unwind_memo_walk(hc_unwind_memo_t *memo, int max, uintptr_t ra, uintptr_t rec, const uintptr_t **pcs,
                         uint64_t *hash);
/* Whether the function ra returns into keeps a frame pointer there (its CFA
 * is rbp-based per .eh_frame): a frame-pointer walk through it is sound.
 * False for -fomit-frame-pointer code, whose frames such a walk silently
 * skips when it leaves rbp alone.  True when DWARF is unavailable. */
bool hci_unwind_keeps_fp(uintptr_t ra);
/* The depot id of the frames the last hci_unwind_memo_walk returned (pcs,
 * n, hash: its results): the way's last id when they are its last frames,
 * else hci_depot_put_hashed's; the site that walk made gets it (memo_site.c). */
uint32_t hci_unwind_memo_id(hc_unwind_memo_t *memo, const uintptr_t *pcs, int n, uint64_t hash);
/* The depot id of the stack hci_unwind_memo_walk would return, through a
 * site when one holds (no frames are produced), else by the walk and
 * hci_unwind_memo_id.  0 when the walk cannot use the memo (as its -1). */
uint32_t hci_unwind_memo_stack_id(hc_unwind_memo_t *memo, int max, uintptr_t ra, uintptr_t rec);
void hci_unwind_init(void);
/* The process installed a seccomp filter that may kill a system call not on
 * its list (checker/seccomp_watch.c): from now on a stack capture makes none
 * (no stack-bound probes, no module headers read); what is not cached ends
 * the walk. */
void hci_unwind_forbid_syscalls(void);
extern _Atomic int hci_unwind_no_syscalls;

/* ======================= unwind_caller.c ======================= */
/* The frame that called the function containing fn (its .eh_frame FDE's
 * range), seen from code that function called: the caller's state at the
 * call, as an interposer of fn would see it at its entry. */
typedef struct hci_caller {
  uintptr_t sp;       /* the caller's stack pointer after the call (fn's CFA): its frame and its callers' lie at and above */
  uintptr_t pc;       /* the return address into the caller */
  uintptr_t regs[6];  /* its callee-saved registers: rbx, r12-r15, rbp (0 when undefined) */
  int nregs;
} hci_caller_t;
/* HCI_CALLER_FOUND and *out filled when a frame of fn is among the 64
 * innermost of the calling thread's stack and every frame up to it has
 * .eh_frame rules the walk follows; HCI_CALLER_ABSENT when the walk reached
 * the stack's outermost frame (_start, a thread's start routine) without
 * meeting fn: fn is not running on this thread; HCI_CALLER_UNKNOWN otherwise
 * (no FDE, a signal frame on the way, a register rule other than an offset,
 * too deep, not x86-64).  [eh_lo, eh_hi) (may be empty): the .eh_frame
 * section of a module without .eh_frame_hdr (a -static link), searched
 * whole.  Never faults, never allocates; uncached (cold path). */
enum { HCI_CALLER_UNKNOWN = 0, HCI_CALLER_FOUND = 1, HCI_CALLER_ABSENT = 2 };
int hci_unwind_find_caller(uintptr_t fn, uintptr_t eh_lo, uintptr_t eh_hi, hci_caller_t *out);
/* Whether a signal frame may lie on the calling thread's stack, for when
 * the walk above cannot tell (code without unwind tables on the way): true
 * when some word between the caller's frame and the stack's top is a return
 * address into glibc's sigreturn trampoline, or when the stack's extent or
 * the modules cannot be known (not x86-64, no _dl_find_object).  Reads only
 * the stack and module segments; never faults, never allocates; cold. */
bool hci_unwind_signal_frame_here(void);

/* ======================= unwind_obj.c ======================= */
/* The module covering a PC, as the DWARF unwinder needs it: every table read
 * is checked against seg_lo/seg_hi (the readable PT_LOAD segments), and the
 * .eh_frame_hdr search table against hdr_hi (its segment's size). */
#define HCI_EH_SEGS 8
typedef struct hci_eh_obj {
  uintptr_t map_lo, map_hi; /* the module's extent */
  uintptr_t hdr, hdr_hi;    /* .eh_frame_hdr; hdr == 0: none */
  uintptr_t nseg;           /* 0: headers unusable, nothing may be read */
  uintptr_t seg_lo[HCI_EH_SEGS], seg_hi[HCI_EH_SEGS];
} hci_eh_obj_t;
/* 1 and *o filled when a module covers pc, 0 otherwise.  Lock-free, no
 * malloc; static executables are described from AT_PHDR (libc.a's
 * _dl_find_object is not usable before its init, which mallocs). */
int hci_eh_find(uintptr_t pc, hci_eh_obj_t *o);
bool hci_eh_available(void);   /* hci_eh_find can find modules */
bool hci_eh_static_exe(void);  /* the process is a statically linked executable */
void hci_eh_cache_clear(void); /* after dlclose */
/* [a, a + n) lies inside one readable segment of o. */
static inline bool hci_eh_readable(const hci_eh_obj_t *o, uintptr_t a, size_t n) {
  for (uintptr_t i = 0; i < o->nseg; i++)
    if (a >= o->seg_lo[i] && a < o->seg_hi[i] && n <= o->seg_hi[i] - a) return true;
  return false;
}

/* ======================= stackdepot.c ======================= */
#define HC_STACK_NONE 0u
#define HC_STACK_UNKNOWN 1u
/* Deduplicates a stack; returns its id (>= 2), or HC_STACK_UNKNOWN on n == 0
 * or when out of memory.  Lock-free lookup; safe inside malloc. */
uint32_t hci_depot_put(const uintptr_t *pcs, int n);
/* The same with hash == hci_stack_hash(pcs, n) already known (n <= HC_MAX_STACK_DEPTH). */
uint32_t hci_depot_put_hashed(const uintptr_t *pcs, int n, uint64_t hash);
/* The frames of id; returns the depth (0 for NONE/UNKNOWN). */
int hci_depot_get(uint32_t id, const uintptr_t **pcs);
size_t hci_depot_bytes(void);
size_t hci_depot_count(void);

/* ---- unwind / depot: extra services ---- */
/* hci_unwind_fp that first drops `skip` frames. */
int hci_unwind_fp_skip(uintptr_t *pcs, int max, int skip, uintptr_t fp, uintptr_t sp);
/* The same, with sizes[i] the size of frame i: the distance between its
 * frame record and the next (gperftools' GetStackFrames), 0 when unknown. */
int hci_unwind_fp_sizes(uintptr_t *pcs, size_t *sizes, int max, int skip, uintptr_t fp, uintptr_t sp);
/* The frame-pointer walk from rec, the frame record {saved fp, ra} of an
 * entry point's frame (hci_alloc_slow's, reached by malloc's tail call):
 * pcs[0] = ra, then its callers, as hci_backtrace finds them past the
 * allocator's own frames.  0 when rec does not lie on the stack above the
 * caller's frame or does not hold ra (then walk with hci_backtrace). */
int hci_unwind_fp_from(uintptr_t *pcs, int max, uintptr_t rec, uintptr_t ra);
/* Address of the frame record {saved fp, return address} whose return
 * address is ra, within `max` frames of the chain from fp; 0 if none.
 * last (may be NULL): when the chain ends before (a saved fp that leads
 * nowhere: its function keeps no frame pointer), the record it ended at
 * (its return address and the stack above it are that function's: a DWARF
 * step goes on from there), else 0. */
uintptr_t hci_unwind_fp_find(uintptr_t ra, int max, uintptr_t fp, uintptr_t sp, uintptr_t *last);
/* End (exclusive) of the stack region that contains sp (the current thread's):
 * every byte of [sp, end) is readable.  0 when unknown.  Cached per thread; the
 * slow path probes pages with a syscall (no malloc, no lock, no /proc). */
uintptr_t hci_unwind_stack_hi_slow(uintptr_t sp);
extern HC_TLS uintptr_t hci_stk_lo, hci_stk_hi; /* unwind.c's cache: stk_hi is written 0 first */
static inline uintptr_t hci_unwind_stack_hi(uintptr_t sp) {
  uintptr_t hi = hci_stk_hi;
  if (hc_likely(sp >= hci_stk_lo && sp < hi)) return hi;
  return hci_unwind_stack_hi_slow(sp);
}
/* A thread's memo of the stacks it took at frees by the frame-pointer walk
 * (allocator/alloc.c's free_stack): a program frees from a few sites under
 * the same callers, and a stack the memo holds costs one walk that compares
 * each frame with it, not a walk, a hash and the depot's lookup.  A slot
 * per start (the return address into the caller of free and the frame
 * record holding it: a call site at one depth of the stack), direct-mapped;
 * it holds the depot id of the last stack walked from there, and its
 * frames as the depot's copy (entries never move or change).  Exact: a slot
 * answers only when the walk would find exactly its frames
 * (hci_unwind_fp_memo).  Written by its thread only, inside its recursion
 * guard (a signal handler's free never sees a torn slot).  gen: the
 * generation (the caller's) its slots were made in; another clears them. */
#define HC_STACK_MEMO_BITS 7
#define HC_STACK_MEMO_SLOTS (1 << HC_STACK_MEMO_BITS)
typedef struct hc_stack_memo_slot {
  uintptr_t ra, rec;        /* the start */
  const uintptr_t *pcs;     /* the depot's copy of the frames */
  uint32_t id;              /* their depot id */
  uint32_t n;               /* how many; 0: empty */
} hc_stack_memo_slot_t;
typedef struct hc_stack_memo {
  uint32_t gen;
  hc_stack_memo_slot_t slot[HC_STACK_MEMO_SLOTS];
} hc_stack_memo_t;
/* The depot id of the walk hci_unwind_fp_from(pcs, max, rec, ra) would
 * take when the memo holds it, else 0 (m->gen != gen: the memo is emptied
 * first).  rec: a frame record of the caller's, on the stack it runs on,
 * aligned.  max: as the slots were made with (a new depth, a new gen).
 * Makes no call and no system call: the stack's bounds as cached. */
uint32_t hci_unwind_fp_memo(hc_stack_memo_t *m, uint32_t gen, int max, uintptr_t rec, uintptr_t ra);
/* Keeps id (>= 2, the depot's id of that walk, n frames) for the start (ra, rec). */
void hci_unwind_fp_memo_put(hc_stack_memo_t *m, uintptr_t ra, uintptr_t rec, int n, uint32_t id);

/* True when the DWARF unwinder can run (_dl_find_object present, x86-64). */
bool hci_unwind_dwarf_available(void);
/* Forgets every cached per-PC unwind rule (after dlclose; cold benchmarks). */
void hci_unwind_dwarf_cache_clear(void);
/* A static executable linked without .eh_frame_hdr (gcc -static): indexes
 * its .eh_frame [eh_lo, eh_hi) so allocation stacks are walked by DWARF
 * rules there too (else they end at code without frame pointers), and
 * forgets the rules found before.  Cold, once; not inside malloc. */
bool hci_unwind_static_index(uintptr_t eh_lo, uintptr_t eh_hi);
/* The depot lock, for hci_lock_all (and so fork), in lock order. */
void hci_depot_locks(hci_lock_fn *each);

#endif

/* unwind_memo.h - the DWARF walk's pieces shared by unwind_dwarf.c (the
 * walk and the memo of the last walk) and memo_site.c (sites and ids): the
 * registers of a frame, what a step did with rbp, the words a walk read.
 * Private to stacks/.  Plain C; the memo runs on x86-64 Linux only
 * (unwind_dwarf.c's HC_DWARF_X86_64).
 */
#ifndef HC_UNWIND_MEMO_H
#define HC_UNWIND_MEMO_H

#include <string.h>

#include "hc_stacks.h"

typedef struct regs {
  uintptr_t rip, rsp, rbp;
  bool exact;        /* rip is a PC, not a return address */
} regs_t;

/* What the step from a frame does with rbp (walk_log_t.fl), for the memo:
 * a frame's rbp matters to the rest of the walk only when a step uses it
 * before one reloads it, and a word read as the caller's rbp only when the
 * caller's rbp matters (code without frame pointers keeps data in rbp, and
 * saves it: comparing those words and registers made the memo miss). */
#define STEP_USES 1  /* CFA from rbp */
#define STEP_KILLS 2 /* rbp reloaded from the stack (its word read second) or undefined */
#define STEP_LOADS 4 /* the rbp word is read (after the return address) */

/* Why a walk stopped: the outermost frame or a rule that ends it (both a
 * function of the frame), the frame limit, or a word outside the stack
 * (which depends on where the walk started). */
enum { END_OUTER = 0, END_MAX = 1, END_FAIL = 2 };

/* [lo, hi): the readable stack; a read of 8 bytes at a must fit. */
static inline bool load_word(uintptr_t lo, uintptr_t hi, uintptr_t a, uintptr_t *out) {
  if (a < lo || a > hi - sizeof(uintptr_t)) return false;
  memcpy(out, (const void *)a, sizeof *out);
  return true;
}

#define MF HC_UNWIND_MEMO_FRAMES
#define MW HC_UNWIND_MEMO_WORDS
_Static_assert(HC_MAX_STACK_DEPTH <= MF, "the memo holds a whole recorded stack");

/* Whether rbp at a frame matters to the walk from there on, given whether
 * it does at the next frame out and what the frame's step does (STEP_*). */
static inline bool rbp_live(uint8_t fl, bool live_next) { return (fl & STEP_USES) || (!(fl & STEP_KILLS) && live_next); }

/* The words of one step, [a, e) of saddr/sval, into daddr/dval below word
 * w (returned lowered; a step reads at most 2, a K_EXPR one 3, which are
 * all kept): the caller's rbp word only when that rbp matters (live_next).  Highest first: memo_fill moves words
 * up within the memo's own arrays.  *amax: the highest address kept so far. */
static inline int keep_step_words(uintptr_t *daddr, uintptr_t *dval, int w, const uintptr_t *saddr,
                                  const uintptr_t *sval, int a, int e, uint8_t fl, bool live_next, uintptr_t *amax) {
  int cnt = e - a;
  if ((fl & STEP_LOADS) && cnt == 2 && !live_next) cnt = 1; /* the rbp word is read second */
  for (int i = cnt - 1; i >= 0; i--) {
    __asm__("" : "+r"(i)); /* a word or two: no call to memmove */
    daddr[w - cnt + i] = saddr[a + i];
    dval[w - cnt + i] = sval[a + i];
    *amax = saddr[a + i] > *amax ? saddr[a + i] : *amax;
  }
  return w - cnt;
}

/* Whether the words the memo's walk read from slot j outward still hold
 * their values.  All lie in [rsp[j], amax] (memo_fill, splice), which the
 * caller has checked to be inside the stack. */
static inline bool words_hold(const hc_unwind_memo_way_t *m, int j) {
  int k = MW - m->wtop[j];
  uintptr_t w[4];
  /* Four at a time: the loads run back to back, one test per four. */
  for (; k + 4 <= MW; k += 4) {
    for (int i = 0; i < 4; i++) memcpy(&w[i], (const void *)m->addr[k + i], sizeof w[i]);
    if (((w[0] ^ m->val[k]) | (w[1] ^ m->val[k + 1]) | (w[2] ^ m->val[k + 2]) | (w[3] ^ m->val[k + 3])) != 0)
      return false;
  }
  for (; k < MW; k++) {
    memcpy(&w[0], (const void *)m->addr[k], sizeof w[0]);
    if (w[0] != m->val[k]) return false;
  }
  return true;
}

/* A walk's first frames, kept aside while the memo still holds the last walk. */
#define PRE_FRAMES 24
#define PRE_LOADS 48
typedef struct prefix {
  uintptr_t addr[PRE_LOADS], val[PRE_LOADS];
  uintptr_t pcs[PRE_FRAMES], srsp[PRE_FRAMES], srbp[PRE_FRAMES];
  uint16_t li[PRE_FRAMES];
  uint8_t fl[PRE_FRAMES];
} prefix_t;

/* The words that matter of the prefix's steps c - 1 down to 0 (p, nl words
 * in all) into daddr/dval below word w, outermost first; *live: whether rbp
 * matters past frame c, then at frame 0.  Per frame k, when wk is given:
 * wk[k], where its words start, and lk[k], whether its rbp matters.
 * Returns where the words start. */
static inline int prefix_words(const prefix_t *p, int c, int nl, uintptr_t *daddr, uintptr_t *dval, int w,
                               uintptr_t *amax, bool *live, int *wk, bool *lk) {
  int e = nl;
  for (int k = c - 1; k >= 0; k--) {
    __asm__("" : "+r"(k)); /* a few frames: plain loops, no calls to memcpy */
    int a = p->li[k];
    w = keep_step_words(daddr, dval, w, p->addr, p->val, a, e, p->fl[k], *live, amax);
    e = a;
    *live = rbp_live(p->fl[k], *live);
    if (wk) {
      wk[k] = w;
      lk[k] = *live;
    }
  }
  return w;
}

/* How many words prefix_words keeps of the prefix's steps c - 1 down to 0
 * (nl words logged in all), live: whether rbp matters past frame c.  A
 * step that reads rbp's word after the return address keeps it only where
 * rbp matters, so the count can be well below nl. */
static inline int prefix_kept(const prefix_t *p, int c, int nl, bool live) {
  int e = nl, n = 0;
  for (int k = c - 1; k >= 0; k--) {
    int cnt = e - p->li[k];
    if ((p->fl[k] & STEP_LOADS) && cnt == 2 && !live) cnt = 1;
    n += cnt;
    e = p->li[k];
    live = rbp_live(p->fl[k], live);
  }
  return n;
}

/* Site lookups are asked only while they answer (hc_unwind_memo_t.site_credit):
 * sqlite3's 200 000 captures asked and none was answered (its walks made no
 * site).  An answer saves the fresh steps, the splice and the depot lookup,
 * many times a lookup's cost, so a few answers keep the lookups going. */
#define HC_SITE_CREDIT_MADE 64
#define HC_SITE_CREDIT_HIT 16
#define HC_SITE_CREDIT_MAX 4096
static inline int32_t hci_memo_site_credit(int32_t c, int32_t add) {
  return c + add < HC_SITE_CREDIT_MAX ? c + add : HC_SITE_CREDIT_MAX;
}

/* memo_site.c: site_make keeps the c fresh steps of a walk from r0 that
 * met slot j of m (before splice writes them into m) in a site
 * (hc_unwind_memo_site_t; memo_site.c says why an answer is exact). */
void hci_memo_site_make(hc_unwind_memo_t *mm, hc_unwind_memo_way_t *m, const regs_t *r0, const prefix_t *p, int c,
                        int nl, int j) __attribute__((visibility("hidden")));

#define SF HC_UNWIND_MEMO_SITE_FRAMES
#define SW HC_UNWIND_MEMO_SITE_WORDS

/* The set of a site: its start and the word its first step read (the
 * return address into the caller of malloc's caller, which tells call
 * sites at one depth apart).  A key only: a site is checked whole. */
static inline hc_unwind_memo_site_t *site_set(hc_unwind_memo_t *mm, uintptr_t ra, uintptr_t rsp, uintptr_t w1) {
  uint64_t h = (ra ^ rsp * 0x9e3779b97f4a7c15ull ^ w1 * 0xc4ceb9fe1a85ec53ull) * 0xff51afd7ed558ccdull;
  return &mm->site[(h >> 59) % (HC_UNWIND_MEMO_SITES / 4) * 4];
}

/* A site that answers a capture from r0 (registers at ra's frame) in way m
 * (walk_memo's checks of m done, [lo, hi) the stack), whose first step read
 * w1 at a0: the same start, the same words, its slot still of the same
 * stamp and inside the memo, the words from there outward unchanged, the
 * same depth.  Then the walk is the site's steps followed by the slot's
 * frames (a walk is a function of its registers and the words it reads).
 * Its index, or -1.  In line in its two callers (unwind_dwarf.c): half of
 * python3's captures are answered here, and the call, with its seven
 * arguments and five saved registers, cost about 25 instructions. */
static inline __attribute__((always_inline)) int hci_memo_site_find(hc_unwind_memo_t *mm, hc_unwind_memo_way_t *m,
                                                                    int max, const regs_t *r0, uintptr_t hi,
                                                                    uintptr_t a0, uintptr_t w1) {
  hc_unwind_memo_site_t *set = site_set(mm, r0->rip, r0->rsp, w1);
  for (int k = 0; k < 4; k++) {
    hc_unwind_memo_site_t *s = &set[k];
    int i = SW - s->nw, j = s->at;
    if (s->id == 0 || s->ra != r0->rip || s->rsp0 != r0->rsp || s->a0 != a0 || s->val[i] != w1 ||
        (s->lv0 && s->rbp0 != r0->rbp) || s->amax > hi - sizeof(uintptr_t) || &mm->way[s->way] != m)
      continue;
    /* Every word lies at or above the start and at most at amax. */
    for (i++; i < SW && *(const uintptr_t *)s->addr[i] == s->val[i];) i++;
    if (i < SW || j < MF - m->n || m->ver[j] != s->ver) continue;
    int n = s->c + (MF - j);
    if (m->end == END_MAX && n < max) continue; /* as walk_memo: the memo must hold max frames */
    if ((n < max ? n : max) != s->n || !words_hold(m, j)) continue;
    return (int)(s - mm->site);
  }
  return -1;
}

#endif

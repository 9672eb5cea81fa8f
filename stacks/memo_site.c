/* memo_site.c - sites of the memo, and the depot id of a memoised walk.
 *
 * A capture through the memo (unwind_dwarf.c) that is not its way's last
 * frames takes a few fresh steps from malloc's caller to a slot of the
 * memo, then checks the words from there outward.  python3 allocates from a
 * few hundred callers of one malloc call site in turn under outer frames
 * that stay, so those steps are mostly ones taken before, from the same
 * registers over the same words.  A site (hc_unwind_memo_site_t) keeps
 * them: start registers, the words that matter, the frames, the slot met
 * with its stamp, and the depot id.  A capture that a site answers costs
 * the compare of those words and of the memo's words from the slot outward,
 * and no step, splice, hash or depot lookup.
 *
 * Why an answer is the fresh walk's stack: a walk is a function of its
 * registers and the words it reads (rules depend only on the pc).  From the
 * same start over the same words the site's steps reach the registers they
 * reached when the site was made, which were those of the slot met; the
 * slot's stamp, renewed whenever that slot or one outward of it is written
 * (unwind_dwarf.c), and its place inside the memo say that the slot and the
 * frames outward of it are still the ones the site was made with; the
 * memo's words from the slot outward hold (words_hold), so the walk on from
 * there is the memo's, as in walk_memo.  The frames are then the site's
 * followed by the slot's, whose depot id the site keeps.
 *
 * Invariants: a site's id is written only from the frames of the walk that
 * made it (site_new is cleared at the start of every memo walk); every word
 * a site keeps lies at or above its start and at most at its amax (checked
 * against the stack's end before any is read).
 * Locks: none (the memo is the calling thread's).
 */
#include "unwind_memo.h"

/* Keeps the fresh steps of a walk from r0 that met slot j of m after c
 * steps (p, nl words): the words that matter to where they lead, as splice
 * keeps them (see keep_step_words), in a site of ra's set.  Its id comes
 * with hci_unwind_memo_id.  Not kept: more than SF frames or SW words, or a
 * first step whose CFA comes from rbp (the set's key assumes rsp + d). */
void hci_memo_site_make(hc_unwind_memo_t *mm, hc_unwind_memo_way_t *m, const regs_t *r0, const prefix_t *p, int c,
                        int nl, int j) {
  /* The words kept, not those logged: yosys logged more than SW in 162 000
   * of its 700 000 walks that met the memo (each step read rbp's word as
   * well, which matters nowhere), which then made no site. */
  if (c < 1 || c > SF || j - c < 0 || nl < 1 || prefix_kept(p, c, nl, m->lv[j]) > SW) return;
  /* In the set of the start and the first word read (frame 0's return
   * address): an empty site, else one whose slot has changed since, else
   * one in turn. */
  uintptr_t a0 = p->addr[0], w1 = p->val[0];
  hc_unwind_memo_site_t *set = site_set(mm, r0->rip, r0->rsp, w1), *s = NULL;
  for (int k = 0; k < 4 && !s; k++)
    if (set[k].id == 0) s = &set[k];
  for (int k = 0; k < 4 && !s; k++) {
    const hc_unwind_memo_way_t *o = &mm->way[set[k].way];
    if (set[k].at < MF - o->n || o->ver[set[k].at] != set[k].ver) s = &set[k];
  }
  if (!s) s = &set[mm->site_clock++ & 3];
  /* The words, top-aligned as splice keeps them (see keep_step_words). */
  uintptr_t amax = 0;
  bool live = m->lv[j];
  int w = prefix_words(p, c, nl, s->addr, s->val, SW, &amax, &live, NULL, NULL);
  s->id = 0; /* empty until hci_unwind_memo_id gives it the walk's id */
  s->ra = r0->rip;
  s->rsp0 = r0->rsp;
  s->rbp0 = r0->rbp;
  s->a0 = a0;
  s->lv0 = live;
  s->ver = m->ver[j];
  s->way = (uint8_t)(m - mm->way);
  s->at = (uint8_t)j;
  s->c = (uint8_t)c;
  s->n = 0; /* set by walk_memo's caller: the depth returned */
  s->nw = (uint8_t)(SW - w);
  s->amax = amax;
  for (int k = 0; k < c; k++) {
    __asm__("" : "+r"(k)); /* a few frames: no call to memcpy */
    s->pcs[k] = p->pcs[k];
  }
  mm->site_new = (int)(s - mm->site);
}

uint32_t hci_unwind_memo_id(hc_unwind_memo_t *mm, const uintptr_t *pcs, int n, uint64_t hash) {
  hc_unwind_memo_way_t *w = hci_unwind_memo_cur(mm);
  /* The same frames as the last walk of the way, as many: its id, no lookup. */
  uint32_t id = w->same && w->id && w->idn == n ? w->id : hci_depot_put_hashed(pcs, n, hash);
  w->id = id;
  w->idn = n;
  if (mm->site_new >= 0) {
    hc_unwind_memo_site_t *s = &mm->site[mm->site_new];
    if (s->n == n && id >= 2) { /* unknown (out of memory): the site stays empty */
      s->id = id;
      mm->site_credit = hci_memo_site_credit(mm->site_credit, HC_SITE_CREDIT_MADE);
    }
    mm->site_new = -1;
  }
  return id;
}

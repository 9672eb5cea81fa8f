/* flood_classify.c - after the roots (steps 5-6 of flood.c): "possibly
 * lost" objects, the leaks in scope, and valgrind's direct/indirect
 * classification with the bytes each direct leak owns.
 * Invariants and locks: flood_internal.h; runs with the world stopped.
 */
#include "flood_internal.h"

// ---- classification floods (leaks only: few objects, plain code) ----

/* The mark of the live object v points into (same interior rules as the
 * main flood) and its start/size; NULL for anything else. */
uint8_t *hci_fl_resolve(flood_t *f, uintptr_t v, uintptr_t *start, size_t *size) {
  if (v - f->heap_lo >= f->heap_span) return NULL;
  hci_heap_slot_t o;
  if (!hci_heap_locate(v, &o)) return NULL;
  uint8_t *mk = span_marks(f, o.span);
  if (!mk || !hci_heap_slot_live(&o)) return NULL;
  *size = hci_heap_slot_size(&o);
  *start = o.start;
  uintptr_t inner = v - o.start;
  if (inner && (inner >= *size || inner > f->maxoff)) return NULL;
  return &mk[o.index];
}

/* The leak starting at addr (leaks sorted by address), or NULL. */
hci_leak_t *hci_fl_find_leak(flood_t *f, uintptr_t addr) {
  hci_leak_t *v = f->r->leaks;
  size_t lo = 0, hi = f->r->nleaks;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (v[mid].addr < addr) lo = mid + 1;
    else hi = mid;
  }
  return lo < f->r->nleaks && v[lo].addr == addr ? &v[lo] : NULL;
}

/* Classification flood from the current leader (valgrind's "clique"): a leak
 * reached for the first time becomes indirect and the leader owns it; an
 * earlier leader reached becomes indirect too, and what it owned moves to
 * this one (its objects are not scanned again).  Words are read at their
 * address + delta. */
void hci_fl_scan_leaks(flood_t *f, uintptr_t lo, uintptr_t hi, uintptr_t delta) {
  if (f->covered_mode == 2) {
    hci_fl_scan_edges(f, lo, hi, delta);
    return;
  }
  uintptr_t a = (uintptr_t)f->p->align;
  hci_leak_t *leader = f->leader;
  for (uintptr_t q = (lo + a - 1) & ~(a - 1); q + sizeof(uintptr_t) <= hi; q += a) {
    uintptr_t v, start;
    size_t size;
    memcpy(&v, (const void *)(q + delta), sizeof v);
    uint8_t *mk = hci_fl_resolve(f, v, &start, &size);
    if (!mk || !(*mk & M_LEAK) || start == leader->addr) continue;
    if (!(*mk & M_COVERED)) {
      *mk |= M_COVERED | M_INDIRECT;
      leader->owned_bytes += size;
      leader->owned_objects++;
      push_obj(f, start, size);
    } else if (!(*mk & M_INDIRECT)) {
      *mk |= M_INDIRECT;
      hci_leak_t *old = hci_fl_find_leak(f, start);
      if (old) {
        leader->owned_bytes += old->size + old->owned_bytes;
        leader->owned_objects += 1 + old->owned_objects;
        old->owned_bytes = old->owned_objects = 0;
      }
    }
  }
}

// ---- possibly lost ----

static bool in_scope(const flood_t *f, uint16_t epoch);

/* After every root: objects still pending were reached only through
 * interior pointers.  They and everything they reach (not already live) are
 * "possibly lost" (valgrind's term): alive for the verdict, counted apart. */
static void possible_root(flood_t *f, uint8_t *m, const hci_heap_slot_t *o, const hc_objmeta_t *rec) {
  (void)rec;
  if (*m != M_PENDING) return;
  *m = M_LIVE | M_POSSIBLE;
  push_obj(f, o->start, hci_heap_slot_size(o));
  hci_fl_drain(f);
}

static void count_possible(flood_t *f, uint8_t *m, const hci_heap_slot_t *o, const hc_objmeta_t *rec) {
  if (!(*m & M_POSSIBLE) || !in_scope(f, rec->epoch)) return;
  f->r->possible_objects++;
  f->r->possible_bytes += hci_heap_slot_size(o);
  hci_fl_add_possible(f, o->start, hci_heap_slot_size(o), rec->stack_id);
}

void hci_fl_flood_possible(flood_t *f) {
  if (!f->npending) return;
  f->live_mark = M_LIVE | M_POSSIBLE;
  for_each_slot(f, possible_root);
  f->live_mark = M_LIVE;
  for_each_slot(f, count_possible); /* the ones in the check's scope */
}

// ---- classification ----

static bool in_scope(const flood_t *f, uint16_t epoch) {
  return f->p->report_all || (uint16_t)(epoch - f->p->base_epoch) < 0x8000u;
}

/* Every object still unmarked is unreachable (free ones were marked by
 * push_extra_roots): a leak when in scope. */
static void collect_leak(flood_t *f, uint8_t *m, const hci_heap_slot_t *o, const hc_objmeta_t *rec) {
  if (!in_scope(f, rec->epoch)) *m = M_OLD;
  else if (hci_fl_add_leak(f, o->start, hci_heap_slot_size(o), rec->stack_id)) *m = M_LEAK;
}

void hci_fl_collect_leaks(flood_t *f) { for_each_unmarked(f, collect_leak); }

static uint8_t *leak_mark(flood_t *f, const hci_leak_t *l) {
  uintptr_t start;
  size_t size;
  return hci_fl_resolve(f, l->addr, &start, &size);
}

static int cmp_leak_addr(const void *a, const void *b) {
  const hci_leak_t *x = a, *y = b;
  return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* One leak per leaked structure is direct: the lowest-addressed member of
 * each strongly connected component of the leak graph that no other leak
 * points to (flood_scc.c).  Those lead, in address order, a flood over the
 * leaks they reach, which become indirect and owned by the first leader
 * that reaches them (valgrind's "clique" attribution of shared parts).
 * valgrind picks its leaders by address alone (every leak not yet reached
 * from an earlier one), which agrees only while later objects lie at higher
 * addresses: heapcheck's spans hand them out downwards, and two cycles, one
 * pointing into the other, came out as two direct leaks (valgrind's
 * leak-cycle test).  Without memory for the graph, the second pass alone is
 * valgrind's rule: an earlier leader reached becomes indirect too. */
void hci_fl_classify(flood_t *f) {
  hci_flood_result_t *r = f->r;
  hci_sort(r->leaks, r->nleaks, sizeof *r->leaks, cmp_leak_addr);
  size_t lead_map = 0;
  uint8_t *lead = r->nleaks > 1 ? hci_fl_structure_leaders(f, &lead_map) : NULL;
  f->covered_mode = 1;
  for (int pass = lead ? 0 : 1; pass < 2; pass++) {
    for (size_t i = 0; i < r->nleaks; i++) {
      if (pass == 0 && !lead[i]) continue;
      uint8_t *mk = leak_mark(f, &r->leaks[i]);
      if (!mk || (*mk & M_COVERED)) continue;
      *mk |= M_COVERED;
      f->leader = &r->leaks[i];
      push_obj(f, r->leaks[i].addr, r->leaks[i].size);
      hci_fl_drain(f);
    }
  }
  f->covered_mode = 0;
  if (lead) hci_os_unmap(lead, lead_map);
  for (size_t i = 0; i < r->nleaks; i++) {
    uint8_t *mk = leak_mark(f, &r->leaks[i]);
    r->leaks[i].kind = mk && (*mk & M_INDIRECT) ? HCI_LEAK_INDIRECT : HCI_LEAK_DIRECT;
    if (r->leaks[i].kind == HCI_LEAK_INDIRECT) r->leaks[i].owned_bytes = r->leaks[i].owned_objects = 0;
    r->leaked_bytes += r->leaks[i].size;
  }
}


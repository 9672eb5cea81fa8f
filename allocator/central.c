/* central.c - per-class central free lists with a transfer cache.
 *
 * Thread caches hand over whole lists (chains with a known tail and
 * length), kept whole in a transfer slot: O(1) both ways, which is what
 * makes one thread freeing what another allocates cheap.  When the slots
 * are full, or when no thread on the freeing CPU refills the class lately
 * (the chain would be taken on another CPU: refilled_on), objects go back
 * to their spans; a span whose objects are all free is kept to be carved
 * again (up to HC_CENTRAL_EMPTY_BYTES a class) or returns to the page heap.
 * Refills that find no chain take up to a batch from the spans, an empty
 * one first.  Spans are carved lazily, so a new span touches only the memory it
 * hands out; a new span's first objects are carved before it is published,
 * without the lock, as many as the refilling cache can hold (at most the
 * span).
 *
 * Lock: central[c].lock.  The page heap is never called with it held
 * (populating and returning spans happen after unlocking), so centrals and
 * the page heap never nest. */
#include "free_list.h"
#include "hc_internal.h"

hc_central_t hci_central[HC_NUM_CLASSES] = {[0 ... HC_NUM_CLASSES - 1] = {.lock = HCI_LOCK_INIT(HC_RANK_CENTRAL)}};
HC_PRIVATE_STATE(hci_central); /* free objects and spans only: not a root */
hc_chain_t hci_transfer_slots[HC_NUM_CLASSES][HC_TRANSFER_SLOTS];
HC_PRIVATE_STATE(hci_transfer_slots);
uint16_t hci_transfer_cpu[HC_NUM_CLASSES][HC_TRANSFER_SLOTS];

/* Bytes held in transfer slots, all classes together: bounded so that freed
 * memory gets back to spans (and from there to the page heap and the OS)
 * instead of piling up in chains nobody asks for. */
static _Atomic size_t slot_bytes_total;


/* The sentinels are zero until first use (no init run is needed before the
 * first malloc). */
static void span_list_init(hc_span_t *h) {
  if (!h->next) hci_span_list_init(h);
}

/* True when span s of a remote class (remote.c) is another live cache's:
 * a refill passes it by, so that a thread's objects of these classes
 * come from spans of its own and never share a cache line with another
 * thread's (the reason these classes have owners). */
static bool owned_by_other(const hc_span_t *s, const void *owner) {
  const hc_tcache_t *o = s->owner;
  return o && o != owner && !atomic_load_explicit(&o->remote.dead, memory_order_relaxed);
}

/* Links up to n objects of s not carved yet (from its `carved` on) onto
 * the chain *head (*tail: its last object); returns how many.  Carved
 * objects are free objects: linked and marked.  They are linked from the
 * last down, so that the chain hands them out in address order: a program
 * that reads what it allocated in the order it allocated it (python's
 * json.dumps joining the strings it built) then walks memory upward,
 * the direction the L1 next-line prefetcher follows; linked upward, the
 * chain handed out the highest address first (docs/performance.md,
 * "Session 22 (lead)").  The caller adds the count to s->carved and
 * s->allocated under the lock, so the counters stay consistent for
 * readers that hold every lock (VerifyAllMemory) even while a new span is
 * carved without it. */
static void open_pages(hc_span_t *s, const hc_class_info_t *ci, uint32_t end);

static uint32_t carve(hc_span_t *s, const hc_class_info_t *ci, uint32_t n, void **head, void **tail) {
  uint32_t first = s->carved, left = ci->objs - first, got = n < left ? n : left;
  for (uint32_t i = first + got; i-- > first;) { /* first in a register: the links' stores may alias s */
    void *p = (void *)(s->start + (uintptr_t)i * ci->size);
    hc_fl_link(p, *head);
    if (!*head) *tail = p;
    *head = p;
  }
  if (first + got > s->opened) open_pages(s, ci, first + got);
  return got;
}

/* Objects up to end (exclusive) of s are carved, past s->opened, the most
 * ever carved in its SMALL life: the pages they start in are opened to the
 * free fast path (hci_pagemap_open; the span's first page is open from the
 * start), and when the last of them is newly open, the objects after them
 * that start in it get the free mark (hc_fl_mark_unused).  So every object
 * of an open page is carved or marked, and a free of one never handed out
 * (free(p + 4096)) reaches the slow path, which reports it (alloc.c,
 * free_small): pushed, it would have been handed out twice, from the list
 * and again when carved.  A page stays open while the span is SMALL: an
 * empty span carved again from its start keeps its free objects' marks,
 * and costs nothing here until it passes its old frontier (its carving
 * under the central lock had marked the rest of its page every time:
 * prodcons +10 %).  A page never written stays closed. */
static void open_pages(hc_span_t *s, const hc_class_info_t *ci, uint32_t end) {
  uint32_t was = s->opened;
  uintptr_t last = s->start + (uintptr_t)(end - 1) * ci->size;
  uintptr_t hi = last >> HC_PAGE_SHIFT; /* the last page carving reached */
  /* the first page not open yet: after the last object opened, or the
   * span's first page (open from the start) */
  uintptr_t lo = ((s->start + (uintptr_t)(was ? was - 1 : 0) * ci->size) >> HC_PAGE_SHIFT) + 1;
  if (hi >= lo) hci_pagemap_open(s, lo, hi + 1);
  if (hi >= lo || !was) { /* a newly open last page: its objects after the carved ones marked */
    uintptr_t page_end = (hi + 1) << HC_PAGE_SHIFT, stop = s->start + (uintptr_t)ci->objs * ci->size;
    for (uintptr_t a = last + ci->size; a < page_end && a < stop; a += ci->size) hc_fl_mark_unused((void *)a);
  }
  /* After the pages: a VerifyAllMemory beside a new span's carving (no
   * lock held here) finds every page up to `opened` open. */
  __atomic_store_n(&s->opened, end, __ATOMIC_RELEASE);
}

/* The empty spans class cls keeps on its list: HC_CENTRAL_EMPTY_BYTES of
 * them, at least one (a program cycling through a class would otherwise
 * give a span back and take a new one over and over). */
static uint32_t empty_max(unsigned cls) {
  size_t n = HC_CENTRAL_EMPTY_BYTES / ((size_t)hci_classes[cls].pages << HC_PAGE_SHIFT);
  return n ? (uint32_t)n : 1;
}

/* requires: lock.  Takes up to n objects out of spans into *out; the
 * spans they come from become owner's (remote.c).  With an owner, a span
 * of a remote class that another live cache owns is passed by (up to a
 * few: then taken anyway, the list is not walked whole).  An empty span
 * (every object free; they wait at the list's tail, c->nempty of them)
 * comes first and is carved again from its start: its free list is
 * dropped unread.  Its objects' links were written by the threads that
 * freed them, often on another CPU, and taking them one by one is a chain
 * of dependent loads of lines that CPU wrote last, where carving only
 * writes (docs/performance.md, "Chains back into spans").  From an empty
 * span, up to `fresh` objects (at most the span): a cache with room for
 * more takes a span in one lock, as from a new span. */
static void take_from_spans(hc_central_t *c, unsigned cls, uint32_t n, uint32_t fresh, hc_chain_t *out,
                            void *owner) {
  const hc_class_info_t *ci = &hci_classes[cls];
  bool owned = ci->size <= HC_REMOTE_SIZE_MAX;
  int skips = owned && owner ? 8 : 0;
  void *head = NULL, *tail = NULL;
  uint32_t got = 0;
  if (c->nempty) { /* the last empty span to the head, to be taken first */
    hc_span_t *e = c->spans.prev;
    hci_span_list_remove(e);
    hci_span_list_push(&c->spans, e);
  }
  for (hc_span_t *s = c->spans.next, *next; got < n && s != &c->spans; s = next) {
    next = s->next;
    if (skips > 0 && owned_by_other(s, owner)) {
      skips--;
      continue;
    }
    if (s->allocated == 0) { /* empty: carved again, its free list not read */
      c->nempty--;
      s->freelist = NULL;
      s->carved = 0;
      uint32_t whole = fresh < ci->objs ? fresh : ci->objs;
      if (got == 0 && whole > n) n = whole;
      if (s != c->spans.next) { /* partly used from now on: among the partial spans, at the head */
        hci_span_list_remove(s);
        hci_span_list_push(&c->spans, s);
      }
    }
    if (owned && s->owner != owner) {
      __atomic_store_n(&s->owner, owner, __ATOMIC_RELAXED); /* free_small reads it without the lock */
      hci_pagemap_set_owner(s, owner);
    }
    if (got < n && s->freelist) {
      /* A run of the span's free list taken as it is: its objects are
       * linked and marked already, so only the run's last link is
       * written (to the chain so far); each link is checked as it is
       * followed, as before. */
      void *first = s->freelist, *last = first, *rest = hc_fl_next(first, 0);
      uint32_t k = 1;
      for (; k < n - got && rest; k++) {
        last = rest;
        rest = hc_fl_next(rest, 0);
      }
      s->freelist = rest;
      hc_fl_link(last, head);
      if (!head) tail = last;
      head = first;
      s->allocated += k;
      got += k;
    }
    uint32_t k = carve(s, ci, n - got, &head, &tail);
    s->carved += k;
    s->allocated += k;
    got += k;
    if (!s->freelist && s->carved == ci->objs) hci_span_list_remove(s); /* full */
  }
  c->free_objs -= got;
  out->head = head;
  out->tail = tail;
  out->n = got;
}

/* Gets a new span for cls from the page heap.  requires: no central lock. */
static hc_span_t *new_span(unsigned cls) {
  const hc_class_info_t *ci = &hci_classes[cls];
  hci_fl_ensure(); /* the key exists before the first object is linked */
  hc_objmeta_t *records = NULL;
  if (hci_record_all && !(records = hci_meta_alloc(ci->objs * sizeof(hc_objmeta_t)))) return NULL;
  hc_span_t *s = hci_ph_alloc_small(ci->pages, cls, records);
  if (!s && records) hci_meta_free(records, ci->objs * sizeof(hc_objmeta_t));
  return s;
}

/* The records leave the span before they are freed.  A leak check may stop
 * this thread at any instruction (no lock is held here) and reads the span's
 * records through s->objmeta; a freed bin block's first word is the bin's
 * link, so between hci_meta_free and the store of NULL record 0 read as a
 * live object with a pointer's low half for stack id: a leak of the class's
 * size, "allocation stack unknown" (test_fork_signals_exit_normal, once in
 * ~600 runs; tests/test_span_records.c steps through it).  Without records
 * the span has no slots for the checker (hci_heap_span_slots).  The signal
 * fence keeps the compiler from sinking the store past the free: a stopped
 * thread is seen as a signal handler would see it. */
static void free_span(hc_span_t *s) {
  hc_objmeta_t *records = s->objmeta;
  if (records) {
    hci_alloc_clear_span(s); /* checker mode (records): hc_internal.h says why */
    __atomic_store_n(&s->objmeta, NULL, __ATOMIC_RELAXED);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    hci_meta_free(records, hci_classes[s->cls].objs * sizeof(hc_objmeta_t));
  }
  hci_ph_free_small(s);
}

/* A list of emptied spans (linked through next, gathered under the central
 * lock) back to the page heap, after the lock is dropped. */
static void free_spans(hc_span_t *list) {
  while (list) {
    hc_span_t *next = list->next;
    list->next = NULL;
    free_span(list);
    list = next;
  }
}

/* requires: lock, c->nchains > 0.  The slot a refill takes: the newest
 * chain handed over on the CPU the refill runs on, else the oldest one.
 * The refilling thread pops each object of the chain, reading its link
 * from a line the freeing thread wrote last: when that thread ran on
 * another CPU, every pop waits for the line to come over, one dependent
 * load after another.  Between threads that allocate what other threads
 * free (xmalloc: two allocating and two freeing threads on two cores)
 * that wait was 55 % of the run; a chain freed on the same CPU is in
 * this core's cache, and the oldest chain of another CPU has had the
 * longest time to leave that core's caches (docs/performance.md, "Chains
 * by CPU (xmalloc, session 11)").  A single thread finds its own newest
 * chain, as before; without the CPU (no rseq area) the newest is taken. */
/* The CPU a chain is handed over or taken on, for the two choices above
 * and below; 0 (not known: the newest chain, always into the slots) while
 * one thread cache is live.  A single thread has no other CPU's cache to
 * spare, and by its CPU, which the scheduler changes under it, the same
 * program sent chains back into their spans at different points from run
 * to run: their emptied spans went back to the page heap at different
 * times, and malloc_large's peak RSS (its 64-256 KiB blocks, one object a
 * span) read 159-180 MB over runs of one sampling seed (docs/performance.md,
 * "Memory, eighth pass").  Refills are still noted by CPU: a second
 * thread finds the classes' CPUs known. */
static unsigned chain_cpu(void) { return hci_tc_count() < 2 ? 0 : hci_os_cpu(); }

static uint32_t pick_slot(const hc_central_t *c, const uint16_t *cpus) {
  unsigned cpu = chain_cpu();
  if (!cpu) return c->nchains - 1;
  for (uint32_t j = c->nchains; j-- > 0;)
    if (cpus[j] == cpu) return j;
  return 0;
}

/* requires: lock.  Counts a refill of class c on this CPU (refill_cpus). */
static void note_refill(hc_central_t *c) {
  unsigned cpu = hci_os_cpu();
  if (!cpu) return;
  if ((++c->refills & 15) == 0) {
    c->refill_cpus[1] = c->refill_cpus[0];
    c->refill_cpus[0] = 0;
  }
  c->refill_cpus[0] |= (uint64_t)1 << (cpu % 64);
}

/* requires: lock.  True when a thread on cpu refilled class c lately (the
 * last 16 to 32 refills of the class), or the CPU is not known.  A chain
 * handed over on a CPU where nobody refills the class is taken by a thread
 * on another CPU, which would pop each object's link from a line this
 * CPU wrote last: a dependent miss per object, and the chain's order,
 * cut at other places at every trip, scatters until no prefetcher
 * follows it (xmalloc with the allocating and the freeing threads on
 * different CPUs: the pop was 85 % of malloc's time).  Such a chain goes
 * back into its spans instead, in runs, and a span that empties is carved
 * again in address order (docs/performance.md, "Chains back into spans"). */
static bool refilled_on(const hc_central_t *c, unsigned cpu) {
  return !cpu || ((c->refill_cpus[0] | c->refill_cpus[1]) >> (cpu % 64) & 1);
}

bool hci_central_remove(unsigned cls, uint32_t want, hc_chain_t *out, void *owner) {
  return hci_central_remove_fresh(cls, want, want, out, owner);
}

bool hci_central_remove_fresh(unsigned cls, uint32_t want, uint32_t fresh, hc_chain_t *out, void *owner) {
  hc_central_t *c = &hci_central[cls];
  const hc_class_info_t *ci = &hci_classes[cls];
  hci_lock(&c->lock);
  span_list_init(&c->spans);
  note_refill(c);
  if (c->nchains) {
    hc_chain_t *slots = hci_transfer_slots[cls];
    uint16_t *cpus = hci_transfer_cpu[cls];
    uint32_t i = pick_slot(c, cpus);
    *out = slots[i];
    c->nchains--;
    /* Moved down one by one, not by memmove: libc's would leave the
     * chains' heads in its vector registers (gpr_only_args, meson.build);
     * the asm keeps gcc from making the loop a memmove call again. */
    for (uint32_t k = i; k < c->nchains; k++) {
      slots[k] = slots[k + 1];
      cpus[k] = cpus[k + 1];
      __asm__("" ::: "memory");
    }
    c->slot_objs -= out->n;
    atomic_fetch_sub_explicit(&slot_bytes_total, (size_t)out->n * hci_classes[cls].size,
                              memory_order_relaxed);
    hci_unlock(&c->lock);
    return true;
  }
  take_from_spans(c, cls, want, fresh, out, owner);
  hci_unlock(&c->lock);
  if (out->n) return true;
  /* A new span: no other thread takes objects from it before it is on the
   * list (readers holding every lock see it with nothing carved: the
   * counters are set under the lock), so the refill's objects are carved
   * first, without the lock.  Carving is the first
   * touch of fresh memory (a page fault per 4 KiB, a line fetched per
   * object); under the lock it stalled every thread freeing or refilling
   * the class (xmalloc: "Fresh spans carved outside the lock",
   * docs/performance.md).  A caller that can hold more than `want` (fresh)
   * gets up to the whole span, in one lock instead of one per batch. */
  hc_span_t *s = new_span(cls);
  if (!s) return false;
  if (ci->size <= HC_REMOTE_SIZE_MAX && owner) { /* remote.c; as take_from_spans, before publication */
    __atomic_store_n(&s->owner, owner, __ATOMIC_RELAXED);
    hci_pagemap_set_owner(s, owner);
  }
  void *head = NULL, *tail = NULL;
  uint32_t got = carve(s, ci, fresh > want ? fresh : want, &head, &tail);
  hci_lock(&c->lock);
  s->carved = s->allocated = got;
  if (got < ci->objs) hci_span_list_push(&c->spans, s); /* full spans are on no list */
  c->nspans++;
  c->span_allocs++;
  c->free_objs += ci->objs - got;
  hci_unlock(&c->lock);
  out->head = head;
  out->tail = tail;
  out->n = got;
  return got != 0;
}

/* Objects of a chain back into their spans; emptied spans beyond the
 * ones the class keeps go to the page heap.  A run of the chain's objects
 * that lie in one span goes back in one step (its last object linked to
 * the span's free list): the runs are found outside the lock, walking
 * links this thread wrote when it freed them, so the lock is held per run
 * instead of per object.  A chain in allocation order (xmalloc's, when
 * spans are carved again) is a few runs of a span each. */
static inline uintptr_t hc_rotr4(uintptr_t d) { return d >> 4 | d << (sizeof d * 8 - 4); }

static void return_chain(unsigned cls, void *head) {
  enum { RUNS = 32 };
  struct run {
    hc_span_t *s;
    void *head, *tail;
    uint32_t n;
  } runs[RUNS];
  hc_central_t *c = &hci_central[cls];
  const hc_class_info_t *ci = &hci_classes[cls];
  uintptr_t span_bytes = (uintptr_t)ci->objs * ci->size;
  while (head) {
    unsigned nr = 0;
    for (; head && nr < RUNS; nr++) { /* our objects' spans stay as they are: start is read unlocked */
      struct run *r = &runs[nr];
      r->s = hci_pagemap_span((uintptr_t)head);
      r->head = r->tail = head;
      r->n = 1;
      /* A link to an object start of the same span (16-byte aligned: the
       * rotation puts any of the low 4 bits at the top) is one the check
       * would pass: followed with this one test.  Any other value ends
       * the run and is checked there (hc_fl_checked), so exactly the
       * links hc_fl_next accepts are accepted (2 instructions less a
       * link). */
      uintptr_t lo = r->s ? r->s->start : 0, nx = hc_fl_word(head);
      while (r->s && hc_rotr4(nx - lo) < span_bytes >> 4) {
        r->tail = (void *)nx;
        r->n++;
        nx = hc_fl_word((void *)nx);
      }
      head = hc_fl_checked(r->tail, nx, 0);
    }
    hc_span_t *empty = NULL;
    hci_lock(&c->lock);
    span_list_init(&c->spans);
    for (unsigned i = 0; i < nr; i++) {
      hc_span_t *s = runs[i].s;
      HC_CHECK(s && s->state == HC_SPAN_SMALL && s->cls == cls && s->allocated >= runs[i].n,
               "free(): double free or corruption of %p (span accounting)", runs[i].head);
      bool was_full = !s->freelist && s->carved == ci->objs;
      hc_fl_link(runs[i].tail, s->freelist);
      s->freelist = runs[i].head;
      s->allocated -= runs[i].n;
      c->free_objs += runs[i].n;
      if (s->allocated == 0) {
        if (!was_full) hci_span_list_remove(s);
        if (c->nempty < empty_max(cls)) { /* kept, at the tail: take_from_spans carves it again */
          c->nempty++;
          hci_span_list_push(c->spans.prev, s);
          continue;
        }
        c->free_objs -= ci->objs;
        c->nspans--;
        s->next = empty; /* reuse the link: the span is off every list now */
        empty = s;
      } else if (was_full) {
        hci_span_list_push(&c->spans, s);
      }
    }
    hci_unlock(&c->lock);
    free_spans(empty);
  }
}

bool hci_central_regrow(hc_span_t *s, unsigned from, unsigned to) {
  if (!hci_ph_grow_class(s, hci_classes[to].pages, to)) return false;
  /* A full span is on no list: only the counts move (statistics). */
  hci_lock(&hci_central[from].lock);
  hci_central[from].nspans--;
  hci_unlock(&hci_central[from].lock);
  hci_lock(&hci_central[to].lock);
  hci_central[to].nspans++;
  hci_unlock(&hci_central[to].lock);
  return true;
}

void hci_central_insert(unsigned cls, const hc_chain_t *chain) {
  if (!chain->n) return;
  hc_central_t *c = &hci_central[cls];
  size_t bytes = (size_t)chain->n * hci_classes[cls].size;
  unsigned cpu = chain_cpu();
  hci_lock(&c->lock);
  if (refilled_on(c, cpu) && c->nchains < HC_TRANSFER_SLOTS &&
      c->slot_objs * hci_classes[cls].size + bytes <= HC_SLOT_BYTES_CLASS_MAX &&
      atomic_load_explicit(&slot_bytes_total, memory_order_relaxed) + bytes <= HC_SLOT_BYTES_TOTAL_MAX) {
    hci_transfer_cpu[cls][c->nchains] = (uint16_t)cpu;
    hci_transfer_slots[cls][c->nchains++] = *chain;
    c->slot_objs += chain->n;
    atomic_fetch_add_explicit(&slot_bytes_total, bytes, memory_order_relaxed);
    hci_unlock(&c->lock);
    return;
  }
  hci_unlock(&c->lock);
  return_chain(cls, chain->head);
}

size_t hci_central_slot_bytes(void) { return atomic_load_explicit(&slot_bytes_total, memory_order_relaxed); }

size_t hci_central_free_objects(unsigned cls) {
  hc_central_t *c = &hci_central[cls];
  return c->free_objs + c->slot_objs;
}

void hci_central_drain(void) {
  for (unsigned cls = 1; cls < HC_NUM_CLASSES; cls++) {
    hc_central_t *c = &hci_central[cls];
    for (;;) {
      hci_lock(&c->lock);
      hc_chain_t ch = {NULL, NULL, 0};
      if (c->nchains) {
        ch = hci_transfer_slots[cls][--c->nchains];
        c->slot_objs -= ch.n;
        atomic_fetch_sub_explicit(&slot_bytes_total, (size_t)ch.n * hci_classes[cls].size,
                                  memory_order_relaxed);
      }
      hci_unlock(&c->lock);
      if (!ch.n) break;
      return_chain(cls, ch.head);
    }
    /* and the kept empty spans */
    hc_span_t *empty = NULL;
    hci_lock(&c->lock);
    span_list_init(&c->spans);
    for (hc_span_t *sp = c->spans.next; sp != &c->spans;) {
      hc_span_t *next = sp->next;
      if (sp->allocated == 0) {
        hci_span_list_remove(sp);
        c->free_objs -= hci_classes[cls].objs;
        c->nspans--;
        sp->next = empty;
        empty = sp;
      }
      sp = next;
    }
    c->nempty = 0;
    hci_unlock(&c->lock);
    free_spans(empty);
  }
}

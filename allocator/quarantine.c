/* quarantine.c - checker mode's quarantine: freed blocks held back from
 * reuse, oldest given out again first.
 *
 * Why: a conservative leak check cannot tell a stale pointer from a live
 * one.  A program that keeps the address of a block it freed (tcc keeps one
 * in a global) hides the leak of whatever the allocator puts at that
 * address next; with immediate reuse that is the very next allocation of
 * the size.  valgrind keeps freed blocks out of circulation for 20 MB of
 * frees (--freelist-vol), ASan has a quarantine: their leak totals count
 * such a block, and ours must too (docs/design.md, "Checker mode's
 * quarantine").  Only in checker mode (hci_quarantine_budget > 0, set by the
 * checker's start-up with the records); the plain allocator never comes here.
 *
 * Shape (ASan's): each thread fills a batch of its own (hc_qbatch_t, an
 * array of block pointers in the metadata arena, no lock) and hands full
 * ones (HC_QUARANTINE_BATCH bytes, or an eighth of a smaller budget, or
 * HC_QBATCH_SLOTS blocks) to the global FIFO of batches under the
 * quarantine lock; then the oldest batches beyond the budget leave it whole
 * and the caller frees their blocks for real (alloc.c) after the lock is
 * dropped, and gives the arrays back for reuse.  Pointers, not links
 * through the blocks: a walk of links read every block once more, 20 MB
 * after its free, a cache miss each in a chain that cannot overlap (41 % of
 * checker_bench's time); freeing a block from an array only writes it.
 * Blocks over HC_QUARANTINE_BIG get a batch of their own at the FIFO's head,
 * so they leave first (valgrind's --freelist-big-blocks): a program cycling
 * big buffers does not flush every small block out at each free.
 *
 * The lock is only ever tried on the free path: a thread that finds it busy
 * keeps its full batches (pending) and tries again at its next full batch.
 * A signal handler's free on a thread already inside the quarantine (`busy`)
 * is not quarantined (freed at once, as with HEAPCHECK_QUARANTINE=0): the
 * thread's batch is never seen half-written, and no free waits for a lock
 * its own thread holds.
 *
 * A block in the quarantine is free for everyone else: its record says
 * stack_id 0 (small) or its span is HC_SPAN_STASHED (large), so a second
 * free or a realloc of it is still caught, the checker neither scans nor
 * reports it, and the heap view does not find it.  Its memory was cleared
 * at the free and is not written here.  Sizes counted are the memory held
 * (class size, span pages).  When a batch array cannot be had (the metadata
 * arena's mapping refused), the block is freed at once.
 * Locks: the quarantine lock (rank HC_RANK_QUARANTINE), held only to move
 * batches; nothing else is taken while it is held. */
#include "hc_internal.h"

size_t hci_quarantine_budget; /* 0: off */
static size_t batch_max;      /* a thread's batch goes to the FIFO from this size */

static struct {
  hci_lock_t lock;
  hc_qbatch_t *head, *tail; /* oldest first */
  size_t bytes;             /* memory held */
  size_t large_bytes;       /* of it, in large blocks (stats) */
  hc_qbatch_t *spare;       /* emptied arrays, for the next batches */
} fifo = {.lock = HCI_LOCK_INIT(HC_RANK_QUARANTINE)};
HC_PRIVATE_STATE(fifo); /* metadata pointers: never a root */

void hci_quarantine_set(size_t budget) {
  hci_quarantine_budget = budget;
  size_t b = budget / 8;
  batch_max = b < HC_QUARANTINE_BATCH ? b : HC_QUARANTINE_BATCH;
}

void hci_quarantine_locks(hci_lock_fn *each) { each(&fifo.lock); }

/* An empty batch: a spare one when the lock is free, else a new one. */
static hc_qbatch_t *new_batch(void) {
  hc_qbatch_t *b = NULL;
  if (hci_trylock(&fifo.lock)) {
    b = fifo.spare;
    if (b) fifo.spare = b->next;
    hci_unlock(&fifo.lock);
  }
  if (!b) b = hci_meta_alloc(sizeof *b);
  if (b) {
    b->next = NULL;
    b->n = 0;
    b->bytes = b->large_bytes = 0;
  }
  return b;
}

/* requires: the lock.  b (and those linked after it) to the FIFO's tail. */
static void append(hc_qbatch_t *b) {
  for (; b; b = b->next) {
    fifo.bytes += b->bytes;
    fifo.large_bytes += b->large_bytes;
    if (fifo.tail) fifo.tail->next = b;
    else fifo.head = b;
    fifo.tail = b;
  }
}

/* requires: the lock.  Takes the oldest batches off the FIFO until it holds
 * at most `keep` bytes; returns them, oldest first. */
static hc_qbatch_t *cut_to(size_t keep) {
  hc_qbatch_t *out = fifo.head, *last = NULL;
  while (fifo.bytes > keep && fifo.head) {
    last = fifo.head;
    fifo.head = last->next;
    fifo.bytes -= last->bytes;
    fifo.large_bytes -= last->large_bytes;
  }
  if (!last) return NULL;
  last->next = NULL;
  if (!fifo.head) fifo.tail = NULL;
  return out;
}

/* requires: the lock.  The thread's pending batches to the FIFO. */
static void take_pending(hc_tc_quar_t *q) {
  append(q->pending);
  q->pending = q->pending_tail = NULL;
}

/* requires: the lock.  The thread's pending batches to the FIFO, and the
 * oldest batches that push past the budget off it (cut_to). */
static hc_qbatch_t *settle_pending(hc_tc_quar_t *q) {
  take_pending(q);
  return cut_to(hci_quarantine_budget);
}

static void add_pending(hc_tc_quar_t *q, hc_qbatch_t *b) {
  b->next = NULL;
  if (q->pending_tail) q->pending_tail->next = b;
  else q->pending = b;
  q->pending_tail = b;
}

bool hci_quarantine_put(hc_tcache_t *tc, void *p, size_t bytes, bool large, hc_qbatch_t **out) {
  hc_tc_quar_t *q = hci_tc_quar(tc);
  *out = NULL;
  if (q->busy) return false; /* a signal handler's free inside ours */
  q->busy = 1;
  __asm__ volatile("" ::: "memory");
  bool kept = true;
  if (bytes > HC_QUARANTINE_BIG) {
    hc_qbatch_t *b = new_batch();
    if (!b) {
      kept = false;
    } else {
      b->p[0] = p;
      b->n = 1;
      b->bytes = b->large_bytes = bytes;
      if (hci_trylock(&fifo.lock)) { /* to the head: the first to leave */
        b->next = fifo.head;
        fifo.head = b;
        if (!fifo.tail) fifo.tail = b;
        fifo.bytes += bytes;
        fifo.large_bytes += bytes;
        *out = settle_pending(q);
        hci_unlock(&fifo.lock);
      } else {
        add_pending(q, b);
      }
    }
  } else {
    hc_qbatch_t *b = q->cur;
    if (!b && (b = q->cur = new_batch()) == NULL) {
      kept = false;
    } else {
      b->p[b->n++] = p;
      b->bytes += bytes;
      if (large) b->large_bytes += bytes;
      if (b->bytes >= batch_max || b->n == HC_QBATCH_SLOTS) {
        q->cur = NULL;
        add_pending(q, b);
        if (hci_trylock(&fifo.lock)) { /* busy: the batches wait for the next try */
          *out = settle_pending(q);
          hci_unlock(&fifo.lock);
        }
      }
    }
  }
  __asm__ volatile("" ::: "memory");
  q->busy = 0;
  return kept;
}

hc_qbatch_t *hci_quarantine_flush(hc_tcache_t *tc, bool all) {
  hc_tc_quar_t *q = tc ? hci_tc_quar(tc) : NULL;
  if (q && q->busy) q = NULL; /* a handler's call inside this thread's put: its batches stay */
  if (q) q->busy = 1;
  hci_lock(&fifo.lock);
  if (q) {
    hc_qbatch_t *b = q->cur;
    q->cur = NULL;
    if (b && b->n) add_pending(q, b);
    else if (b) { /* an empty array: a spare */
      b->next = fifo.spare;
      fifo.spare = b;
    }
    take_pending(q);
  }
  hc_qbatch_t *out = cut_to(all ? 0 : hci_quarantine_budget);
  hci_unlock(&fifo.lock);
  if (q) q->busy = 0;
  return out;
}

void hci_quarantine_recycle(hc_qbatch_t *b) {
  if (!b) return;
  hc_qbatch_t *last = b;
  while (last->next) last = last->next;
  hci_lock(&fifo.lock);
  last->next = fifo.spare;
  fifo.spare = b;
  hci_unlock(&fifo.lock);
}

void hci_quarantine_held(size_t *small, size_t *large) {
  size_t s = 0, l = 0;
  if (hci_quarantine_budget) {
    hci_lock(&fifo.lock);
    s = fifo.bytes - fifo.large_bytes;
    l = fifo.large_bytes;
    hci_unlock(&fifo.lock);
    /* The threads' batches, read racily (statistics): the current one only. */
    hci_lock(&hci_tc_registry_lock);
    for (hc_tcache_t *tc = hci_tc_registry; tc; tc = tc->next) {
      const hc_qbatch_t *b = __atomic_load_n(&hci_tc_quar(tc)->cur, __ATOMIC_RELAXED);
      if (!b) continue;
      size_t n = __atomic_load_n(&b->bytes, __ATOMIC_RELAXED), nl = __atomic_load_n(&b->large_bytes, __ATOMIC_RELAXED);
      s += n > nl ? n - nl : 0;
      l += nl;
    }
    hci_unlock(&hci_tc_registry_lock);
  }
  *small = s;
  *large = l;
}

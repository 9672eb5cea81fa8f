/* remote.c - remote frees: an object freed by a thread other than its
 * span's owner goes back to the owner (hc_tc_remote_t in hc_types.h).
 *
 * The free fast path (alloc_inline.h) pushes onto the thread's own list
 * only when the pagemap's owner word of the object's page is the freeing
 * thread's cache; otherwise hci_free_miss calls hci_remote_free, which
 * appends the object to the freeing cache's batch for its class (plain
 * stores: the batch is the freeing thread's) and, when the batch is full
 * or the next object has another owner, pushes the batch whole onto the
 * owner's inbox for the class.  The owner takes its inbox whole when its
 * list runs dry (hci_tc_refill, before the central list).
 *
 * Protocol of an inbox (one word per class per cache: the chain's head in
 * the low HC_ADDRESS_BITS bits, its length in the bits above):
 *  - push (any thread): link the chain's tail to the head read, then
 *    compare-and-swap the word from that value to the chain's head and
 *    the sum of the lengths; retry with the new word on failure.
 *  - take (any thread; normally the owner): exchange the word with 0.
 * The taker so knows the length without walking the chain (the walk read
 * every object, each last written by another thread's free: a miss each,
 * one after the other; hci_remote_collect was 3-4 % of xfree's and
 * prodcons' samples).  A length that does not fit saturates at
 * INBOX_N_UNKNOWN, and the taker then counts by walking.
 * There is no pop of a single object, so no ABA: a push whose CAS
 * succeeds links to exactly the head it replaces, whatever happened to
 * that object in between (taken, allocated, freed and pushed again), and
 * a take owns everything it swapped out.  The links are written before
 * the CAS (release) and read after the exchange (acquire).
 *
 * A cache is never freed (thread_cache.c pools the caches of exited
 * threads and a new thread adopts one), so a pusher that read an owner
 * that has since exited writes into live memory.  Exit sets `dead` and
 * then takes every inbox; a pusher pushes and then reads `dead`, and takes
 * the inbox itself when it is set.  With both sides sequentially
 * consistent one of them sees the other's write (Dekker), so nothing
 * pushed to an exiting cache stays in its inbox, unless a new thread has
 * adopted the cache (dead is 0 again), which then takes it as its own.
 * Checker mode and malloc hooks never get here (every free is slow and
 * goes to the freeing thread's cache, as before).
 * Locks: none; central lists when an inbox is given back.
 */
#include "free_list.h"
#include "hc_internal.h"


/* The inbox word (protocol above). */
#define INBOX_N_SHIFT HC_ADDRESS_BITS
#define INBOX_N_UNKNOWN (~(uintptr_t)0 >> INBOX_N_SHIFT)
#define INBOX_PTR_MASK (((uintptr_t)1 << INBOX_N_SHIFT) - 1)
_Static_assert(INBOX_N_SHIFT <= 56, "an inbox's length needs the bits above the address");

/* A chain from head: its tail and length; every link checked. */
static void chain_close(void *head, hc_chain_t *out) {
  uint32_t n = 1;
  void *t = head, *next;
  while ((next = hc_fl_next(t, 0)) != NULL) {
    t = next;
    n++;
  }
  out->head = head;
  out->tail = t;
  out->n = n;
}

/* Takes o's inbox for cls whole: its head and length (its tail only when
 * the length saturated and the chain was walked: no taker reads it). */
static bool inbox_take(hc_tcache_t *o, unsigned cls, hc_chain_t *out) {
  _Atomic uintptr_t *in = &o->remote.inbox[cls].word;
  if (!atomic_load_explicit(in, memory_order_relaxed)) return false;
  uintptr_t w = atomic_exchange_explicit(in, 0, memory_order_seq_cst);
  if (!w) return false;
  void *head = (void *)(w & INBOX_PTR_MASK);
  uintptr_t n = w >> INBOX_N_SHIFT;
  if (n == INBOX_N_UNKNOWN) {
    chain_close(head, out);
  } else {
    out->head = head;
    out->tail = NULL;
    out->n = (uint32_t)n;
  }
  atomic_fetch_sub_explicit(&o->remote.inbox[cls].n, out->n, memory_order_relaxed);
  atomic_fetch_sub_explicit(&o->remote.pending, (size_t)out->n * hci_classes[cls].size, memory_order_relaxed);
  return true;
}

bool hci_remote_collect(hc_tcache_t *tc, unsigned cls, hc_chain_t *out) { return inbox_take(tc, cls, out); }

static void inbox_to_central(hc_tcache_t *o, unsigned cls) {
  hc_chain_t ch;
  if (inbox_take(o, cls, &ch)) hci_central_insert(cls, &ch);
}

static void batch_flush(hc_tcache_t *tc, unsigned cls) {
  hc_chain_t *b = &tc->remote.batch[cls];
  hc_tcache_t *o = tc->remote.batch_owner[cls];
  hc_chain_t ch = *b;
  b->head = b->tail = NULL;
  __atomic_store_n(&b->n, 0, __ATOMIC_RELAXED);
  tc->remote.batch_owner[cls] = NULL;
  size_t bytes = (size_t)ch.n * hci_classes[cls].size;
  /* An owner that exited, or whose inboxes hold HC_REMOTE_INBOX_MAX
   * already (it stopped allocating the class: it must not collect every
   * object of its spans), gets nothing: the chain goes to central whole. */
  if (atomic_load_explicit(&o->remote.dead, memory_order_relaxed) ||
      atomic_load_explicit(&o->remote.pending, memory_order_relaxed) + bytes > HC_REMOTE_INBOX_MAX) {
    hc_fl_link(ch.tail, NULL);
    hci_central_insert(cls, &ch);
    return;
  }
  _Atomic uintptr_t *in = &o->remote.inbox[cls].word;
  atomic_fetch_add_explicit(&o->remote.inbox[cls].n, ch.n, memory_order_relaxed);
  atomic_fetch_add_explicit(&o->remote.pending, bytes, memory_order_relaxed);
  uintptr_t old = atomic_load_explicit(in, memory_order_relaxed), w;
  do {
    uintptr_t n = old >> INBOX_N_SHIFT;
    n = n + ch.n < INBOX_N_UNKNOWN ? n + ch.n : INBOX_N_UNKNOWN;
    w = (uintptr_t)ch.head | n << INBOX_N_SHIFT;
    hc_fl_link(ch.tail, (void *)(old & INBOX_PTR_MASK));
  } while (!atomic_compare_exchange_weak_explicit(in, &old, w, memory_order_seq_cst, memory_order_relaxed));
  /* The owner exited meanwhile: take back what is there (the protocol above). */
  if (atomic_load_explicit(&o->remote.dead, memory_order_seq_cst)) inbox_to_central(o, cls);
}

void hci_remote_free(hc_tcache_t *tc, hc_tcache_t *owner, unsigned cls, void *p) {
  hc_chain_t *b = &tc->remote.batch[cls];
  if (b->n && tc->remote.batch_owner[cls] != owner) batch_flush(tc, cls);
  hc_fl_link(p, b->head);
  if (!b->n) {
    b->tail = p;
    tc->remote.batch_owner[cls] = owner;
  }
  b->head = p;
  __atomic_store_n(&b->n, b->n + 1, __ATOMIC_RELAXED);
  if (b->n >= hci_classes[cls].batch || (size_t)b->n * hci_classes[cls].size >= HC_REMOTE_BATCH_BYTES)
    batch_flush(tc, cls);
}

void hci_remote_flush(hc_tcache_t *tc) {
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++)
    if (tc->remote.batch[c].n) batch_flush(tc, c);
}

void hci_remote_exit(hc_tcache_t *tc) {
  hci_remote_flush(tc);
  atomic_store_explicit(&tc->remote.dead, 1, memory_order_seq_cst);
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) inbox_to_central(tc, c);
}

void hci_remote_drain(hc_tcache_t *tc) {
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) inbox_to_central(tc, c);
}

size_t hci_remote_objects(const hc_tcache_t *tc, unsigned cls) {
  return atomic_load_explicit(&tc->remote.inbox[cls].n, memory_order_relaxed) +
         __atomic_load_n(&tc->remote.batch[cls].n, __ATOMIC_RELAXED);
}

size_t hci_remote_bytes(const hc_tcache_t *tc) {
  size_t total = 0;
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) total += hci_remote_objects(tc, c) * hci_classes[c].size;
  return total;
}

/* stackdepot.c - hash-consed call stacks: frames -> 32-bit id, id -> frames.
 *
 * Every recorded allocation keeps only a stack id (hc_objmeta_t.stack_id), so
 * a stack is stored once however many objects share it.  Ids start at 2
 * (0 = none, 1 = unknown) and are dense, so id -> entry is an O(1) index.
 *
 * Structures (all from hci_meta_alloc, never freed):
 *  - entries: {hash, depth, pcs[depth]} bump-allocated from CHUNK-sized blocks;
 *  - index:   id -> entry pointer, in blocks that double in size
 *             (block k holds 2^(k+10) ids), so small programs pay 8 KiB;
 *  - table:   open-addressing hash table of slots (hash32 << 32 | id), load
 *             kept under 70%; it doubles by rehashing into a new array.  Old
 *             arrays are never freed: a lock-free reader may still be in one.
 *
 * Invariants: an entry is complete and its index pointer published (release)
 * before any slot names its id; a slot, once set, never changes within its
 * array.  Lookups take no lock: a reader on an old array may miss a newer
 * stack, and the locked insert path looks again in the current array, so a
 * stack never gets two ids.
 * Lock: depot.lock guards insertion, growth and the bump allocator.  Lock
 * order: after checker and loader, before the page heap (hc_types.h); while
 * holding it we only call hci_meta_alloc (metadata arena, last in order).
 */
#include <string.h>

#include "hc_stacks.h"

#define INDEX_BASE_BITS 10                /* first index block: 1024 ids */
#define INDEX_BLOCKS (32 - INDEX_BASE_BITS + 1)
#define CHUNK ((size_t)256 << 10)          /* entry storage grows by this much */
#define TABLE_MIN_BITS 12                  /* 4096 slots (32 KiB) at first */
#define POP_WINDOW ((size_t)64 << 10)     /* entry storage made resident this much at a time */
#define POP_FROM ((size_t)512 << 10)       /* once the depot holds this much (depot_map) */

typedef struct entry {
  uint32_t hash;
  uint32_t depth;
  uintptr_t pcs[];
} entry_t;

/* slots[0] holds the mask (len - 1), so a power-of-two array stays one
 * power-of-two allocation; probing skips index 0.  Other slots: 0 = empty,
 * else hash32 << 32 | id. */
typedef _Atomic uint64_t table_t;

static inline size_t tmask(const table_t *t) {
  return (size_t)atomic_load_explicit(&t[0], memory_order_relaxed);
}
static inline size_t tnext(size_t i, size_t mask) {
  i = (i + 1) & mask;
  return i ? i : 1;
}
static inline size_t tfirst(uint32_t hash, size_t mask) {
  size_t i = hash & mask;
  return i ? i : 1;
}

static struct {
  hci_lock_t lock;
  _Atomic(table_t *) table;                      /* current array; readers load it with acquire */
  _Atomic(entry_t **) index[INDEX_BLOCKS];       /* id -> entry, block k covers 2^(k+BASE) ids */
  _Atomic uint32_t next_id;                      /* next id to hand out (0 before the first put) */
  size_t used;                                   /* slots in use in the current table; lock */
  uint8_t *bump, *bump_end;                      /* entry storage; lock */
  uint8_t *populated;                            /* [bump, populated) is resident (depot_map); lock */
  _Atomic size_t bytes;                          /* metadata bytes held */
} depot = {.lock = HCI_LOCK_INIT(HC_RANK_DEPOT)};
HC_PRIVATE_STATE(depot);

/* The table's 32-bit hash of a stack from hci_stack_hash (hc_stacks.h): the
 * polynomial sum is mixed with the depth so all its bits reach the top. */
static inline uint32_t hash_final(uint64_t h, int n) {
  h ^= (uint64_t)n * 0x9e3779b97f4a7c15ull;
  h ^= h >> 32;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 29;
  return (uint32_t)(h >> 32);
}

/* id -> (block, position): x = id + 2^BASE; block = log2(x) - BASE. */
static inline void index_pos(uint32_t id, unsigned *block, size_t *pos) {
  uint64_t x = (uint64_t)id + ((uint64_t)1 << INDEX_BASE_BITS);
  unsigned lg = 63u - (unsigned)__builtin_clzll(x);
  *block = lg - INDEX_BASE_BITS;
  *pos = (size_t)(x - ((uint64_t)1 << lg));
}

static inline const entry_t *entry_of(uint32_t id) {
  unsigned b;
  size_t pos;
  index_pos(id, &b, &pos);
  entry_t **blk = atomic_load_explicit(&depot.index[b], memory_order_acquire);
  if (blk == NULL) return NULL;
  return __atomic_load_n(&blk[pos], __ATOMIC_ACQUIRE);
}

static uint32_t find(const table_t *t, uint32_t hash, const uintptr_t *pcs, int n) {
  size_t mask = tmask(t);
  size_t i = tfirst(hash, mask);
  for (;;) {
    uint64_t s = atomic_load_explicit(&t[i], memory_order_acquire);
    if (s == 0) return 0;
    if ((uint32_t)(s >> 32) == hash) {
      uint32_t id = (uint32_t)s;
      const entry_t *e = entry_of(id);
      if (e && e->depth == (uint32_t)n && memcmp(e->pcs, pcs, (size_t)n * sizeof *pcs) == 0) return id;
    }
    i = tnext(i, mask);
  }
}

/* Memory for the depot, counted in depot.bytes.  Once the depot is large
 * (POP_FROM: checker mode, not a few sampled stacks, which keep their
 * RSS), its pages are made resident in one call instead of a page fault
 * each: table slots written at random and index blocks in order when
 * `whole`, entry chunks a window at a time as entries fill them
 * (entry_alloc).  The faults cost python3 1 300 of them for 13 000 stacks
 * of 46 frames on average, 12-20 us each in a virtual machine, about twice
 * what populating costs (docs/performance.md, "session 12"). */
static void *depot_map(size_t bytes, bool whole) {
  void *p = hci_meta_alloc(bytes);
  if (p == NULL) return NULL;
  if (whole && atomic_load_explicit(&depot.bytes, memory_order_relaxed) >= POP_FROM) hci_os_populate(p, bytes);
  atomic_fetch_add_explicit(&depot.bytes, bytes, memory_order_relaxed);
  return p;
}

static table_t *table_new(size_t bits) {
  size_t len = (size_t)1 << bits;
  table_t *t = depot_map(len * sizeof(uint64_t), true);
  if (t == NULL) return NULL;
  atomic_store_explicit(&t[0], len - 1, memory_order_relaxed);
  return t;
}

static void table_put(table_t *t, uint64_t slot) {
  size_t mask = tmask(t);
  size_t i = tfirst((uint32_t)(slot >> 32), mask);
  while (atomic_load_explicit(&t[i], memory_order_relaxed) != 0) i = tnext(i, mask);
  atomic_store_explicit(&t[i], slot, memory_order_release);
}

/* requires: lock.  Doubles the table when one more slot would pass 70%. */
static table_t *table_reserve(table_t *t) {
  if (t != NULL && (depot.used + 1) * 10 <= tmask(t) * 7) return t;
  size_t bits = TABLE_MIN_BITS;
  if (t != NULL) bits = (size_t)__builtin_ctzll(tmask(t) + 1) + 1;
  table_t *nt = table_new(bits);
  if (nt == NULL) return NULL;
  if (t != NULL)
    for (size_t i = 1; i <= tmask(t); i++) {
      uint64_t s = atomic_load_explicit(&t[i], memory_order_relaxed);
      if (s) table_put(nt, s);
    }
  atomic_store_explicit(&depot.table, nt, memory_order_release);
  return nt;
}

/* requires: lock. */
static entry_t *entry_alloc(int n) {
  size_t need = sizeof(entry_t) + (size_t)n * sizeof(uintptr_t);
  if ((size_t)(depot.bump_end - depot.bump) < need) {
    uint8_t *c = depot_map(CHUNK, false); /* the old chunk's tail (< one entry) is abandoned */
    if (c == NULL) return NULL;
    depot.bump = depot.populated = c;
    depot.bump_end = c + CHUNK;
  }
  if (depot.bump + need > depot.populated && atomic_load_explicit(&depot.bytes, memory_order_relaxed) >= POP_FROM) {
    /* the next window (need < POP_WINDOW) */
    uint8_t *from = depot.populated > depot.bump ? depot.populated : depot.bump;
    uint8_t *e = from + POP_WINDOW < depot.bump_end ? from + POP_WINDOW : depot.bump_end;
    hci_os_populate(from, (size_t)(e - from));
    depot.populated = e;
  }
  entry_t *e = (entry_t *)depot.bump;
  depot.bump += need;
  return e;
}

/* requires: lock.  The index block that will hold id. */
static entry_t **index_block(uint32_t id, size_t *pos) {
  unsigned b;
  index_pos(id, &b, pos);
  entry_t **blk = atomic_load_explicit(&depot.index[b], memory_order_relaxed);
  if (blk == NULL) {
    blk = depot_map(((size_t)1 << (b + INDEX_BASE_BITS)) * sizeof(entry_t *), true);
    if (blk == NULL) return NULL;
    atomic_store_explicit(&depot.index[b], blk, memory_order_release);
  }
  return blk;
}

uint32_t hci_depot_put(const uintptr_t *pcs, int n) {
  if (n <= 0 || pcs == NULL) return HC_STACK_UNKNOWN;
  if (n > HC_MAX_STACK_DEPTH) n = HC_MAX_STACK_DEPTH;
  return hci_depot_put_hashed(pcs, n, hci_stack_hash(pcs, n));
}

uint32_t hci_depot_put_hashed(const uintptr_t *pcs, int n, uint64_t full_hash) {
  if (n <= 0 || pcs == NULL) return HC_STACK_UNKNOWN;
  if (n > HC_MAX_STACK_DEPTH) return hci_depot_put(pcs, n);
  uint32_t hash = hash_final(full_hash, n);
  table_t *t = atomic_load_explicit(&depot.table, memory_order_acquire);
  uint32_t id;
  if (t != NULL && (id = find(t, hash, pcs, n)) != 0) return id;

  hci_lock(&depot.lock);
  t = atomic_load_explicit(&depot.table, memory_order_relaxed);
  if (t != NULL && (id = find(t, hash, pcs, n)) != 0) goto out;
  id = HC_STACK_UNKNOWN;
  uint32_t next = atomic_load_explicit(&depot.next_id, memory_order_relaxed);
  if (next == 0) next = 2;
  if (next == UINT32_MAX) goto out; /* ids exhausted */
  if ((t = table_reserve(t)) == NULL) goto out;
  size_t pos;
  entry_t **blk = index_block(next, &pos);
  entry_t *e = blk ? entry_alloc(n) : NULL;
  if (e == NULL) goto out;
  e->hash = hash;
  e->depth = (uint32_t)n;
  memcpy(e->pcs, pcs, (size_t)n * sizeof *pcs);
  __atomic_store_n(&blk[pos], e, __ATOMIC_RELEASE);
  atomic_store_explicit(&depot.next_id, next + 1, memory_order_release);
  table_put(t, (uint64_t)hash << 32 | next);
  depot.used++;
  id = next;
out:
  hci_unlock(&depot.lock);
  return id;
}

int hci_depot_get(uint32_t id, const uintptr_t **pcs) {
  *pcs = NULL;
  if (id < 2 || id >= atomic_load_explicit(&depot.next_id, memory_order_acquire)) return 0;
  const entry_t *e = entry_of(id);
  if (e == NULL) return 0;
  *pcs = e->pcs;
  return (int)e->depth;
}

size_t hci_depot_bytes(void) { return atomic_load_explicit(&depot.bytes, memory_order_relaxed); }

size_t hci_depot_count(void) {
  uint32_t next = atomic_load_explicit(&depot.next_id, memory_order_relaxed);
  return next < 2 ? 0 : next - 2;
}

void hci_depot_locks(hci_lock_fn *each) { each(&depot.lock); }

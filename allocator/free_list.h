/* free_list.h - the links and marks of free small objects (hardening).
 *
 * Every free small object (thread-cache list, transfer chain, span free
 * list; objects are at least 16 bytes) holds two words:
 *
 *     word 0: next ^ key       the encoded link (the end, NULL, as HC_FL_END ^ key)
 *     word 1: key              the "free" mark
 *
 * key is a per-process random word (free_list.c) with bit 63 and bit 0
 * set.  Allocation clears word 1, so word 1 == key says "this object is
 * free": free and realloc test it (exact up to a program storing the
 * secret key itself), which catches every double free of a small object,
 * from any thread and however late (free(a); free(b); free(a)).  A decoded
 * link must look like an object address: below 2^HC_ADDRESS_BITS and
 * 16-byte aligned (`bad` mask).  Any pointer or small integer a
 * use-after-free writes over a link decodes with bit 63 (and bit 0) set,
 * so it is caught before it is followed, with a message; only a value
 * built from the secret key passes.
 *
 * An object never handed out is caught too (free(p + 4096), glibc's
 * "invalid pointer"): until carving reaches it, it lies in a page closed
 * to the free fast path (hci_pagemap_open) or, in the page carving
 * reached last, carries the mark (hc_fl_mark_unused); either way the slow
 * path finds it past the span's `opened`, the most objects ever carved
 * (alloc.c, free_small).
 *
 * The end of a list is HC_FL_END, a value with a bad bit, not NULL: a
 * thread-cache list's head is HC_FL_END when empty, so the malloc fast
 * path's one test of the head (hc_fl_bad) stops at an empty list and at a
 * link the previous pop decoded but did not check (alloc_inline.h,
 * hc_tc_first).  Chains, span lists and inboxes keep NULL in their
 * structs: hc_fl_link writes NULL as the end and hc_fl_next reads the end
 * as NULL.
 *
 * Every reader and writer of a link goes through these functions.
 *
 * HC_HARDENING 0 (meson -Dhardening=disabled, a measurement switch only:
 * tests/bench/harden_cost.sh; never for production): plain links, no free
 * mark, no check.  The lists keep HC_FL_END as their end, and the malloc
 * fast path's head test becomes "head == HC_FL_END" (a compare with an
 * immediate, the test any free list needs), so the two builds differ by
 * the hardening alone.  Checker mode keeps its own double-free detection
 * (the allocation records).
 *
 * HC_HARDEN_MARKS / HC_HARDEN_LINKS (meson -Dhardening_parts=marks|links,
 * measurement switches too): only the free marks, with plain links and the
 * unhardened head test, or only the encoded links, with no mark (nothing
 * stored at free or cleared at malloc in word 1), so that harden_cost.sh
 * --parts times each part alone. */
#ifndef HC_FREE_LIST_H
#define HC_FREE_LIST_H

#include <stdint.h>

#include "hc_base.h"

#ifndef HC_HARDENING
#define HC_HARDENING 1
#endif
#ifndef HC_HARDEN_MARKS
#define HC_HARDEN_MARKS HC_HARDENING
#endif
#ifndef HC_HARDEN_LINKS
#define HC_HARDEN_LINKS HC_HARDENING
#endif
/* The key XORed into links: the key, or 0 (plain links). */
#define HC_FL_LINK_KEY(k) (HC_HARDEN_LINKS ? (k) : 0)

/* XORed into links, and the free mark; never 0 once set.  Hidden, so
 * that the fast paths read it with one RIP-relative load, not through the
 * GOT.  Read-mostly, on a cache line of its own (free_list.c). */
typedef struct hci_fl_line {
  uintptr_t key;
  uintptr_t key2;   /* the key again: {link, mark} of a free object is {next, 0} ^ {key, key2},
                       one 16-byte XOR and store (hc_fl_link); set after key, so key2 != 0
                       says both are */
  uintptr_t bad;    /* HC_FL_BAD_BITS, in memory: the malloc fast path tests against it */
  uintptr_t write_prefetch; /* the CPU has a prefetch for writing (hc_fl_will_mark) */
  uintptr_t pad[4];
} __attribute__((aligned(64))) hci_fl_line_t;
extern hci_fl_line_t hci_fl __attribute__((visibility("hidden")));

/* Bits a decoded link never has: at or above HC_ADDRESS_BITS, and below 16. */
#define HC_FL_BAD_BITS ((~(uintptr_t)0 << HC_ADDRESS_BITS) | 15u)
/* The end of a list (has a bad bit; a write over a link decodes to it only
 * if the program wrote HC_FL_END ^ key). */
#define HC_FL_END ((uintptr_t)1)

/* Sets the key once (idempotent, any thread): before the first object is
 * linked (hci_alloc_init, and every new span as a fallback). */
void hci_fl_init(void);
static inline void hci_fl_ensure(void) {
  if (hc_unlikely(__atomic_load_n(&hci_fl.key2, __ATOMIC_ACQUIRE) == 0)) hci_fl_init();
}

/* A link that does not decode to an object address: one line, abort.
 * ra: the caller of the allocation function, or 0 when found while moving
 * a list. */
void hci_fl_corrupt(const void *p, uintptr_t ra) __attribute__((noreturn)) hc_noinline hc_cold;
/* A thread-cache list whose head n (decoded by the malloc fast path from
 * the link of the object it handed out last, unchecked) is not an object
 * address: that object's link was overwritten after its free, with
 * n ^ key.  size: the class's object size. */
void hci_fl_corrupt_head(uintptr_t n, size_t size, uintptr_t ra) __attribute__((noreturn)) hc_noinline hc_cold;

/* Marks p free and links it to next, a list head: an object or HC_FL_END
 * (never NULL; the fast paths' push).  On x86-64 in vector registers:
 * load next, XOR {key, key2}, one 16-byte store (3 instructions; 4 in
 * general registers: load the key, XOR, two stores). */
static inline void hc_fl_link_head(void *p, void *next) {
#if !HC_HARDENING
  *(void **)p = next;
#elif HC_HARDEN_MARKS && HC_HARDEN_LINKS && defined(__SSE2__)
  typedef uint64_t hc_v2u64 __attribute__((vector_size(16)));
  hc_v2u64 v = {(uint64_t)(uintptr_t)next, 0};
  v ^= *(const hc_v2u64 *)&hci_fl.key;
  __builtin_memcpy(p, &v, sizeof v);
#else
  uintptr_t k = hci_fl.key;
  ((uintptr_t *)p)[0] = (uintptr_t)next ^ HC_FL_LINK_KEY(k);
  if (HC_HARDEN_MARKS) ((uintptr_t *)p)[1] = k;
#endif
}

/* The key, for a path that both tests a mark and links an object with one
 * load of it (the free fast path: a store between the two, the room's,
 * makes the compiler read hci_fl.key again otherwise). */
static inline uintptr_t hc_fl_key(void) { return HC_HARDENING ? hci_fl.key : 0; }

/* hc_fl_link_head with the key k in a general register: two 8-byte
 * stores, one instruction more than the vector form but faster where the
 * object is handed out again at once: on the pair loops (user time, 200 M
 * pairs, 9 runs) fixed 0.78 -> 0.73 s, mixed 1.42 -> 1.36 s, the next
 * malloc reading the link through an 8-byte store rather than out of a
 * 16-byte vector one (docs/performance.md, "Session 16 (lead)"). */
static inline void hc_fl_link_head_k(void *p, void *next, uintptr_t k) {
#if !HC_HARDENING
  (void)k;
  *(void **)p = next;
#else
  ((uintptr_t *)p)[0] = (uintptr_t)next ^ HC_FL_LINK_KEY(k);
  if (HC_HARDEN_MARKS) ((uintptr_t *)p)[1] = k;
#endif
}

/* Marks p free and links it to next, NULL for the end. */
static inline void hc_fl_link(void *p, void *next) { hc_fl_link_head(p, next ? next : (void *)HC_FL_END); }

/* True when a decoded link n has a bit no object address has.  On x86-64
 * one test against the mask in memory (the compiler would load the 64-bit
 * constant into a register first: one instruction more per malloc). */
static inline bool hc_fl_bad(uintptr_t n) {
#if !HC_HARDEN_LINKS
  return n == HC_FL_END;
#elif defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__)
  bool bad;
  __asm__("test %2, %1" : "=@ccnz"(bad) : "m"(hci_fl.bad), "r"(n));
  return bad;
#else
  return (n & HC_FL_BAD_BITS) != 0;
#endif
}

/* The link of free object p, decoded, unchecked. */
static inline uintptr_t hc_fl_word(const void *p) { return ((const uintptr_t *)p)[0] ^ HC_FL_LINK_KEY(hci_fl.key); }

/* n, the decoded link of free object p, checked; NULL at the end. */
static inline void *hc_fl_checked(const void *p, uintptr_t n, uintptr_t ra) {
  if (hc_unlikely(hc_fl_bad(n))) {
    if (n == HC_FL_END) return NULL;
    hci_fl_corrupt(p, ra);
  }
  return (void *)n;
}

/* The link of free object p, checked; NULL at the end. */
static inline void *hc_fl_next(const void *p, uintptr_t ra) { return hc_fl_checked(p, hc_fl_word(p), ra); }

/* True when p carries the free mark, k being the key (hc_fl_key(): the
 * free fast path passes the one it loaded for the link too). */
static inline bool hc_fl_is_free_k(const void *p, uintptr_t k) {
#if HC_HARDEN_MARKS
  return ((const uintptr_t *)p)[1] == k;
#else
  (void)p;
  (void)k;
  return false;
#endif
}

/* True when p carries the free mark. */
static inline bool hc_fl_is_free(const void *p) { return hc_fl_is_free_k(p, hc_fl_key()); }

/* Before a free that reads p's mark and then writes its link and mark, in
 * the free slow path: asks for p's line in a state it can write.  An
 * object freed by a thread other than the one that wrote it last (a
 * remote free, which the fast path leaves to the slow path before
 * reading it) has its line in the other core's cache: the mark's load
 * brings it shared and the link's store then has to ask for it again,
 * two coherence trips where an unhardened free makes one (docs/
 * performance.md, "Session 30 (lead)").  x86-64's PREFETCHW, used only
 * when CPUID says the CPU has it (hci_fl_init). */
static inline void hc_fl_will_mark(const void *p) {
#if HC_HARDEN_MARKS && defined(__x86_64__)
  if (hci_fl.write_prefetch) __asm__ volatile("prefetchw (%0)" ::"r"(p));
#else
  (void)p;
#endif
}

/* p, an object not carved yet in a page that carving has opened, gets the
 * free mark (word 1) but no link: a free of it then fails the fast path's
 * mark test and the slow path reports it (never handed out: central.c,
 * open_pages).  Word 0 is left alone. */
static inline void hc_fl_mark_unused(void *p) {
#if HC_HARDEN_MARKS
  ((uintptr_t *)p)[1] = hci_fl.key;
#else
  (void)p;
#endif
}

/* p is handed out: no longer marked free. */
static inline void hc_fl_take(void *p) {
#if HC_HARDEN_MARKS
  ((uintptr_t *)p)[1] = 0;
#else
  (void)p;
#endif
}

#endif

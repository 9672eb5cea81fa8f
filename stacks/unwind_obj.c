/* unwind_obj.c - the module that covers a PC, for the DWARF unwinder: its
 * extent, its readable segments and its .eh_frame_hdr with the size of that
 * segment, so that every table read of the unwinder is checked against what
 * is really mapped (a corrupted fde_count, table entry or record length
 * ends a walk instead of faulting).
 *
 *  - Dynamically linked processes: _dl_find_object (lock-free, safe inside
 *    malloc and during dlopen) names the module; its program headers are
 *    read once, fault-proof (hci_os_read), from the ELF header mapped at the
 *    module's start, and kept in a small cache of seqlocked slots.
 *  - Statically linked executables (no PT_INTERP, no loader): libc.a's
 *    _dl_find_object faults until _dl_find_object_init has run, and that
 *    function is itself called from __libc_init_first and mallocs.  The
 *    program headers the kernel passed in AT_PHDR describe the only module;
 *    code outside it (a static dlopen) has no unwind rules.
 *
 * Invariants: a module whose headers are unusable is reported with nseg == 0
 * (nothing is readable: the walk stops in it); a cache slot is read only
 * when its sequence number is even and unchanged across the copy, so a
 * reader never uses a half-written entry; a slot matches only on the module
 * start, end and .eh_frame_hdr address _dl_find_object gave, so a module
 * loaded where another was unloaded is not taken for it.
 * Locks: none (getauxval and _dl_find_object take none).
 */
#include <string.h>

#include "hc_stacks.h"

#if defined(__x86_64__) && defined(__linux__)
#include <dlfcn.h>
#endif
#if defined(__x86_64__) && defined(__linux__) && defined(DLFO_EH_SEGMENT_TYPE)
#include <elf.h>
#include <link.h>
#include <sys/auxv.h>

/* Weak: the library still loads on a glibc without it (dwarf then falls back). */
extern __typeof__(_dl_find_object) _dl_find_object __attribute__((weak));

#define MAX_PHDRS 128
#define PHDR_BATCH 16

/* Fills o's segments and .eh_frame_hdr from the program headers at phdr
 * (phnum of them, read fault-proof), for a module loaded with bias.
 * hdr_want: the .eh_frame_hdr address the loader knows (0: take the
 * PT_GNU_EH_FRAME's).  False when the headers cannot be read. */
static bool from_phdrs(hci_eh_obj_t *o, uintptr_t phdr, size_t phnum, uintptr_t bias, uintptr_t hdr_want) {
  if (phnum == 0 || phnum > MAX_PHDRS) return false;
  uintptr_t lo = UINTPTR_MAX, hi = 0, hdr = 0, hdr_size = 0;
  o->nseg = 0;
  for (size_t i = 0; i < phnum; i += PHDR_BATCH) {
    ElfW(Phdr) ph[PHDR_BATCH];
    size_t k = phnum - i < PHDR_BATCH ? phnum - i : PHDR_BATCH;
    if (hci_os_read(ph, phdr + i * sizeof(ElfW(Phdr)), k * sizeof(ElfW(Phdr))) != k * sizeof(ElfW(Phdr)))
      return false;
    for (size_t j = 0; j < k; j++) {
      uintptr_t a = bias + ph[j].p_vaddr, n = ph[j].p_memsz;
      if (a + n < a) return false;
      if (ph[j].p_type == PT_LOAD && n > 0) {
        if (a < lo) lo = a;
        if (a + n > hi) hi = a + n;
        if ((ph[j].p_flags & PF_R) && o->nseg < HCI_EH_SEGS) {
          o->seg_lo[o->nseg] = a;
          o->seg_hi[o->nseg] = a + n;
          o->nseg++;
        }
      } else if (ph[j].p_type == PT_GNU_EH_FRAME && n > 0) {
        hdr = a;
        hdr_size = n;
      }
    }
  }
  if (lo >= hi) return false;
  o->map_lo = lo & ~(uintptr_t)4095;
  o->map_hi = hi;
  o->hdr = o->hdr_hi = 0;
  if (hdr && (hdr_want == 0 || hdr == hdr_want) && hci_eh_readable(o, hdr, 4)) {
    o->hdr = hdr;
    o->hdr_hi = hdr + hdr_size;
    for (uintptr_t i = 0; i < o->nseg; i++) /* clipped to its segment */
      if (hdr >= o->seg_lo[i] && hdr < o->seg_hi[i] && o->hdr_hi > o->seg_hi[i]) o->hdr_hi = o->seg_hi[i];
  }
  return true;
}

/* ---- statically linked executables ---- */

/* 0 not decided yet, 1 dynamic, 2 static. */
static _Atomic int link_kind;
static hci_eh_obj_t static_obj; /* written once before link_kind becomes 2 */
HC_PRIVATE_STATE(static_obj);

static int decide_link_kind(void) {
  int k = atomic_load_explicit(&link_kind, memory_order_acquire);
  if (hc_likely(k != 0)) return k;
  uintptr_t phdr = getauxval(AT_PHDR), phnum = getauxval(AT_PHNUM);
  bool interp = false;
  uintptr_t bias = 0;
  for (uintptr_t i = 0; phdr && i < phnum && i < MAX_PHDRS; i++) {
    ElfW(Phdr) ph;
    if (hci_os_read(&ph, phdr + i * sizeof ph, sizeof ph) != sizeof ph) break;
    if (ph.p_type == PT_INTERP) interp = true;
    if (ph.p_type == PT_PHDR) {
      bias = phdr - ph.p_vaddr; /* static-pie; a plain static executable has bias 0 */
    }
  }
  /* A process started through a loader (interp) uses its _dl_find_object;
   * so does one whose auxiliary vector we cannot read. */
  k = 1;
  if (phdr && !interp) {
    hci_eh_obj_t o;
    memset(&o, 0, sizeof o);
    if (!from_phdrs(&o, phdr, phnum, bias, 0)) o.nseg = 0;
    static_obj = o;
    k = 2;
  }
  atomic_store_explicit(&link_kind, k, memory_order_release);
  return k;
}

/* ---- the module cache (dynamic processes) ---- */

#define SLOTS 64
#define OBJ_WORDS (sizeof(hci_eh_obj_t) / sizeof(uintptr_t))
_Static_assert(sizeof(hci_eh_obj_t) % sizeof(uintptr_t) == 0, "hci_eh_obj_t is made of words");

typedef struct slot {
  _Atomic uint64_t seq; /* odd while written; 0 = empty */
  _Atomic uintptr_t key_lo, key_hi, key_hdr;
  _Atomic uintptr_t w[OBJ_WORDS];
} slot_t;

static slot_t slots[SLOTS];
HC_PRIVATE_STATE(slots);

static inline size_t slot_of(uintptr_t map_start) { return (size_t)((map_start >> 12) * 0x9e3779b97f4a7c15ull >> 58); }

static bool slot_get(uintptr_t lo, uintptr_t hi, uintptr_t hdr, hci_eh_obj_t *o) {
  slot_t *s = &slots[slot_of(lo)];
  uint64_t q = atomic_load_explicit(&s->seq, memory_order_acquire);
  if (q == 0 || (q & 1)) return false;
  if (atomic_load_explicit(&s->key_lo, memory_order_relaxed) != lo ||
      atomic_load_explicit(&s->key_hi, memory_order_relaxed) != hi ||
      atomic_load_explicit(&s->key_hdr, memory_order_relaxed) != hdr)
    return false;
  uintptr_t w[OBJ_WORDS];
  for (size_t i = 0; i < OBJ_WORDS; i++) w[i] = atomic_load_explicit(&s->w[i], memory_order_relaxed);
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(&s->seq, memory_order_relaxed) != q) return false;
  memcpy(o, w, sizeof *o);
  return true;
}

static void slot_put(uintptr_t lo, uintptr_t hi, uintptr_t hdr, const hci_eh_obj_t *o) {
  slot_t *s = &slots[slot_of(lo)];
  uint64_t q = atomic_load_explicit(&s->seq, memory_order_relaxed);
  if ((q & 1) || !atomic_compare_exchange_strong_explicit(&s->seq, &q, q + 1, memory_order_acquire,
                                                          memory_order_relaxed))
    return; /* someone else is writing it: not cached this time */
  atomic_thread_fence(memory_order_release);
  uintptr_t w[OBJ_WORDS];
  memcpy(w, o, sizeof w);
  atomic_store_explicit(&s->key_lo, lo, memory_order_relaxed);
  atomic_store_explicit(&s->key_hi, hi, memory_order_relaxed);
  atomic_store_explicit(&s->key_hdr, hdr, memory_order_relaxed);
  for (size_t i = 0; i < OBJ_WORDS; i++) atomic_store_explicit(&s->w[i], w[i], memory_order_relaxed);
  atomic_store_explicit(&s->seq, q + 2, memory_order_release);
}

void hci_eh_cache_clear(void) {
  for (size_t i = 0; i < SLOTS; i++) {
    uint64_t q = atomic_load_explicit(&slots[i].seq, memory_order_relaxed);
    if (q == 0 || (q & 1)) continue;
    if (atomic_compare_exchange_strong_explicit(&slots[i].seq, &q, q + 1, memory_order_acquire, memory_order_relaxed)) {
      atomic_store_explicit(&slots[i].key_lo, 0, memory_order_relaxed);
      atomic_store_explicit(&slots[i].seq, q + 2, memory_order_release);
    }
  }
}

/* The module's headers, read from the ELF header mapped at its start (the
 * first PT_LOAD maps file offset 0 in every common link). */
static bool elf_header_at(uintptr_t a, ElfW(Ehdr) *eh) {
  return a != 0 && hci_os_read(eh, a, sizeof *eh) == sizeof *eh && memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 &&
         eh->e_ident[EI_CLASS] == ELFCLASS64 && eh->e_phentsize == sizeof(ElfW(Phdr)) && eh->e_phoff < 65536;
}

static void describe(const struct dl_find_object *d, hci_eh_obj_t *o) {
  uintptr_t lo = (uintptr_t)d->dlfo_map_start, hi = (uintptr_t)d->dlfo_map_end;
  memset(o, 0, sizeof *o);
  o->map_lo = lo;
  o->map_hi = hi;
  uintptr_t bias = d->dlfo_link_map ? d->dlfo_link_map->l_addr : 0;
  /* glibc 2.36 gives some executables' range as their code segment only
   * (tcc: [0x3000, 0x3421d) of a PIE whose header is at 0): the ELF header is
   * then at the load bias (a PIE's first PT_LOAD is at 0). */
  uintptr_t at = lo;
  ElfW(Ehdr) eh;
  if (!elf_header_at(at, &eh)) {
    at = bias;
    if (bias >= lo || !elf_header_at(at, &eh)) return;
  }
  hci_eh_obj_t t;
  memset(&t, 0, sizeof t);
  if (!from_phdrs(&t, at + eh.e_phoff, eh.e_phnum, bias, (uintptr_t)d->dlfo_eh_frame)) return;
  /* The headers must describe this mapping: they were the loader's. */
  if (t.map_lo != at || t.map_lo > lo || t.map_hi < hi) return;
  if (at == lo) t.map_hi = hi;
  *o = t;
}

int hci_eh_find(uintptr_t pc, hci_eh_obj_t *o) {
  if (decide_link_kind() == 2) {
    if (pc < static_obj.map_lo || pc >= static_obj.map_hi) return 0;
    *o = static_obj;
    return 1;
  }
  struct dl_find_object d;
  if (_dl_find_object == NULL || _dl_find_object((void *)pc, &d) != 0) return 0;
  uintptr_t lo = (uintptr_t)d.dlfo_map_start, hi = (uintptr_t)d.dlfo_map_end, hdr = (uintptr_t)d.dlfo_eh_frame;
  if (slot_get(lo, hi, hdr, o)) return 1;
  /* Reading the headers takes process_vm_readv, which a sandbox may kill. */
  if (atomic_load_explicit(&hci_unwind_no_syscalls, memory_order_relaxed)) return 0;
  describe(&d, o);
  slot_put(lo, hi, hdr, o);
  return 1;
}

bool hci_eh_available(void) { return decide_link_kind() == 2 || _dl_find_object != NULL; }

bool hci_eh_static_exe(void) { return decide_link_kind() == 2; }

#else

int hci_eh_find(uintptr_t pc, hci_eh_obj_t *o) {
  (void)pc;
  (void)o;
  return 0;
}
bool hci_eh_available(void) { return false; }
bool hci_eh_static_exe(void) { return false; }
void hci_eh_cache_clear(void) {}

#endif

/* roots.c - the root set of a leak check (design decision D12, after LSan):
 * where the flood starts.
 *
 *  - globals: the writable PT_LOAD segments of every loaded module, found
 *    with dl_iterate_phdr (not "every writable mapping" like gperftools: the
 *    allocator's metadata and free memory must never be roots);
 *  - per thread: the registers saved at the stop, the stack from sp - 128
 *    (the red zone) to the stack's end, and the static TLS block with
 *    struct pthread (pthread_setspecific's first-level slots, the DTV
 *    pointer); for the checking thread the stack from the frame saved at
 *    the public entry;
 *  - threads that did not stop: their whole stack and TLS, or, when their
 *    stack is unknown, every writable private anonymous mapping that is not
 *    the allocator's (conservative: never a false leak, maybe a missed one);
 *  - objects allocated by ld.so (DTV, dynamic TLS blocks) are roots: the
 *    flood asks hci_pc_in_ldso about their allocation stacks.
 * Every reported range has the excluded ranges (allocator and checker state)
 * cut out, and thread ranges are clipped to readable mappings, so the flood
 * can read every word without faulting.
 *
 * Invariants: exclusions only grow, entries are written before the count is
 * published (release), so readers need no lock; loader ranges are computed
 * once before any stop.
 * Locks: roots.lock serialises writers of the exclusion table only.
 */
#include <errno.h>
#include <link.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hc_checker.h"

#define RED_ZONE 128
#define MAX_LDSO_RANGES 4

static struct {
  hci_lock_t lock;
  _Atomic int nex;
  struct {
    uintptr_t lo, hi;
  } ex[HCI_MAX_EXCLUDED];
  _Atomic int ready;
  int nldso;
  uintptr_t ldso_lo[MAX_LDSO_RANGES], ldso_hi[MAX_LDSO_RANGES];
} roots;
HC_PRIVATE_STATE(roots);

struct sink {
  hci_root_fn fn;
  void *ctx;
  const char *kind;
};

/* ---------------------------------------------------------------- exclusions */

void hci_roots_exclude(uintptr_t lo, uintptr_t hi) {
  if (lo >= hi) return;
  hci_lock(&roots.lock);
  int n = atomic_load_explicit(&roots.nex, memory_order_relaxed);
  bool dup = false;
  for (int i = 0; i < n; i++)
    if (roots.ex[i].lo == lo && roots.ex[i].hi == hi) dup = true;
  if (!dup && n < HCI_MAX_EXCLUDED) {
    roots.ex[n].lo = lo;
    roots.ex[n].hi = hi;
    atomic_store_explicit(&roots.nex, n + 1, memory_order_release);
  } else if (!dup) {
    hci_warn("too many excluded root ranges; [%p, %p) stays a root", (void *)lo, (void *)hi);
  }
  hci_unlock(&roots.lock);
}

/* Reports [lo, hi) minus the excluded ranges from index `from` on. */
static void cut(const struct sink *s, uintptr_t lo, uintptr_t hi, int from) {
  int n = atomic_load_explicit(&roots.nex, memory_order_acquire);
  for (int i = from; i < n; i++) {
    uintptr_t elo = roots.ex[i].lo, ehi = roots.ex[i].hi;
    if (elo < hi && ehi > lo) {
      if (lo < elo) cut(s, lo, elo, i + 1);
      if (ehi < hi) cut(s, ehi, hi, i + 1);
      return;
    }
  }
  if (lo < hi) s->fn(s->ctx, lo, hi, s->kind);
}

static bool scannable(const hci_map_t *m) {
  return (m->flags & HCI_MAP_R) && !(m->flags & (HCI_MAP_SPECIAL | HCI_MAP_DEVICE));
}

/* Reports the readable parts of [lo, hi) (when the maps are known). */
static void emit(const struct sink *s, const hci_maps_t *maps, uintptr_t lo, uintptr_t hi) {
  if (lo >= hi) return;
  if (!maps || maps->n == 0) {
    cut(s, lo, hi, 0);
    return;
  }
  int a = 0, b = maps->n;
  while (a < b) { /* first mapping ending above lo */
    int mid = a + (b - a) / 2;
    if (maps->v[mid].hi <= lo) a = mid + 1;
    else b = mid;
  }
  for (int i = a; i < maps->n && maps->v[i].lo < hi; i++) {
    const hci_map_t *m = &maps->v[i];
    if (!scannable(m)) continue;
    uintptr_t l = lo > m->lo ? lo : m->lo, h = hi < m->hi ? hi : m->hi;
    cut(s, l, h, 0);
  }
}

/* ---------------------------------------------------------------- globals */

static int globals_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  const struct sink *s = arg;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W) || ph->p_memsz == 0) continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    cut(s, lo, lo + ph->p_memsz, 0);
  }
  return 0;
}

void hci_roots_globals(hci_root_fn fn, void *ctx) {
  struct sink s = {fn, ctx, "global"};
  dl_iterate_phdr(globals_cb, &s);
}

/* ---------------------------------------------------------------- threads */

/* Every writable private anonymous mapping that the allocator does not own:
 * what a thread whose stack we cannot find may keep pointers in. */
static void anon_fallback(const hci_maps_t *maps, hci_root_fn fn, void *ctx) {
  struct sink s = {fn, ctx, "anon-fallback"};
  for (int i = 0; i < maps->n; i++) {
    const hci_map_t *m = &maps->v[i];
    uint32_t need = HCI_MAP_R | HCI_MAP_W | HCI_MAP_PRIVATE | HCI_MAP_ANON;
    if ((m->flags & need) != need || !scannable(m)) continue;
    if (hci_pagemap_span(m->lo) || hci_pagemap_span(m->hi - 1)) continue; /* the heap */
    if (hci_meta_owns && (hci_meta_owns(m->lo) || hci_meta_owns(m->hi - 1))) continue;
    cut(&s, m->lo, m->hi, 0);
  }
}

void hci_roots_threads(const hci_world_t *w, uintptr_t self_sp, hci_root_fn fn, void *ctx) {
  const hci_maps_t *maps = &w->maps;
  bool fallback = w->incomplete; /* threads we do not know of: their stacks are somewhere */
  for (int i = 0; i < w->nthreads; i++) {
    const hci_thread_t *t = &w->threads[i];
    int state = atomic_load_explicit(&t->state, memory_order_acquire);
    if (state == HCI_T_EXITED) continue;
    uintptr_t tls_lo = 0, tls_hi = 0;
    if (t->tp) hci_tls_range(t->tp, &tls_lo, &tls_hi);
    if (t->stopped) {
      if (t->nregs > 0) fn(ctx, (uintptr_t)&t->regs[0], (uintptr_t)&t->regs[t->nregs], "registers");
      uintptr_t lo = t->stack_lo, hi = t->stack_hi;
      if (t->is_self && self_sp && self_sp >= lo && self_sp < hi) lo = self_sp;
      struct sink s = {fn, ctx, "stack"};
      if (hi) emit(&s, maps, lo, hi);
      else fallback = true;
      if (t->on_altstack && t->nstack_hi) {
        /* Interrupted on another stack: the normal one's sp is unknown. */
        struct sink sw = {fn, ctx, "stack-whole"};
        emit(&sw, maps, t->nstack_lo, t->nstack_hi);
      }
      bool covered = tls_lo >= lo && tls_hi <= hi;
      if (t->tp && !covered) {
        struct sink st = {fn, ctx, "tls"};
        emit(&st, maps, tls_lo, tls_hi);
      }
      continue;
    }
    /* Not stopped: it runs, so any part of its stack may be live. */
    hci_warn("thread %d did not stop for the leak check (it blocks signal %d or is stuck); "
             "%s treated as roots", t->tid, hci_stop_signal(),
             t->stack_hi && t->tp ? "its whole stack and TLS are"
                                  : "its stack is unknown: every anonymous writable mapping is");
    if (t->stack_hi) {
      struct sink s = {fn, ctx, "stack-whole-running"};
      emit(&s, maps, t->stack_lo, t->stack_hi);
    }
    if (t->tp) {
      struct sink s = {fn, ctx, "tls-running"};
      emit(&s, maps, tls_lo, tls_hi);
    }
    if (!t->stack_hi || !t->tp) fallback = true;
  }
  if (fallback) anon_fallback(maps, fn, ctx);
}

/* ---------------------------------------------------------------- unstable ranges */

bool hci_root_kind_unstable(const char *kind) {
  return !strcmp(kind, "stack-whole-running") || !strcmp(kind, "tls-running") || !strcmp(kind, "anon-fallback");
}

size_t hci_copy_safe(void *dst, uintptr_t src, size_t n) {
  /* process_vm_readv on our own pid reads through the page tables and
   * returns a short count instead of faulting on a vanished page. */
  pid_t pid = getpid();
  size_t done = 0;
  while (done < n) {
    struct iovec l = {(char *)dst + done, n - done}, r = {(void *)(src + done), n - done};
    ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);
    if (got > 0) {
      done += (size_t)got;
      continue;
    }
    if (got < 0 && (errno == ENOSYS || errno == EPERM)) {
      memcpy((char *)dst + done, (const void *)(src + done), n - done); /* best effort */
      return n;
    }
    /* This page is gone: zero it and go on with the next one. */
    size_t page_end = ((src + done) | 4095) + 1 - src;
    if (page_end > n) page_end = n;
    memset((char *)dst + done, 0, page_end - done);
    done = page_end;
  }
  return done;
}

/* ---------------------------------------------------------------- ld.so */

static int ldso_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  uintptr_t base = *(uintptr_t *)arg;
  if (info->dlpi_addr != base) return 0;
  for (int i = 0; i < info->dlpi_phnum && roots.nldso < MAX_LDSO_RANGES; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    roots.ldso_lo[roots.nldso] = info->dlpi_addr + ph->p_vaddr;
    roots.ldso_hi[roots.nldso] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
    roots.nldso++;
  }
  return 1;
}

void hci_roots_init(void) {
  hci_lock(&roots.lock);
  if (!atomic_load_explicit(&roots.ready, memory_order_relaxed)) {
    uintptr_t base = getauxval(AT_BASE); /* 0 when statically linked: no loader */
    if (base) dl_iterate_phdr(ldso_cb, &base);
    atomic_store_explicit(&roots.ready, 1, memory_order_release);
  }
  hci_unlock(&roots.lock);
  /* The table holds no heap pointer, but it is a global of ours. */
  hci_roots_exclude((uintptr_t)&roots, (uintptr_t)(&roots + 1));
}

bool hci_pc_in_ldso(uintptr_t pc) {
  if (!atomic_load_explicit(&roots.ready, memory_order_acquire)) return false;
  for (int i = 0; i < roots.nldso; i++)
    if (pc >= roots.ldso_lo[i] && pc < roots.ldso_hi[i]) return true;
  return false;
}

/* roots.c - the root set of a leak check (design decision D12, after LSan):
 * where the flood starts.
 *
 *  - globals: the writable PT_LOAD segments of every loaded module, found
 *    with dl_iterate_phdr (not "every writable mapping" like gperftools: the
 *    allocator's metadata and free memory must never be roots);
 *  - per thread: the registers saved at the stop, the stack from sp - 128
 *    (the red zone) to the stack's end, and the static TLS block with
 *    struct pthread (pthread_setspecific's first-level slots, the DTV
 *    pointer), and the DTV (dynamic TLS blocks; with use_tls); for the
 *    checking thread the stack from the frame saved at
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
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/auxv.h>
#include <sys/uio.h>
#include <unistd.h>

#include "hc_checker.h"
#include "hc_symbolize.h"

#define MAX_LDSO_RANGES 16

static struct {
  hci_lock_t lock;
  _Atomic int nex;
  struct {
    uintptr_t lo, hi;
  } ex[HCI_MAX_EXCLUDED];
  _Atomic int ready;
  int nldso;
  uintptr_t ldso_lo[MAX_LDSO_RANGES], ldso_hi[MAX_LDSO_RANGES];
  /* glibc's list of thread descriptors with a glibc-allocated stack in use
   * (running, or exited and not yet joined): _rtld_global._dl_stack_used,
   * and the offsets of struct pthread's list and tid (libthread_db's
   * exported descriptors); 0 when unknown. */
  uintptr_t stack_used;
  uint32_t pd_list_off, pd_tid_off;
  /* pthread_create's text (dladdr1's symbol size); 0, 0 when unknown. */
  uintptr_t ptc_lo, ptc_hi;
  /* libc's start-up frames on the main thread's stack (set once, before
   * main; see hci_roots_set_start_frames): tp 0 = unknown. */
  uintptr_t start_tp, start_lo, start_hi;
} roots = {.lock = HCI_LOCK_INIT(HC_RANK_ROOTS)};
void hci_roots_fork_locks(hci_lock_fn *each) { each(&roots.lock); } /* as stop_world.c's */
HC_PRIVATE_STATE(roots);

struct sink {
  hci_root_fn fn;
  void *ctx;
  hci_root_kind_t kind;
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
  struct sink s = {fn, ctx, HCI_ROOT_GLOBAL};
  dl_iterate_phdr(globals_cb, &s);
}

/* The C++ runtime's own shared object: libstdc++ (or libc++, libc++abi). */
static bool is_cxx_runtime(const char *path) {
  const char *b = path ? strrchr(path, '/') : NULL;
  b = b ? b + 1 : path;
  if (!b) return false;
  return strncmp(b, "libstdc++.so", 12) == 0 || strncmp(b, "libc++.so", 9) == 0 || strncmp(b, "libc++abi.so", 12) == 0;
}

static int runtime_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  if (!is_cxx_runtime(info->dlpi_name)) return 0;
  return globals_cb(info, size, arg);
}

void hci_roots_runtime(hci_root_fn fn, void *ctx) {
  struct sink s = {fn, ctx, HCI_ROOT_RUNTIME};
  dl_iterate_phdr(runtime_cb, &s);
}

/* ---------------------------------------------------------------- threads */

/* Every writable private anonymous mapping that the allocator does not own:
 * what a thread whose stack we cannot find may keep pointers in. */
static void anon_fallback(const hci_maps_t *maps, hci_root_fn fn, void *ctx) {
  struct sink s = {fn, ctx, HCI_ROOT_ANON_FALLBACK};
  for (int i = 0; i < maps->n; i++) {
    const hci_map_t *m = &maps->v[i];
    uint32_t need = HCI_MAP_R | HCI_MAP_W | HCI_MAP_PRIVATE | HCI_MAP_ANON;
    if ((m->flags & need) != need || !scannable(m)) continue;
    if (hci_heap_owns(m->lo) || hci_heap_owns(m->hi - 1)) continue; /* the heap */
    if (hci_meta_owns && (hci_meta_owns(m->lo) || hci_meta_owns(m->hi - 1))) continue;
    cut(&s, m->lo, m->hi, 0);
  }
}

void hci_roots_threads(const hci_world_t *w, uintptr_t self_sp, hci_root_fn fn, void *ctx) {
  hci_roots_threads_parts(w, self_sp, HCI_ROOTS_THREADS, fn, ctx);
}

/* The main thread's stack between libc's call of main and the kernel's
 * argument block (argc, argv, envp, auxv, strings) holds only libc's start
 * frames: __libc_start_call_main, __libc_start_main, _start.  They keep no
 * object of the program, but their unwritten slots (the cancellation buffer
 * of __libc_start_call_main, alignment holes) keep whatever the start-up
 * code - ld.so, constructors, the first mallocs - left there, and a stale
 * word can reach a leaked block (a constructor's local copy of a pointer; a
 * 4 GiB-aligned address, by its value a pagemap leaf's base, inside a
 * 64 MiB block).  Recorded by
 * start_main (leaks.c), cut from the main thread's stack in every check.
 * argv_lo is &argc: from there up the block stays a root (a program may
 * store heap pointers into argv or envp). */
void hci_roots_set_start_frames(uintptr_t tp, uintptr_t caller_sp, uintptr_t argv_lo) {
  if (caller_sp >= argv_lo || argv_lo - caller_sp > HCI_START_FRAMES_MAX) return;
  roots.start_lo = caller_sp;
  roots.start_hi = argv_lo;
  roots.start_tp = tp;
}

/* A range cut out of a thread's stack scan; empty (lo >= hi) = none. */
typedef struct {
  uintptr_t lo, hi;
} span_t;

/* The stack range [lo, hi) without the two cuts (in any order, possibly
 * empty or overlapping): a thread's static TLS when it sits at the top of
 * its stack (use_tls=0 with use_stacks=1), the main thread's libc start
 * frames. */
static void emit_stack_without(const struct sink *s, const hci_maps_t *maps, uintptr_t lo, uintptr_t hi, span_t a,
                               span_t b) {
  if (b.lo < a.lo) {
    span_t t = a;
    a = b;
    b = t;
  }
  const span_t cuts[2] = {a, b};
  for (int i = 0; i < 2 && lo < hi; i++) {
    if (cuts[i].lo >= cuts[i].hi || cuts[i].hi <= lo) continue;
    emit(s, maps, lo, cuts[i].lo < hi ? cuts[i].lo : hi);
    lo = cuts[i].hi;
  }
  emit(s, maps, lo, hi);
}

/* Dynamic TLS is TLS (use_tls): the thread's DTV is a root, so its blocks
 * (and what they point to) are live.  A DTV that was reallocated on the heap
 * is reached from the TCB as well; this covers the one from ld.so's start-up
 * allocator, which no other root holds. */
static void emit_dtv(const hci_maps_t *maps, uintptr_t tp, hci_root_fn fn, void *ctx) {
  uintptr_t lo, hi;
  if (!hci_tls_dtv_range(tp, &lo, &hi)) return;
  struct sink s = {fn, ctx, HCI_ROOT_DTV};
  emit(&s, maps, lo, hi);
}

void hci_roots_threads_parts(const hci_world_t *w, uintptr_t self_sp, unsigned what, hci_root_fn fn, void *ctx) {
  bool stacks = what & HCI_ROOTS_STACKS, regs = what & HCI_ROOTS_REGISTERS, tls = what & HCI_ROOTS_TLS;
  const hci_maps_t *maps = &w->maps;
  bool fallback = w->incomplete; /* threads we do not know of: their stacks are somewhere */
  for (int i = 0; i < w->nthreads; i++) {
    const hci_thread_t *t = &w->threads[i];
    int state = atomic_load_explicit(&t->state, memory_order_acquire);
    if (state == HCI_T_EXITED) continue;
    uintptr_t tls_lo = 0, tls_hi = 0;
    if (t->tp) hci_tls_range(t->tp, &tls_lo, &tls_hi);
    if (t->stopped) {
      if (regs && t->nregs > 0) fn(ctx, (uintptr_t)&t->regs[0], (uintptr_t)&t->regs[t->nregs], HCI_ROOT_REGISTERS);
      uintptr_t lo = t->stack_lo, hi = t->stack_hi;
      if (t->is_self && self_sp && self_sp >= lo && self_sp < hi) lo = self_sp;
      span_t start = {0, 0}, tls_cut = {0, 0};
      if (t->tp && t->tp == roots.start_tp && roots.start_lo >= t->stack_lo && roots.start_hi <= hi)
        start = (span_t){roots.start_lo, roots.start_hi};
      if (!tls && t->tp) tls_cut = (span_t){tls_lo, tls_hi};
      struct sink s = {fn, ctx, HCI_ROOT_STACK};
      if (!hi) fallback = fallback || stacks;
      else if (stacks) emit_stack_without(&s, maps, lo, hi, tls_cut, start);
      if (stacks && t->on_altstack && t->nstack_hi) {
        /* Interrupted on another stack: the normal one's sp is unknown. */
        struct sink sw = {fn, ctx, HCI_ROOT_STACK_WHOLE};
        emit(&sw, maps, t->nstack_lo, t->nstack_hi);
      }
      bool covered = stacks && tls_lo >= lo && tls_hi <= hi;
      if (tls && t->tp && !covered) {
        struct sink st = {fn, ctx, HCI_ROOT_TLS};
        emit(&st, maps, tls_lo, tls_hi);
      }
      if (tls && t->tp) emit_dtv(maps, t->tp, fn, ctx);
      continue;
    }
    /* Not stopped: it runs, so any part of its stack may be live. */
    hci_warn("thread %d did not stop for the leak check (%s); "
             "%s treated as roots", t->tid,
             w->method == HCI_STOP_SIGNAL ? "it blocks the stop signal or is stuck" : "stuck in the kernel",
             t->stack_hi && t->tp ? "its whole stack and TLS are"
                                  : "its stack is unknown: every anonymous writable mapping is");
    if (stacks && t->stack_hi) {
      struct sink s = {fn, ctx, HCI_ROOT_STACK_WHOLE_RUNNING};
      emit(&s, maps, t->stack_lo, t->stack_hi);
    }
    if (tls && t->tp) {
      struct sink s = {fn, ctx, HCI_ROOT_TLS_RUNNING};
      emit(&s, maps, tls_lo, tls_hi);
      emit_dtv(maps, t->tp, fn, ctx);
    }
    if ((stacks && !t->stack_hi) || (tls && !t->tp)) fallback = true;
  }
  if (fallback) anon_fallback(maps, fn, ctx);
}

/* ---------------------------------------------------------------- mappings */

typedef struct skips {
  int n;
  bool overflow;
  uintptr_t lo[64], hi[64];
} skips_t;

static void skip_add(skips_t *k, const hci_map_t *m, uintptr_t lo, uintptr_t hi) {
  if (lo < m->lo) lo = m->lo;
  if (hi > m->hi) hi = m->hi;
  if (lo >= hi) return;
  if (k->n == 64) {
    k->overflow = true;
    return;
  }
  k->lo[k->n] = lo & ~(uintptr_t)4095;
  k->hi[k->n] = (hi + 4095) & ~(uintptr_t)4095;
  k->n++;
}

/* A stack glibc allocated for a thread (live, exited, or in its cache of
 * stacks) with the mapping's top as its top: struct pthread sits at
 * (hi - sizeof pthread) rounded down to the static TLS alignment and starts
 * with tcbhead_t, whose tcb and self words both point to itself (x86-64).
 * The guard page below keeps the block's mapping to itself. */
/* Whether [a, a + n) is in memory now, in this mapping.  A page that is not
 * is never read where that can be avoided: in a range registered with
 * userfaultfd the read would wait for the program's fault-serving thread,
 * which the check has stopped (the exit check of such a program hung for
 * ever).  mincore answers for a file's page cache (shmem, memfd: a view
 * registered in minor mode has its pages there but not in its page
 * tables), so for a mapping that is not private anonymous memory (anon
 * false) the page tables are asked too (/proc/self/pagemap: present or
 * swapped).  When neither can tell, the page is read as before. */
static bool resident(uintptr_t a, size_t n, bool anon) {
  uintptr_t lo = a & ~(uintptr_t)4095, hi = (a + n + 4095) & ~(uintptr_t)4095;
  unsigned char vec[2] = {1, 1};
  if (hi - lo > sizeof vec * 4096) return true;
  if (mincore((void *)lo, hi - lo, vec) == 0 && (!(vec[0] & 1) || (hi - lo > 4096 && !(vec[1] & 1)))) return false;
  if (anon) return true; /* mincore answered for this mapping's own pages */
  int fd = hci_os_open_proc("pagemap", O_RDONLY);
  if (fd < 0) return true;
  uint64_t e[2] = {~0ull, ~0ull};
  size_t len = (hi - lo) / 4096 * sizeof e[0];
  bool known = pread(fd, e, len, (off_t)(lo / 4096 * sizeof e[0])) == (ssize_t)len;
  close(fd);
  return !known || ((e[0] & (3ull << 62)) && (hi - lo == 4096 || (e[1] & (3ull << 62))));
}

static bool glibc_thread_stack(const hci_map_t *m) {
#if defined(__x86_64__)
  const hci_tls_geometry_t *g = hci_tls_geometry();
  if (m->hi - m->lo < g->pthread_size + 4096) return false;
  for (uintptr_t align = 16; align <= 4096; align <<= 1) {
    uintptr_t pd = (m->hi - g->pthread_size) & ~(align - 1);
    uintptr_t head[3];
    if (pd < m->lo) break;
    if (!resident(pd, sizeof head, (m->flags & (HCI_MAP_ANON | HCI_MAP_PRIVATE)) == (HCI_MAP_ANON | HCI_MAP_PRIVATE))) continue;
    hci_copy_safe(head, pd, sizeof head);
    if (head[0] == pd && head[2] == pd) return true;
  }
  return false;
#else
  (void)m;
  return false; /* glibc's in-use list still names the live and unjoined ones */
#endif
}

// ---- the threads' ranges, sorted ----

/* Address ranges sorted by lo (hci_sort), in memory of hci_os_map's. */
typedef struct {
  uintptr_t lo, hi;
} range_t;
typedef struct {
  range_t *v;
  size_t n, cap, bytes;
  uintptr_t maxlen; /* the longest range: one starting that much below an address may reach it */
} ranges_t;

static bool ranges_init(ranges_t *r, size_t cap) {
  r->n = 0;
  r->cap = cap;
  r->maxlen = 0;
  r->bytes = ((cap ? cap : 1) * sizeof(range_t) + 4095) & ~(size_t)4095;
  r->v = hci_os_map(r->bytes);
  return r->v != NULL;
}

static void ranges_free(ranges_t *r) {
  if (r->v) hci_os_unmap(r->v, r->bytes);
  r->v = NULL;
}

static void ranges_add(ranges_t *r, uintptr_t lo, uintptr_t hi) {
  if (r->n == r->cap) return;
  r->v[r->n++] = (range_t){lo, hi};
  if (hi - lo > r->maxlen) r->maxlen = hi - lo;
}

static int cmp_range(const void *a, const void *b) {
  uintptr_t x = ((const range_t *)a)->lo, y = ((const range_t *)b)->lo;
  return x < y ? -1 : x > y;
}

static void ranges_sort(ranges_t *r) { hci_sort(r->v, r->n, sizeof *r->v, cmp_range); }

/* The first range whose lo is at least a. */
static size_t ranges_first(const ranges_t *r, uintptr_t a) {
  size_t lo = 0, hi = r->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (r->v[mid].lo < a) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* What belongs to threads, for hci_roots_mappings: the live threads'
 * stacks, alternate stacks and TLS blocks, and the descriptors on glibc's
 * in-use list (lo = hi = the descriptor), each sorted, built once per pass
 * over the mappings.  Looked up per mapping, every thread and the whole list
 * (a fault-proof copy per node) were gone through for each one: with 8 000
 * threads the exit check's roots took 0.9 s, with 16 000 4.7 s (adv29). */
typedef struct {
  ranges_t own, pds;
} thread_index_t;

static bool thread_index_build(const hci_world_t *w, thread_index_t *x) {
  x->pds = (ranges_t){0};
  if (!ranges_init(&x->own, 4 * (size_t)w->nthreads)) return false;
  for (int i = 0; i < w->nthreads; i++) {
    const hci_thread_t *t = &w->threads[i];
    if (t->nstack_hi) ranges_add(&x->own, t->nstack_lo, t->nstack_hi);
    if (t->stack_hi) ranges_add(&x->own, t->stack_lo, t->stack_hi);
    if (t->alt_hi) ranges_add(&x->own, t->alt_lo, t->alt_hi);
    if (t->tp) {
      uintptr_t lo, hi;
      hci_tls_range(t->tp, &lo, &hi);
      ranges_add(&x->own, lo, hi);
    }
  }
  ranges_sort(&x->own);
  if (!roots.stack_used) return true;
  if (!ranges_init(&x->pds, 65536)) {
    ranges_free(&x->own);
    return false;
  }
  uintptr_t head = roots.stack_used, node;
  hci_copy_safe(&node, head, sizeof node);
  for (int guard = 0; node && node != head && guard < 65536; guard++) {
    uintptr_t pd = node - roots.pd_list_off;
    ranges_add(&x->pds, pd, pd);
    uintptr_t next = 0;
    hci_copy_safe(&next, node, sizeof next);
    node = next;
  }
  ranges_sort(&x->pds);
  return true;
}

static void thread_index_free(thread_index_t *x) {
  ranges_free(&x->own);
  ranges_free(&x->pds);
}

/* What of m belongs to threads: live threads' stacks, alternate stacks and
 * TLS blocks (scanned from sp by the thread scan: below it is dead), and the
 * stacks of glibc's in-use descriptors (from the mapping's start to the
 * descriptor's end).  With x, looked up there; without (no memory for it),
 * every thread and the whole list. */
static void thread_skips(const hci_world_t *w, const thread_index_t *x, const hci_map_t *m, skips_t *k) {
  if (x) {
    const ranges_t *o = &x->own;
    uintptr_t from = m->lo > o->maxlen ? m->lo - o->maxlen : 0;
    for (size_t i = ranges_first(o, from); i < o->n && o->v[i].lo < m->hi; i++) skip_add(k, m, o->v[i].lo, o->v[i].hi);
    const ranges_t *p = &x->pds;
    const hci_tls_geometry_t *g = hci_tls_geometry();
    for (size_t i = p->v ? ranges_first(p, m->lo) : 0; i < p->n && p->v[i].lo < m->hi; i++)
      skip_add(k, m, m->lo, p->v[i].lo + g->pthread_size);
    return;
  }
  for (int i = 0; i < w->nthreads; i++) {
    const hci_thread_t *t = &w->threads[i];
    if (t->nstack_hi) skip_add(k, m, t->nstack_lo, t->nstack_hi);
    if (t->stack_hi) skip_add(k, m, t->stack_lo, t->stack_hi);
    if (t->alt_hi) skip_add(k, m, t->alt_lo, t->alt_hi);
    if (t->tp) {
      uintptr_t lo, hi;
      hci_tls_range(t->tp, &lo, &hi);
      skip_add(k, m, lo, hi);
    }
  }
  if (!roots.stack_used) return;
  const hci_tls_geometry_t *g = hci_tls_geometry();
  uintptr_t head = roots.stack_used, node;
  hci_copy_safe(&node, head, sizeof node);
  for (int guard = 0; node && node != head && guard < 65536; guard++) {
    uintptr_t pd = node - roots.pd_list_off;
    if (pd >= m->lo && pd < m->hi) skip_add(k, m, m->lo, pd + g->pthread_size);
    uintptr_t next = 0;
    hci_copy_safe(&next, node, sizeof next);
    node = next;
  }
}

/* [lo, hi) overlaps a PT_LOAD segment of a loaded module. */
typedef struct {
  uintptr_t lo, hi;
} range_q_t;

static int module_segment_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  const range_q_t *q = arg;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && lo < q->hi && lo + ph->p_memsz > q->lo) return 1;
  }
  return 0;
}

/* The program's own memory that no other root covers: its private writable
 * mappings, anonymous (pymalloc's arenas, GCC's garbage-collected heap) or
 * of a file (emacs maps its dump file emacs.pdmp so, and relocates the
 * pointers in it; valgrind scans such "rw- mapped file" segments too).  A
 * module's own segments are globals (hci_roots_globals, or nothing when
 * use_globals=0), not mappings; the allocator's mappings and the threads'
 * stacks and TLS are cut out.  Read through copies (flood_roots.c): a file
 * mapping faults past the file's end. */
void hci_roots_mappings(const hci_world_t *w, hci_root_fn fn, void *ctx) {
  const hci_maps_t *maps = &w->maps;
  /* A forgotten mapping of ours would be scanned: metadata holds span starts. */
  if (!hci_os_owned_complete()) return;
  uint32_t need = HCI_MAP_R | HCI_MAP_W | HCI_MAP_PRIVATE;
  thread_index_t index;
  const thread_index_t *x = thread_index_build(w, &index) ? &index : NULL;
  for (int i = 0; i < maps->n; i++) {
    const hci_map_t *m = &maps->v[i];
    if ((m->flags & need) != need || !scannable(m) || (m->flags & HCI_MAP_STACK)) continue;
    struct sink s = {fn, ctx, m->flags & HCI_MAP_ANON ? HCI_ROOT_MAPPING : HCI_ROOT_FILE_MAPPING};
    if (!(m->flags & HCI_MAP_ANON)) {
      range_q_t q = {m->lo, m->hi};
      if (dl_iterate_phdr(module_segment_cb, &q)) continue; /* the loader lock is the check's already */
    }
    if (glibc_thread_stack(m)) continue;
    skips_t k;
    k.n = 0;
    k.overflow = false;
    thread_skips(w, x, m, &k);
    if (k.overflow) continue; /* too many threads in one mapping to tell apart: not scanned */
    /* Page runs that are neither the allocator's (every page of a heap
     * mapping has a pagemap entry; hci_os_map remembers the others) nor in k. */
    uintptr_t run = 0, olo = 0, ohi = 0;
    bool have = hci_os_owned_next(m->lo, &olo, &ohi);
    for (uintptr_t a = m->lo; a < m->hi;) {
      if (have && ohi <= a) have = hci_os_owned_next(a, &olo, &ohi);
      uintptr_t skip_to = 0;
      if (have && olo <= a) skip_to = (ohi + 4095) & ~(uintptr_t)4095;
      else if (hci_heap_owns(a)) skip_to = a + 4096;
      else
        for (int j = 0; j < k.n; j++)
          if (a >= k.lo[j] && a < k.hi[j] && k.hi[j] > skip_to) skip_to = k.hi[j];
      if (skip_to) {
        if (run) cut(&s, run, a, 0);
        run = 0;
        a = skip_to > a ? skip_to : a + 4096;
        continue;
      }
      if (!run) run = a;
      /* Past pages no heap leaf covers, up to the next range to skip. */
      uintptr_t next = hci_heap_none_until(a);
      if (next > a) {
        if (next > m->hi) next = m->hi;
        if (have && olo < next) next = olo;
        for (int j = 0; j < k.n; j++)
          if (k.lo[j] > a && k.lo[j] < next) next = k.lo[j];
        next &= ~(uintptr_t)4095;
      }
      a = next > a ? next : a + 4096;
    }
    if (run) cut(&s, run, m->hi, 0);
  }
  if (x) thread_index_free(&index);
}

/* Whether pd is a live thread's descriptor: in tps (sorted) when there is
 * one, else by a look at every thread (N x N with N threads). */
static bool live_pd(const hci_world_t *w, const ranges_t *tps, uintptr_t pd) {
  if (tps->v) {
    size_t i = ranges_first(tps, pd);
    return i < tps->n && tps->v[i].lo == pd;
  }
  for (int i = 0; i < w->nthreads; i++)
    if (w->threads[i].tp == pd) return true;
  return false;
}

void hci_roots_dead_threads(const hci_world_t *w, hci_root_fn fn, void *ctx) {
  if (!roots.stack_used || !roots.pd_list_off) return;
  const hci_tls_geometry_t *g = hci_tls_geometry();
  ranges_t tps;
  if (ranges_init(&tps, (size_t)w->nthreads)) {
    for (int i = 0; i < w->nthreads; i++) ranges_add(&tps, w->threads[i].tp, w->threads[i].tp);
    ranges_sort(&tps);
  }
  uintptr_t head = roots.stack_used, node;
  hci_copy_safe(&node, head, sizeof node);
  for (int guard = 0; node && node != head && guard < 65536; guard++) {
    uintptr_t pd = node - roots.pd_list_off;
    bool live = live_pd(w, &tps, pd);
    int32_t tid = -1;
    hci_copy_safe(&tid, pd + roots.pd_tid_off, sizeof tid);
    /* Exited, not joined: its descriptor keeps the thread's return value
     * (and start argument) for pthread_join. */
    if (!live && tid == 0) fn(ctx, pd, pd + g->pthread_size, HCI_ROOT_THREAD_DESCRIPTOR);
    uintptr_t next = 0;
    hci_copy_safe(&next, node, sizeof next);
    node = next;
  }
  ranges_free(&tps);
}

/* ---------------------------------------------------------------- unstable ranges */

const char *hci_root_kind_name(hci_root_kind_t kind) {
  switch (kind) {
    case HCI_ROOT_GLOBAL: return "global";
    case HCI_ROOT_RUNTIME: return "runtime";
    case HCI_ROOT_REGISTERS: return "registers";
    case HCI_ROOT_STACK: return "stack";
    case HCI_ROOT_TLS: return "tls";
    case HCI_ROOT_STACK_WHOLE: return "stack-whole";
    case HCI_ROOT_STACK_WHOLE_RUNNING: return "stack-whole-running";
    case HCI_ROOT_TLS_RUNNING: return "tls-running";
    case HCI_ROOT_ANON_FALLBACK: return "anon-fallback";
    case HCI_ROOT_MAPPING: return "mapping";
    case HCI_ROOT_FILE_MAPPING: return "file-mapping";
    case HCI_ROOT_THREAD_DESCRIPTOR: return "thread-descriptor";
    case HCI_ROOT_DTV: return "dtv";
  }
  return "?";
}

size_t hci_copy_safe(void *dst, uintptr_t src, size_t n) {
  /* hci_os_read: process_vm_readv on ourselves (or page probes where that
   * is refused) stops at a page that is gone instead of faulting. */
  size_t done = 0;
  while (done < n) {
    done += hci_os_read((char *)dst + done, src + done, n - done);
    if (done >= n) break;
    /* This page is gone: zero it and go on with the next one. */
    size_t page_end = ((src + done) | 4095) + 1 - src;
    if (page_end > n) page_end = n;
    memset((char *)dst + done, 0, page_end - done);
    done = page_end;
  }
  return n;
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
    /* libthread_db's descriptors are {bits, count, offset}. */
    const uint32_t *used = dlsym(RTLD_DEFAULT, "_thread_db_rtld_global__dl_stack_used");
    const uint32_t *list = dlsym(RTLD_DEFAULT, "_thread_db_pthread_list");
    const uint32_t *tid = dlsym(RTLD_DEFAULT, "_thread_db_pthread_tid");
    const uint32_t *next = dlsym(RTLD_DEFAULT, "_thread_db_list_t_next");
    char *rtld = dlsym(RTLD_DEFAULT, "_rtld_global");
    if (used && list && tid && next && rtld && next[2] == 0 && tid[0] == 32 && list[2] < 65536 && tid[2] < 65536) {
      roots.stack_used = (uintptr_t)rtld + used[2];
      roots.pd_list_off = list[2];
      roots.pd_tid_off = tid[2];
    }
    void *ptc = dlsym(RTLD_DEFAULT, "pthread_create");
    Dl_info di;
    const ElfW(Sym) *sym = NULL;
    if (ptc && dladdr1(ptc, &di, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_size) {
      roots.ptc_lo = (uintptr_t)ptc;
      roots.ptc_hi = (uintptr_t)ptc + sym->st_size;
    }
    atomic_store_explicit(&roots.ready, 1, memory_order_release);
  }
  hci_unlock(&roots.lock);
  /* The table holds no heap pointer, but it is a global of ours. */
  hci_roots_exclude((uintptr_t)&roots, (uintptr_t)(&roots + 1));
}

/* A static executable's libc.a: dlsym cannot see into the executable, so
 * hci_roots_init found neither pthread_create's text nor glibc's list of
 * thread descriptors in use; both come from its symbol table here (the list
 * itself, _dl_stack_used, is a plain variable in a static link; the
 * libthread_db descriptors give the offsets in struct pthread, as in
 * hci_roots_init).  Without them a joined thread's DTV was reported under
 * use_ld_allocations=0, and a thread that had returned a block and was not
 * joined yet had that block reported (LSan's create_thread_leak and
 * high_allocator_contention, linked -static). */
static void static_threads(void) {
  /* The symbolizer keeps one name per address: any of glibc's aliases. */
  static const char *const ptc_names[] = {"pthread_create", "__pthread_create_2_1", "__pthread_create", NULL};
  uintptr_t in = (uintptr_t)&hci_roots_static_loader, lo[1], hi[1];
  if (!roots.ptc_lo && hci_symbolize_func_ranges(in, ptc_names, lo, hi, 1) == 1) {
    hci_lock(&roots.lock);
    roots.ptc_lo = lo[0];
    roots.ptc_hi = hi[0];
    hci_unlock(&roots.lock);
  }
  if (roots.stack_used) return;
  uintptr_t used, list, tid, next;
  if (!hci_symbolize_symbol(in, "_dl_stack_used", &used) || !hci_symbolize_symbol(in, "_thread_db_pthread_list", &list) ||
      !hci_symbolize_symbol(in, "_thread_db_pthread_tid", &tid) || !hci_symbolize_symbol(in, "_thread_db_list_t_next", &next))
    return;
  uint32_t l[3], t[3], n[3]; /* {bits, count, offset} */
  hci_copy_safe(l, list, sizeof l);
  hci_copy_safe(t, tid, sizeof t);
  hci_copy_safe(n, next, sizeof n);
  if (n[2] != 0 || t[0] != 32 || l[2] >= 65536 || t[2] >= 65536) return;
  hci_lock(&roots.lock);
  roots.pd_list_off = l[2];
  roots.pd_tid_off = t[2];
  roots.stack_used = used;
  hci_unlock(&roots.lock);
}

/* In a static executable the loader's code is libc.a's, inside the
 * executable: the functions that allocate thread DTVs and dlopen state at
 * run time, found by name in its symbol table (a stripped executable has
 * none: those objects are then judged like any other). */
void hci_roots_static_loader(void) {
  static const char *const names[] = {"_dl_allocate_tls", "_dl_allocate_tls_init", "allocate_dtv",
                                      "_dl_resize_dtv", "_dl_update_slotinfo", "_dl_add_to_slotinfo",
                                      "_dl_new_object", "_dl_exception_create", "_dl_exception_create_format",
                                      "_dlerror_run", "_dl_signal_error", NULL};
  if (!hci_eh_static_exe()) return;
  static_threads();
  if (roots.nldso) return;
  uintptr_t lo[MAX_LDSO_RANGES], hi[MAX_LDSO_RANGES];
  int n = hci_symbolize_func_ranges((uintptr_t)&hci_roots_static_loader, names, lo, hi, MAX_LDSO_RANGES);
  hci_lock(&roots.lock);
  for (int i = 0; i < n && roots.nldso < MAX_LDSO_RANGES; i++) {
    roots.ldso_lo[roots.nldso] = lo[i];
    roots.ldso_hi[roots.nldso] = hi[i];
    roots.nldso++;
  }
  hci_unlock(&roots.lock);
}

bool hci_stack_in_thread_create(const uintptr_t *pcs, int n) {
  if (!atomic_load_explicit(&roots.ready, memory_order_acquire)) return false;
  for (int i = 0; i < n; i++)
    if (pcs[i] > roots.ptc_lo && pcs[i] <= roots.ptc_hi) return true; /* return addresses: call + 1 */
  return false;
}

bool hci_pc_in_ldso(uintptr_t pc) {
  if (!atomic_load_explicit(&roots.ready, memory_order_acquire)) return false;
  for (int i = 0; i < roots.nldso; i++)
    if (pc >= roots.ldso_lo[i] && pc < roots.ldso_hi[i]) return true;
  return false;
}

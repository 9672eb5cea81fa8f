/* tls_geometry.c - where a thread's static TLS and struct pthread lie,
 * relative to its thread pointer.
 *
 * glibc puts every thread's static TLS (the blocks of modules loaded at
 * start-up plus a surplus for later initial-exec dlopens) and its struct
 * pthread (which holds the first 32 pthread_setspecific slots and the DTV
 * pointer) in one block at fixed offsets from the thread pointer:
 *   x86-64, TLS variant II:  [tp - (static_size - sizeof pthread), tp + sizeof pthread)
 *   aarch64, TLS variant I:  [tp - sizeof pthread, tp + static_size)
 * static_size is glibc's dl_tls_static_size (it includes the TCB), read with
 * _dl_get_tls_static_info; sizeof(struct pthread) is glibc's exported
 * _thread_db_sizeof_pthread (2.34 and later).  Without them the range is
 * estimated from the PT_TLS blocks (dlpi_tls_data) plus glibc's surplus
 * (none in a static executable: its only block is the whole static TLS).
 * Dynamic TLS (dlopen'ed modules using the general-dynamic model) is malloc'd
 * by ld.so and reached through the DTV (hci_tls_dtv_range; see also
 * hci_pc_in_ldso).
 *
 * Invariants: computed once, before any stop (dlsym may malloc on a missing
 * symbol); read-only afterwards, so stopped-world code reads it freely.
 * Locks: init_lock only during the one-time computation.
 */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "hc_checker.h"

#if defined(__aarch64__)
#define PTHREAD_SIZE_FALLBACK 1792
#else
#define PTHREAD_SIZE_FALLBACK 2368
#endif
#define GLIBC_SURPLUS 1664        /* glibc's static TLS surplus for later dlopens (2.32+: at least this) */
#define DTV_ENTRY 16               /* glibc's dtv_t: {void *val; void *to_free} (counter in dtv[-1], dtv[0]) */
#define DTV_MAX_LEN 65536          /* more modules with TLS than this: not a DTV */
#define ESTIMATE_WINDOW ((uintptr_t)1 << 20) /* TLS blocks farther than this from tp are not static */

static struct {
  hci_lock_t init_lock;
  _Atomic int ready;
  hci_tls_geometry_t g;
} tls = {.init_lock = HCI_LOCK_INIT(HC_RANK_TLS_INIT)};
HC_PRIVATE_STATE(tls);

struct estimate {
  uintptr_t tp;
  uintptr_t lowest;   /* variant II: lowest static block start */
  uintptr_t highest;  /* variant I: highest static block end */
};

static int estimate_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  struct estimate *e = arg;
  if (info->dlpi_tls_modid == 0 || info->dlpi_tls_data == NULL) return 0;
  uintptr_t data = (uintptr_t)info->dlpi_tls_data;
#if defined(__aarch64__)
  size_t memsz = 0;
  for (int i = 0; i < info->dlpi_phnum; i++)
    if (info->dlpi_phdr[i].p_type == PT_TLS) memsz = info->dlpi_phdr[i].p_memsz;
  if (data >= e->tp && data - e->tp < ESTIMATE_WINDOW && data + memsz > e->highest) e->highest = data + memsz;
#else
  if (data < e->tp && e->tp - data < ESTIMATE_WINDOW && data < e->lowest) e->lowest = data;
#endif
  return 0;
}

static void compute(hci_tls_geometry_t *g) {
  memset(g, 0, sizeof *g);
  /* A static executable has no dynamic symbols: its dlsym would only fail
   * and leave a dlerror message allocated behind. */
  bool dyn = !hci_eh_static_exe();
  const unsigned *psize = dyn ? dlsym(RTLD_DEFAULT, "_thread_db_sizeof_pthread") : NULL;
  g->pthread_size = psize && *psize >= 512 && *psize <= 65536 ? *psize : PTHREAD_SIZE_FALLBACK;

  void (*get_static)(size_t *, size_t *) = NULL;
  if (dyn) *(void **)&get_static = dlsym(RTLD_DEFAULT, "_dl_get_tls_static_info");
  size_t static_size = 0, align = 0;
  if (get_static) get_static(&static_size, &align);
  if (static_size > g->pthread_size && static_size < ((size_t)16 << 20)) {
    g->exact = true;
    g->static_size = static_size;
  } else {
    struct estimate e = {(uintptr_t)__builtin_thread_pointer(), (uintptr_t)__builtin_thread_pointer(), 0};
    e.highest = e.tp;
    dl_iterate_phdr(estimate_cb, &e);
    /* A static executable's one TLS block is all its static TLS: glibc's
     * surplus (kept for initial-exec dlopens, which a static program does
     * not make in its own namespace) lies between that block and the top of
     * a thread's stack, so counting it would make the stack's top frames -
     * and the dead words below a thread's stack pointer there - part of
     * "TLS", scanned whole (a thread that called exit kept a helper's
     * dead frame alive). */
    bool found = e.lowest < e.tp || e.highest > e.tp;
    size_t surplus = dyn || !found ? GLIBC_SURPLUS : 0;
#if defined(__aarch64__)
    g->static_size = (e.highest - e.tp) + surplus;
#else
    g->static_size = (e.tp - e.lowest) + surplus + g->pthread_size;
#endif
    g->static_size = (g->static_size + 63) & ~(size_t)63;
  }
#if defined(__aarch64__)
  g->lo_off = -(intptr_t)g->pthread_size;
  g->hi_off = (intptr_t)g->static_size;
#else
  g->lo_off = -(intptr_t)(g->static_size - g->pthread_size);
  g->hi_off = (intptr_t)g->pthread_size;
#endif
}

void hci_tls_fork_locks(hci_lock_fn *each) { each(&tls.init_lock); } /* as stop_world.c's */

void hci_tls_init(void) {
  if (atomic_load_explicit(&tls.ready, memory_order_acquire)) return;
  hci_lock(&tls.init_lock);
  if (!atomic_load_explicit(&tls.ready, memory_order_relaxed)) {
    compute(&tls.g);
    atomic_store_explicit(&tls.ready, 1, memory_order_release);
  }
  hci_unlock(&tls.init_lock);
}

const hci_tls_geometry_t *hci_tls_geometry(void) {
  HC_CHECK(atomic_load_explicit(&tls.ready, memory_order_acquire), "TLS geometry used before hci_tls_init");
  return &tls.g;
}

void hci_tls_range(uintptr_t tp, uintptr_t *lo, uintptr_t *hi) {
  const hci_tls_geometry_t *g = hci_tls_geometry();
  *lo = tp + (uintptr_t)g->lo_off;
  *hi = tp + (uintptr_t)g->hi_off;
}

/* glibc's tcbhead_t holds the DTV pointer: at tp + 8 on x86-64 (tcb, dtv,
 * self, ...), at tp on aarch64 (TLS variant I: dtv, private).  dtv[-1].counter
 * is the number of entries after dtv[0]; unallocated entries hold
 * TLS_DTV_UNALLOCATED (-1), which points nowhere, so the whole vector is
 * scanned as is.  The main thread's first DTV comes from ld.so's start-up
 * allocator (not the heap, no module's data): no other root covers it. */
bool hci_tls_dtv_range(uintptr_t tp, uintptr_t *lo, uintptr_t *hi) {
#if defined(__x86_64__)
  uintptr_t slot = tp + sizeof(void *);
#elif defined(__aarch64__)
  uintptr_t slot = tp;
#else
  (void)tp, (void)lo, (void)hi;
  return false;
#endif
#if defined(__x86_64__) || defined(__aarch64__)
  uintptr_t dtv = 0, len = 0;
  hci_copy_safe(&dtv, slot, sizeof dtv);
  if (dtv < 4096 + DTV_ENTRY || (dtv & (sizeof(void *) - 1))) return false;
  hci_copy_safe(&len, dtv - DTV_ENTRY, sizeof len);
  if (len == 0 || len > DTV_MAX_LEN) return false;
  *lo = dtv - DTV_ENTRY;
  *hi = dtv + DTV_ENTRY * (len + 1);
  return true;
#endif
}

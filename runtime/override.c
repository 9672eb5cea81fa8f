/* override.c - every exported allocation symbol: the C malloc family, the
 * glibc __libc_* aliases, and the Itanium-mangled C++ operators new/delete
 * (defined from C by their mangled names).  Any pointer from any of them is
 * accepted by all the others.
 *
 * The fast paths are inlined here from alloc_inline.h.  This file is built
 * without frame pointers (meson.build) so the hot entry points are frameless
 * leaf functions that tail-jump to their slow paths; a slow path reached
 * with ra == 0 takes its own return address, which is then the user's call
 * site.  Entry points that call a slow path normally pass HC_RA() instead.
 * Recorded stacks therefore start at the user's code.
 * glibc semantics throughout (see tests/test_malloc_api.c).  This is one of
 * the few files allowed to know about libc/ABI specifics. */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc_inline.h"
#include "hc_runtime.h"
#include "heapcheck.h"
#include "usdt.h"

#define SYS_PAGE 4096

/* The process start-up (init.c) is registered here, next to malloc: a
 * static link pulls this file in for malloc, and with it the start-up,
 * the constructor and every layer they initialise. */
HC_STARTUP(hci_runtime_start);

hc_public void *malloc(size_t size) { return hc_malloc_fast(size, 0); }

hc_public void free(void *p) { hc_free_fast(p, 0); }

hc_public void cfree(void *p) { hc_free_fast(p, 0); }

hc_public void *calloc(size_t n, size_t size) {
  size_t total;
  if (hc_unlikely(__builtin_mul_overflow(n, size, &total))) return hci_calloc_ra(n, size, HC_RA());
  return hc_calloc_fast(total, 0); /* the slow path by a tail call, as malloc's */
}

hc_public void *realloc(void *p, size_t size) { return hci_realloc_ra(p, size, HC_RA()); }

hc_public void *reallocarray(void *p, size_t n, size_t size) {
  size_t total;
  if (__builtin_mul_overflow(n, size, &total)) {
    errno = ENOMEM;
    return NULL;
  }
  return hci_realloc_ra(p, total, HC_RA());
}

static bool is_pow2(size_t x) { return x && !(x & (x - 1)); }

hc_public int posix_memalign(void **out, size_t align, size_t size) {
  if (!is_pow2(align) || align % sizeof(void *)) return EINVAL;
  /* On failure errno is left at ENOMEM, as glibc's (programs written
   * against glibc test errno after a failed posix_memalign). */
  void *p = hci_memalign_ra(align, size, HC_RA());
  if (!p) return ENOMEM;
  *out = p;
  return 0;
}

hc_public void *aligned_alloc(size_t align, size_t size) {
  if (!is_pow2(align)) {
    errno = EINVAL;
    return NULL;
  }
  return hci_memalign_ra(align, size, HC_RA());
}

hc_public void *memalign(size_t align, size_t size) {
  /* glibc: a non-power-of-two alignment is rounded up to the next power;
   * only one above 2^63 (no power of two to round to) is EINVAL, 2^63
   * itself fails with ENOMEM like any request that cannot be met. */
  if (align > SIZE_MAX / 2 + 1) {
    errno = EINVAL;
    return NULL;
  }
  size_t a = 1;
  while (a < align) a <<= 1;
  return hci_memalign_ra(a, size, HC_RA());
}

hc_public void *valloc(size_t size) { return hci_memalign_ra(SYS_PAGE, size, HC_RA()); }

hc_public void *pvalloc(size_t size) {
  size_t rounded = (size + SYS_PAGE - 1) & ~(size_t)(SYS_PAGE - 1);
  if (rounded < size) {
    errno = ENOMEM;
    return NULL;
  }
  if (rounded == 0) rounded = SYS_PAGE;
  return hci_memalign_ra(SYS_PAGE, rounded, HC_RA());
}

hc_public size_t malloc_usable_size(void *p) { return hci_usable_size(p); }

/* C23 */
hc_public void free_sized(void *p, size_t size) {
  (void)size;
  hc_free_fast(p, HC_RA());
}
hc_public void free_aligned_sized(void *p, size_t align, size_t size) {
  (void)align;
  (void)size;
  hc_free_fast(p, HC_RA());
}

// ---- glibc internal names (used by some programs and by glibc itself) ----
/* The aliases share the targets' code; gcc wants the header's attributes
 * repeated on them, which adds nothing here. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmissing-attributes"
#endif

hc_public void *__libc_malloc(size_t size) __attribute__((alias("malloc")));
hc_public void __libc_free(void *p) __attribute__((alias("free")));
hc_public void *__libc_calloc(size_t n, size_t size) __attribute__((alias("calloc")));
hc_public void *__libc_realloc(void *p, size_t size) __attribute__((alias("realloc")));
hc_public void *__libc_memalign(size_t align, size_t size) __attribute__((alias("memalign")));
hc_public void *__libc_valloc(size_t size) __attribute__((alias("valloc")));
hc_public void *__libc_pvalloc(size_t size) __attribute__((alias("pvalloc")));
hc_public int __posix_memalign(void **out, size_t align, size_t size) __attribute__((alias("posix_memalign")));

// ---- statistics and tuning ----

hc_public struct mallinfo2 mallinfo2(void) {
  hc_stats_t st;
  hci_stats_get(&st);
  struct mallinfo2 mi;
  memset(&mi, 0, sizeof mi);
  mi.arena = st.heap_mapped;
  mi.hblkhd = st.large_in_use;
  mi.uordblks = st.in_use;
  mi.fordblks = st.page_heap_free + st.central_free + st.thread_cache_free;
  mi.fsmblks = st.central_free + st.thread_cache_free;
  mi.keepcost = st.page_heap_free;
  mi.ordblks = st.thread_caches;
  return mi;
}

static int clamp_int(size_t v) { return v > 0x7fffffff ? 0x7fffffff : (int)v; }

hc_public struct mallinfo mallinfo(void) {
  struct mallinfo2 m2 = mallinfo2();
  struct mallinfo mi;
  mi.arena = clamp_int(m2.arena);
  mi.ordblks = clamp_int(m2.ordblks);
  mi.smblks = clamp_int(m2.smblks);
  mi.hblks = clamp_int(m2.hblks);
  mi.hblkhd = clamp_int(m2.hblkhd);
  mi.usmblks = clamp_int(m2.usmblks);
  mi.fsmblks = clamp_int(m2.fsmblks);
  mi.uordblks = clamp_int(m2.uordblks);
  mi.fordblks = clamp_int(m2.fordblks);
  mi.keepcost = clamp_int(m2.keepcost);
  return mi;
}

hc_public void malloc_stats(void) { hci_stats_print(2); }

hc_public int malloc_trim(size_t pad) {
  (void)pad;
  return hci_alloc_trim();
}

/* Accepted and ignored (heapcheck tunes itself), but fired as glibc's
 * probes: memory_mallopt(param, value), then the parameter's own probe with
 * (new, old) or (new, old, glibc's no_dyn_threshold before the call); "old"
 * is the value the program set last, else glibc's default.  Lock-free: a
 * racing pair of calls may both report the same old value. */
static struct {
  int mxfast, trim, top_pad, mmap_thr, mmap_max, perturb, arena_test, arena_max, no_dyn;
} mo = {128, 128 * 1024, 0, 128 * 1024, 65536, 0, 8, 0, 0};

hc_public int mallopt(int param, int value) {
  HC_USDT_I2(memory_mallopt, param, value);
  int old;
  /* Each parameter: the old value kept, its probe fired with (new, old), and
   * for the four glibc stops adjusting dynamically, with no_dyn before the call. */
#define HC_MO(param, field, probe) \
  case param: old = mo.field, mo.field = value; HC_USDT_I2(probe, value, old); break;
#define HC_MO_FIXED(param, field, probe) \
  case param: old = mo.field, mo.field = value; HC_USDT_I3(probe, value, old, mo.no_dyn); mo.no_dyn = 1; break;
  /* glibc refuses a fast-bin limit above its MAX_FAST_SIZE (80 * sizeof(size_t) / 4,
   * negative values too) and keeps the old one: 0, as it returns. */
  if (param == M_MXFAST && (unsigned long)(long)value > 80 * sizeof(size_t) / 4) return 0;
  switch (param) {
    HC_MO(M_MXFAST, mxfast, memory_mallopt_mxfast)
    HC_MO_FIXED(M_TRIM_THRESHOLD, trim, memory_mallopt_trim_threshold)
    HC_MO_FIXED(M_TOP_PAD, top_pad, memory_mallopt_top_pad)
    HC_MO_FIXED(M_MMAP_THRESHOLD, mmap_thr, memory_mallopt_mmap_threshold)
    HC_MO_FIXED(M_MMAP_MAX, mmap_max, memory_mallopt_mmap_max)
    HC_MO(M_PERTURB, perturb, memory_mallopt_perturb)
    HC_MO(M_ARENA_TEST, arena_test, memory_mallopt_arena_test)
    HC_MO(M_ARENA_MAX, arena_max, memory_mallopt_arena_max)
    default:
      break;
  }
#undef HC_MO
#undef HC_MO_FIXED
  return 1;
}
/* glibc's internal names of the two, which some programs call. */
hc_public struct mallinfo __libc_mallinfo(void) __attribute__((alias("mallinfo")));
hc_public int __libc_mallopt(int param, int value) __attribute__((alias("mallopt")));

/* glibc's malloc_info XML layout (one heap: ours), so tools that parse it
 * keep working, with what heapcheck has: free objects per size class (the
 * central lists and transfer caches; thread caches are counted in the
 * totals), free and released pages, and a <heapcheck> element with the
 * numbers of hc_get_stats.  Called by the program, outside the allocator:
 * it may use stdio (fprintf may allocate, which is then ours).  As glibc:
 * options must be 0, else EINVAL is returned. */
hc_public int malloc_info(int options, FILE *fp) {
  if (options != 0) return EINVAL;
  if (!fp) return EINVAL;
  hc_stats_t st;
  hci_stats_get(&st);
  size_t free_count = 0, free_bytes = 0;
  fprintf(fp, "<malloc version=\"1\">\n<heap nr=\"0\">\n<sizes>\n");
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) {
    size_t n = hci_central_free_objects(c), size = hci_classes[c].size;
    if (!n) continue;
    fprintf(fp, "  <size from=\"%zu\" to=\"%zu\" total=\"%zu\" count=\"%zu\"/>\n",
            c > 1 ? (size_t)hci_classes[c - 1].size + 1 : 1, size, n * size, n);
    free_count += n;
    free_bytes += n * size;
  }
  size_t rest = free_bytes + st.thread_cache_free + st.page_heap_free;
  fprintf(fp, "</sizes>\n<total type=\"fast\" count=\"0\" size=\"0\"/>\n");
  fprintf(fp, "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n", free_count, rest);
  fprintf(fp, "<system type=\"current\" size=\"%zu\"/>\n<system type=\"max\" size=\"%zu\"/>\n",
          st.heap_mapped - st.heap_released, st.heap_mapped);
  fprintf(fp, "<aspace type=\"total\" size=\"%zu\"/>\n<aspace type=\"mprotect\" size=\"%zu\"/>\n</heap>\n",
          st.heap_mapped, st.heap_mapped);
  fprintf(fp, "<total type=\"fast\" count=\"0\" size=\"0\"/>\n");
  fprintf(fp, "<total type=\"rest\" count=\"%zu\" size=\"%zu\"/>\n", free_count, rest);
  fprintf(fp, "<total type=\"mmap\" count=\"0\" size=\"0\"/>\n");
  fprintf(fp, "<system type=\"current\" size=\"%zu\"/>\n<system type=\"max\" size=\"%zu\"/>\n",
          st.heap_mapped - st.heap_released, st.heap_mapped);
  fprintf(fp, "<aspace type=\"total\" size=\"%zu\"/>\n<aspace type=\"mprotect\" size=\"%zu\"/>\n",
          st.heap_mapped, st.heap_mapped);
  fprintf(fp,
          "<heapcheck in_use=\"%zu\" small_in_use=\"%zu\" large_in_use=\"%zu\" page_heap_free=\"%zu\" "
          "released=\"%zu\" central_free=\"%zu\" thread_cache_free=\"%zu\" metadata=\"%zu\" "
          "thread_caches=\"%zu\" sampled_objects=\"%zu\" stacks=\"%zu\"/>\n</malloc>\n",
          st.in_use, st.small_in_use, st.large_in_use, st.page_heap_free, st.heap_released, st.central_free,
          st.thread_cache_free, st.metadata, st.thread_caches, st.sampled_objects, st.stacks);
  return 0;
}

typedef void (*new_handler_t)(void);
/* A weak reference: the C++ runtime's, when the program has one. */
extern new_handler_t _ZSt15get_new_handlerv(void) __attribute__((weak));

/* tc_set_new_mode(1): malloc, calloc, realloc and memalign call the C++
 * new-handler when they fail, as operator new does, until one succeeds or
 * no handler is installed (then NULL and ENOMEM), as tcmalloc.  The retry
 * inside runs with in_new_mode_retry set, so a failing retry returns NULL to
 * this loop instead of starting another; tc_malloc_skip_new_handler sets it
 * too. */
static __thread int in_new_mode_retry;
static int new_mode;

static void *new_mode_oom(size_t size, size_t align, bool zero) {
  for (;;) {
    new_handler_t h = in_new_mode_retry || !_ZSt15get_new_handlerv ? NULL : _ZSt15get_new_handlerv();
    if (!h) {
      errno = ENOMEM;
      return NULL;
    }
    h(); /* may throw, may free memory, may install another handler */
    in_new_mode_retry = 1;
    void *p = zero ? hci_calloc_ra(1, size, 0) : align > 16 ? hci_memalign_ra(align, size, 0) : hci_malloc_ra(size, 0);
    in_new_mode_retry = 0;
    if (p) return p;
  }
}

hc_public int tc_set_new_mode(int flag) {
  int old = __atomic_exchange_n(&new_mode, flag, __ATOMIC_ACQ_REL);
  hci_alloc_set_oom_handler(flag ? new_mode_oom : NULL);
  return old;
}

hc_public void *tc_malloc_skip_new_handler(size_t size) {
  int was = in_new_mode_retry;
  in_new_mode_retry = 1;
  void *p = hci_malloc_ra(size, HC_RA());
  in_new_mode_retry = was;
  return p;
}

// ---- gperftools' tc_* entry points (<gperftools/tcmalloc.h>) ----
/* The same functions under tcmalloc's names (aliases: one body, the same
 * recorded call sites).  tc_version: malloc_ext.c. */
#define HC_TC_ALIAS(ret, name, target, params) hc_public ret name params __attribute__((alias(#target)))
HC_TC_ALIAS(void *, tc_malloc, malloc, (size_t size));
HC_TC_ALIAS(void, tc_free, free, (void *p));
HC_TC_ALIAS(void, tc_free_sized, free_sized, (void *p, size_t size));
HC_TC_ALIAS(void, tc_free_aligned_sized, free_aligned_sized, (void *p, size_t align, size_t size));
HC_TC_ALIAS(void *, tc_realloc, realloc, (void *p, size_t size));
HC_TC_ALIAS(void *, tc_calloc, calloc, (size_t n, size_t size));
HC_TC_ALIAS(void, tc_cfree, cfree, (void *p));
HC_TC_ALIAS(void *, tc_memalign, memalign, (size_t align, size_t size));
HC_TC_ALIAS(int, tc_posix_memalign, posix_memalign, (void **out, size_t align, size_t size));
HC_TC_ALIAS(void *, tc_valloc, valloc, (size_t size));
HC_TC_ALIAS(void *, tc_pvalloc, pvalloc, (size_t size));
HC_TC_ALIAS(void, tc_malloc_stats, malloc_stats, (void));
HC_TC_ALIAS(int, tc_mallopt, mallopt, (int param, int value));
HC_TC_ALIAS(struct mallinfo, tc_mallinfo, mallinfo, (void));
HC_TC_ALIAS(struct mallinfo2, tc_mallinfo2, mallinfo2, (void));

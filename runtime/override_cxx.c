/* override_cxx.c - the Itanium-mangled C++ operators new and delete
 * (defined from C by their mangled names) and their tcmalloc names: the
 * part of override.c that only a C++ program calls, in a file of its own so
 * that libheapcheck.a links it only into those (the references to the C++
 * runtime below are strong there).  Built as override.c is (meson.build:
 * no frame pointers, -fexceptions). */
#include <dlfcn.h>
#include <stdint.h>

#include "alloc_inline.h"
#include "hc_runtime.h"

typedef void (*new_handler_t)(void);
/* In the shared library weak references (not definitions): when the
 * program has libstdc++ these resolve to it; a weak definition here would
 * win over the real one when the library is preloaded.  In the archive
 * (HC_ARCHIVE) this file is a member of its own, linked only into a program
 * that calls operator new, which has a C++ runtime: strong references, or a
 * static link would leave std::__throw_bad_alloc out (a weak reference pulls
 * no archive member) and operator new could not throw. */
#ifdef HC_ARCHIVE
#define HC_CXX_REF
#define HC_HAS_CXX(f) 1
#else
#define HC_CXX_REF __attribute__((weak))
#define HC_HAS_CXX(f) ((f) != NULL)
#endif
extern new_handler_t _ZSt15get_new_handlerv(void) HC_CXX_REF;
extern void _ZSt17__throw_bad_allocv(void) HC_CXX_REF __attribute__((noreturn));
/* std::nothrow is an empty object: any address stands for it. */
static const char std_nothrow;

/* The C++ runtime's own nothrow operator of that name, which is
 * `try { return ::operator new(size...); } catch (...) { return nullptr; }`
 * and so calls our throwing operator inside a catch: C cannot catch, and a
 * nothrow operator that calls the new-handler (as the standard says it
 * must) needs one, because the handler may throw.  The next definition
 * after ours (libstdc++'s or libc++'s: they come after a preloaded or
 * -lheapcheck library, and after an executable heapcheck is linked into);
 * NULL when there is none (static libstdc++) or it is ours.  dlsym may
 * allocate: we are on the failure path of a large request, with the
 * handler about to run, and an allocation that fails here only means NULL. */
typedef void (*nothrow_fn)(void);
typedef void *(*nothrow_plain_fn)(size_t, const void *);
typedef void *(*nothrow_aligned_fn)(size_t, size_t, const void *);
static nothrow_fn cxx_runtime_nothrow(const char *name, nothrow_fn self) {
  nothrow_fn f = (nothrow_fn)(uintptr_t)dlsym(RTLD_NEXT, name);
  return f == self ? NULL : f;
}

/* The archive (HC_ARCHIVE, libheapcheck.a) defines no nothrow operator new:
 * in a static link the C++ runtime's own (libstdc++.a's, around our
 * throwing operator in a try block) is linked instead, and catches the
 * new-handler's exception, which no C definition can; in a dynamic one the
 * shared libstdc++'s is used.  Here they are weak references then. */
#ifdef HC_ARCHIVE
#define HC_NOTHROW_DECL __attribute__((weak))
#else
#define HC_NOTHROW_DECL hc_public
#endif
HC_NOTHROW_DECL void *_ZnwmRKSt9nothrow_t(size_t size, const void *nt);
HC_NOTHROW_DECL void *_ZnamRKSt9nothrow_t(size_t size, const void *nt);
HC_NOTHROW_DECL void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt);
HC_NOTHROW_DECL void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt);

/* What the operators new do when their allocation has failed (the fail
 * argument of hci_alloc_slow_or and hci_memalign_slow_or, which made the
 * first attempt): the new-handler loop, std::bad_alloc or the nothrow
 * forms' nullptr.  Not a second attempt before the handler: a request
 * above LSAN_OPTIONS max_allocation_size_mb warned twice for one failure. */
static hc_noinline void *new_slow(size_t size, size_t align, int nothrow_form, uintptr_t ra) {
  static const char *const nothrow_names[] = {NULL, "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
                                              "_ZnwmSt11align_val_tRKSt9nothrow_t",
                                              "_ZnamSt11align_val_tRKSt9nothrow_t"};
  static _Atomic(nothrow_fn) runtime_nothrow[5];
  for (;;) {
    new_handler_t h = HC_HAS_CXX(_ZSt15get_new_handlerv) ? _ZSt15get_new_handlerv() : NULL;
    if (nothrow_form) {
      /* [new.delete.single]: the nothrow forms behave as the throwing ones
       * (the new-handler loop) and return nullptr where those throw. */
      if (!h) return NULL;
      nothrow_fn f = atomic_load_explicit(&runtime_nothrow[nothrow_form], memory_order_relaxed);
      if (!f) {
        static const nothrow_fn ours[] = {NULL, (nothrow_fn)(uintptr_t)_ZnwmRKSt9nothrow_t,
                                          (nothrow_fn)(uintptr_t)_ZnamRKSt9nothrow_t,
                                          (nothrow_fn)(uintptr_t)_ZnwmSt11align_val_tRKSt9nothrow_t,
                                          (nothrow_fn)(uintptr_t)_ZnamSt11align_val_tRKSt9nothrow_t};
        f = cxx_runtime_nothrow(nothrow_names[nothrow_form], ours[nothrow_form]);
        atomic_store_explicit(&runtime_nothrow[nothrow_form], f, memory_order_relaxed);
      }
      if (f)
        return nothrow_form >= 3 ? ((nothrow_aligned_fn)f)(size, align, &std_nothrow)
                                 : ((nothrow_plain_fn)f)(size, &std_nothrow);
      /* No runtime to catch for us (libheapcheck.a in a static C++ program
       * that calls tc_new_nothrow but never the runtime's own nothrow
       * operator, which is then not linked): the handler is called here,
       * and an exception it throws goes to the caller. */
    } else if (!h) {
      if (HC_HAS_CXX(_ZSt17__throw_bad_allocv)) _ZSt17__throw_bad_allocv();
      hci_fatal("operator new(%zu): out of memory and no C++ runtime to throw std::bad_alloc", size);
    }
    h(); /* may throw, may free memory, may install another handler */
    void *p = align > 16 ? hci_memalign_ra(align, size, ra) : hci_malloc_ra(size, ra);
    if (p) return p;
  }
}

/* What operator new does when the slow path fails (hci_alloc_slow_or). */
static void *new_fail(size_t size, size_t align, uintptr_t ra) { return new_slow(size, align, 0, ra); }

/* operator new(size_t), new[](size_t): malloc's fast path, and its slow
 * path reached by a tail call as malloc's is, new_fail called from there:
 * in checker mode the stack capture finds the program's return address in
 * the slow path's frame record (alloc_inline.h, hci_alloc_slow_or). */
hc_public void *_Znwm(size_t size) { return hc_malloc_fast_or(size, 0, new_fail); }
hc_public void *_Znam(size_t size) { return hc_malloc_fast_or(size, 0, new_fail); }
/* nothrow variants: the same, new_slow's nothrow forms when the slow path fails */
static void *new_nothrow_fail(size_t size, size_t align, uintptr_t ra) { return new_slow(size, align, 1, ra); }
static void *new_arr_nothrow_fail(size_t size, size_t align, uintptr_t ra) { return new_slow(size, align, 2, ra); }
/* The aligned forms (a program asks for alignments above 16 only): a
 * small block of an alignment up to 1 KiB by malloc's fast path at the
 * rounded size (hc_aligned_fast_size), its failure fail's at that size,
 * whose retries are then of an aligned class too; else the allocation
 * tail-called for the same frame record as above (alloc_inline.h,
 * hci_memalign_slow_or).  Their nothrow forms' failure. */
#define HC_NEW_ALIGNED(size, align, fail)                                                                     \
  do {                                                                                                        \
    size_t up_ = (align) > 16 ? hc_aligned_fast_size(size, align) : 0;                                        \
    return up_ ? hc_malloc_fast_or(up_, 0, fail) : hci_memalign_slow_or(size, align, fail);                  \
  } while (0)
static void *new_al_nothrow_fail(size_t size, size_t align, uintptr_t ra) { return new_slow(size, align, 3, ra); }
static void *new_arr_al_nothrow_fail(size_t size, size_t align, uintptr_t ra) { return new_slow(size, align, 4, ra); }
#ifndef HC_ARCHIVE
hc_public void *_ZnwmRKSt9nothrow_t(size_t size, const void *nt) {
  (void)nt;
  return hc_malloc_fast_or(size, 0, new_nothrow_fail);
}
hc_public void *_ZnamRKSt9nothrow_t(size_t size, const void *nt) {
  (void)nt;
  return hc_malloc_fast_or(size, 0, new_arr_nothrow_fail);
}
hc_public void *_ZnwmSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt) {
  (void)nt;
  HC_NEW_ALIGNED(size, align, new_al_nothrow_fail);
}
hc_public void *_ZnamSt11align_val_tRKSt9nothrow_t(size_t size, size_t align, const void *nt) {
  (void)nt;
  HC_NEW_ALIGNED(size, align, new_arr_al_nothrow_fail);
}
#else
/* tcmalloc's names for them: the C++ runtime's when the program has one,
 * else ours (a C program: no new-handler to throw). */
hc_public void *tc_new_nothrow(size_t size, const void *nt) {
  return _ZnwmRKSt9nothrow_t ? _ZnwmRKSt9nothrow_t(size, nt) : hc_malloc_fast_or(size, 0, new_nothrow_fail);
}
hc_public void *tc_newarray_nothrow(size_t size, const void *nt) {
  return _ZnamRKSt9nothrow_t ? _ZnamRKSt9nothrow_t(size, nt) : hc_malloc_fast_or(size, 0, new_arr_nothrow_fail);
}
hc_public void *tc_new_aligned_nothrow(size_t size, size_t align, const void *nt) {
  return _ZnwmSt11align_val_tRKSt9nothrow_t ? _ZnwmSt11align_val_tRKSt9nothrow_t(size, align, nt)
                                            : hci_memalign_slow_or(size, align, new_al_nothrow_fail);
}
hc_public void *tc_newarray_aligned_nothrow(size_t size, size_t align, const void *nt) {
  return _ZnamSt11align_val_tRKSt9nothrow_t ? _ZnamSt11align_val_tRKSt9nothrow_t(size, align, nt)
                                            : hci_memalign_slow_or(size, align, new_arr_al_nothrow_fail);
}
#endif
/* aligned (std::align_val_t is a size_t enum) */
hc_public void *_ZnwmSt11align_val_t(size_t size, size_t align) { HC_NEW_ALIGNED(size, align, new_fail); }
hc_public void *_ZnamSt11align_val_t(size_t size, size_t align) { HC_NEW_ALIGNED(size, align, new_fail); }

/* operator delete: plain, array, sized, nothrow, aligned - all free(). */
hc_public void _ZdlPv(void *p) { hc_free_fast(p, 0); }
hc_public void _ZdaPv(void *p) { hc_free_fast(p, 0); }
/* The other ten ignore what they are told besides the pointer. */
#define HC_DELETE(name, ...) \
  hc_public void name(void *p, __VA_ARGS__) { hc_free_fast(p, 0); }
HC_DELETE(_ZdlPvm, size_t n hc_unused)
HC_DELETE(_ZdaPvm, size_t n hc_unused)
HC_DELETE(_ZdlPvRKSt9nothrow_t, const void *nt hc_unused)
HC_DELETE(_ZdaPvRKSt9nothrow_t, const void *nt hc_unused)
HC_DELETE(_ZdlPvSt11align_val_t, size_t a hc_unused)
HC_DELETE(_ZdaPvSt11align_val_t, size_t a hc_unused)
HC_DELETE(_ZdlPvmSt11align_val_t, size_t n hc_unused, size_t a hc_unused)
HC_DELETE(_ZdaPvmSt11align_val_t, size_t n hc_unused, size_t a hc_unused)
HC_DELETE(_ZdlPvSt11align_val_tRKSt9nothrow_t, size_t a hc_unused, const void *nt hc_unused)
HC_DELETE(_ZdaPvSt11align_val_tRKSt9nothrow_t, size_t a hc_unused, const void *nt hc_unused)
#undef HC_DELETE

// ---- tcmalloc's names for them (<gperftools/tcmalloc.h>; aliases, as override.c's) ----
#define HC_TC_ALIAS(ret, name, target, params) hc_public ret name params __attribute__((alias(#target)))
HC_TC_ALIAS(void *, tc_new, _Znwm, (size_t size));
HC_TC_ALIAS(void *, tc_newarray, _Znam, (size_t size));
#ifndef HC_ARCHIVE
HC_TC_ALIAS(void *, tc_new_nothrow, _ZnwmRKSt9nothrow_t, (size_t size, const void *nt));
HC_TC_ALIAS(void *, tc_newarray_nothrow, _ZnamRKSt9nothrow_t, (size_t size, const void *nt));
#endif
HC_TC_ALIAS(void, tc_delete, _ZdlPv, (void *p));
HC_TC_ALIAS(void, tc_deletearray, _ZdaPv, (void *p));
HC_TC_ALIAS(void, tc_delete_sized, _ZdlPvm, (void *p, size_t n));
HC_TC_ALIAS(void, tc_deletearray_sized, _ZdaPvm, (void *p, size_t n));
HC_TC_ALIAS(void, tc_delete_nothrow, _ZdlPvRKSt9nothrow_t, (void *p, const void *nt));
HC_TC_ALIAS(void, tc_deletearray_nothrow, _ZdaPvRKSt9nothrow_t, (void *p, const void *nt));
HC_TC_ALIAS(void *, tc_new_aligned, _ZnwmSt11align_val_t, (size_t size, size_t align));
HC_TC_ALIAS(void *, tc_newarray_aligned, _ZnamSt11align_val_t, (size_t size, size_t align));
#ifndef HC_ARCHIVE
HC_TC_ALIAS(void *, tc_new_aligned_nothrow, _ZnwmSt11align_val_tRKSt9nothrow_t,
            (size_t size, size_t align, const void *nt));
HC_TC_ALIAS(void *, tc_newarray_aligned_nothrow, _ZnamSt11align_val_tRKSt9nothrow_t,
            (size_t size, size_t align, const void *nt));
#endif
HC_TC_ALIAS(void, tc_delete_aligned, _ZdlPvSt11align_val_t, (void *p, size_t a));
HC_TC_ALIAS(void, tc_deletearray_aligned, _ZdaPvSt11align_val_t, (void *p, size_t a));
HC_TC_ALIAS(void, tc_delete_sized_aligned, _ZdlPvmSt11align_val_t, (void *p, size_t n, size_t a));
HC_TC_ALIAS(void, tc_deletearray_sized_aligned, _ZdaPvmSt11align_val_t, (void *p, size_t n, size_t a));
HC_TC_ALIAS(void, tc_delete_aligned_nothrow, _ZdlPvSt11align_val_tRKSt9nothrow_t,
            (void *p, size_t a, const void *nt));
HC_TC_ALIAS(void, tc_deletearray_aligned_nothrow, _ZdaPvSt11align_val_tRKSt9nothrow_t,
            (void *p, size_t a, const void *nt));

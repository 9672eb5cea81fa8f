/* gperftools/tcmalloc.h - tcmalloc's tc_* entry points, served by
 * libheapcheck under the same names and signatures as gperftools 2.10.
 *
 * Each tc_* function is the corresponding standard one (tc_malloc is
 * malloc, tc_new is operator new, tc_malloc_size is malloc_usable_size
 * but in checker mode, below...):
 * any pointer from any of them may be given to any of the others.
 * tc_version() reports the gperftools API level served (2.10).
 * tc_set_new_mode(1) makes malloc, calloc, realloc and memalign call the
 * C++ new-handler when they fail, as operator new does (tcmalloc's rule);
 * tc_malloc_skip_new_handler never calls it.
 */
#ifndef HEAPCHECK_GPERFTOOLS_TCMALLOC_H
#define HEAPCHECK_GPERFTOOLS_TCMALLOC_H

#include <stddef.h>
#ifdef __cplusplus
#include <new>
#endif
#ifdef __GLIBC__
#include <malloc.h> /* struct mallinfo, mallinfo2 */
#endif

#define TC_VERSION_MAJOR 2
#define TC_VERSION_MINOR 10
#define TC_VERSION_PATCH ""
#define TC_VERSION_STRING "gperftools 2.10"

#ifndef PERFTOOLS_DLL_DECL
#define PERFTOOLS_DLL_DECL
#endif
#ifndef PERFTOOLS_NOTHROW
#ifdef __cplusplus
#define PERFTOOLS_NOTHROW noexcept
#define HC_TC_UNDEF_NOTHROW_
#else
#define PERFTOOLS_NOTHROW __attribute__((__nothrow__))
#define HC_TC_UNDEF_NOTHROW_
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* "gperftools 2.10" (the API level served, as gperftools words it); *major = 2,
 * *minor = 10, *patch = "".  heapcheck's own version: HC_VERSION_* (heapcheck.h). */
PERFTOOLS_DLL_DECL const char *tc_version(int *major, int *minor, const char **patch) PERFTOOLS_NOTHROW;

PERFTOOLS_DLL_DECL void *tc_malloc(size_t size) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void *tc_malloc_skip_new_handler(size_t size) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void tc_free(void *ptr) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void tc_free_sized(void *ptr, size_t size) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void tc_free_aligned_sized(void *ptr, size_t align, size_t size) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void *tc_realloc(void *ptr, size_t size) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void *tc_calloc(size_t nmemb, size_t size) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void tc_cfree(void *ptr) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void *tc_memalign(size_t alignment, size_t size) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL int tc_posix_memalign(void **ptr, size_t align, size_t size) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void *tc_valloc(size_t size) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void *tc_pvalloc(size_t size) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void tc_malloc_stats(void) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL int tc_mallopt(int cmd, int value) PERFTOOLS_NOTHROW;
#ifdef __GLIBC__
PERFTOOLS_DLL_DECL struct mallinfo tc_mallinfo(void) PERFTOOLS_NOTHROW;
#if __GLIBC__ * 1000 + __GLIBC_MINOR__ >= 2033
PERFTOOLS_DLL_DECL struct mallinfo2 tc_mallinfo2(void) PERFTOOLS_NOTHROW;
#endif
#endif
/* malloc_usable_size(ptr); in checker mode the block's whole slot, as
 * nallocx (malloc_usable_size says the requested size there), and the
 * block is that size from then on (scanned, copied by realloc, reported). */
PERFTOOLS_DLL_DECL size_t tc_malloc_size(void *ptr) PERFTOOLS_NOTHROW;

#ifdef __cplusplus
PERFTOOLS_DLL_DECL int tc_set_new_mode(int flag) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void *tc_new(size_t size);
PERFTOOLS_DLL_DECL void *tc_new_nothrow(size_t size, const std::nothrow_t &) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void tc_delete(void *p) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void tc_delete_sized(void *p, size_t size) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void tc_delete_nothrow(void *p, const std::nothrow_t &) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void *tc_newarray(size_t size);
PERFTOOLS_DLL_DECL void *tc_newarray_nothrow(size_t size, const std::nothrow_t &) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void tc_deletearray(void *p) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void tc_deletearray_sized(void *p, size_t size) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void tc_deletearray_nothrow(void *p, const std::nothrow_t &) PERFTOOLS_NOTHROW;
#if defined(__cpp_aligned_new) || __cplusplus >= 201703L
PERFTOOLS_DLL_DECL void *tc_new_aligned(size_t size, std::align_val_t al);
PERFTOOLS_DLL_DECL void *tc_new_aligned_nothrow(size_t size, std::align_val_t al,
                                                const std::nothrow_t &) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void tc_delete_aligned(void *p, std::align_val_t al) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void tc_delete_sized_aligned(void *p, size_t size, std::align_val_t al) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void tc_delete_aligned_nothrow(void *p, std::align_val_t al,
                                                  const std::nothrow_t &) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void *tc_newarray_aligned(size_t size, std::align_val_t al);
PERFTOOLS_DLL_DECL void *tc_newarray_aligned_nothrow(size_t size, std::align_val_t al,
                                                     const std::nothrow_t &) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void tc_deletearray_aligned(void *p, std::align_val_t al) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void tc_deletearray_sized_aligned(void *p, size_t size, std::align_val_t al) PERFTOOLS_NOTHROW;
PERFTOOLS_DLL_DECL void tc_deletearray_aligned_nothrow(void *p, std::align_val_t al,
                                                       const std::nothrow_t &) PERFTOOLS_NOTHROW;
#endif
}
#endif

#ifdef HC_TC_UNDEF_NOTHROW_
#undef PERFTOOLS_NOTHROW
#undef HC_TC_UNDEF_NOTHROW_
#endif

#endif

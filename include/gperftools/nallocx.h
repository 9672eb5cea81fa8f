/* gperftools/nallocx.h - jemalloc's nallocx as gperftools 2.10 declares it,
 * served by libheapcheck: the usable size (tc_malloc_size) that
 * malloc(size), or with MALLOCX_LG_ALIGN(la) memalign(1 << la, size), would
 * give, allocating nothing.  Only MALLOCX_LG_ALIGN is understood.  In
 * checker mode too it is the slot the block takes (more than size: checker
 * mode keeps a byte of room after every block), which tc_malloc_size and
 * GetAllocatedSize then give, where malloc_usable_size gives the requested
 * size. */
#ifndef HEAPCHECK_GPERFTOOLS_NALLOCX_H
#define HEAPCHECK_GPERFTOOLS_NALLOCX_H

#include <stddef.h>

#ifndef PERFTOOLS_DLL_DECL
#define PERFTOOLS_DLL_DECL
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define MALLOCX_LG_ALIGN(la) ((int)(la))

PERFTOOLS_DLL_DECL size_t nallocx(size_t size, int flags);
PERFTOOLS_DLL_DECL size_t tc_nallocx(size_t size, int flags);

#ifdef __cplusplus
}
#endif

#endif

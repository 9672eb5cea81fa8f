/* gperftools/malloc_hook_c.h - gperftools' MallocHook C API, served by
 * libheapcheck (same names and signatures as gperftools 2.10).  Add and
 * Remove return 1 on success, 0 on failure (a NULL hook, no free slot of
 * the seven, not installed); the deprecated Set functions return the
 * previous singular hook.
 *
 * New hooks run after every allocation (with the requested size, NULL
 * too when it failed), delete hooks before every free (NULL too), from
 * malloc, calloc, realloc (when the block moves), memalign and friends,
 * operator new/delete.  The mmap, mremap, munmap and sbrk hooks run around
 * those calls of the program (libheapcheck interposes them), not around
 * heapcheck's own mappings.  See docs/profiling.md, "MallocHook". */
#ifndef HEAPCHECK_GPERFTOOLS_MALLOC_HOOK_C_H
#define HEAPCHECK_GPERFTOOLS_MALLOC_HOOK_C_H

#include <stddef.h>
#include <sys/types.h>

#ifndef PERFTOOLS_DLL_DECL
#define PERFTOOLS_DLL_DECL
#endif

#ifdef __cplusplus
extern "C" {
#endif

PERFTOOLS_DLL_DECL int MallocHook_GetCallerStackTrace(void **result, int max_depth, int skip_count);

typedef void (*MallocHook_NewHook)(const void *ptr, size_t size);
PERFTOOLS_DLL_DECL int MallocHook_AddNewHook(MallocHook_NewHook hook);
PERFTOOLS_DLL_DECL int MallocHook_RemoveNewHook(MallocHook_NewHook hook);

typedef void (*MallocHook_DeleteHook)(const void *ptr);
PERFTOOLS_DLL_DECL int MallocHook_AddDeleteHook(MallocHook_DeleteHook hook);
PERFTOOLS_DLL_DECL int MallocHook_RemoveDeleteHook(MallocHook_DeleteHook hook);

typedef void (*MallocHook_PreMmapHook)(const void *start, size_t size, int protection, int flags, int fd,
                                       off_t offset);
PERFTOOLS_DLL_DECL int MallocHook_AddPreMmapHook(MallocHook_PreMmapHook hook);
PERFTOOLS_DLL_DECL int MallocHook_RemovePreMmapHook(MallocHook_PreMmapHook hook);

typedef void (*MallocHook_MmapHook)(const void *result, const void *start, size_t size, int protection, int flags,
                                    int fd, off_t offset);
PERFTOOLS_DLL_DECL int MallocHook_AddMmapHook(MallocHook_MmapHook hook);
PERFTOOLS_DLL_DECL int MallocHook_RemoveMmapHook(MallocHook_MmapHook hook);

typedef int (*MallocHook_MmapReplacement)(const void *start, size_t size, int protection, int flags, int fd,
                                          off_t offset, void **result);
PERFTOOLS_DLL_DECL int MallocHook_SetMmapReplacement(MallocHook_MmapReplacement hook);
PERFTOOLS_DLL_DECL int MallocHook_RemoveMmapReplacement(MallocHook_MmapReplacement hook);

typedef void (*MallocHook_MunmapHook)(const void *ptr, size_t size);
PERFTOOLS_DLL_DECL int MallocHook_AddMunmapHook(MallocHook_MunmapHook hook);
PERFTOOLS_DLL_DECL int MallocHook_RemoveMunmapHook(MallocHook_MunmapHook hook);

typedef int (*MallocHook_MunmapReplacement)(const void *ptr, size_t size, int *result);
PERFTOOLS_DLL_DECL int MallocHook_SetMunmapReplacement(MallocHook_MunmapReplacement hook);
PERFTOOLS_DLL_DECL int MallocHook_RemoveMunmapReplacement(MallocHook_MunmapReplacement hook);

typedef void (*MallocHook_MremapHook)(const void *result, const void *old_addr, size_t old_size, size_t new_size,
                                      int flags, const void *new_addr);
PERFTOOLS_DLL_DECL int MallocHook_AddMremapHook(MallocHook_MremapHook hook);
PERFTOOLS_DLL_DECL int MallocHook_RemoveMremapHook(MallocHook_MremapHook hook);

typedef void (*MallocHook_PreSbrkHook)(ptrdiff_t increment);
PERFTOOLS_DLL_DECL int MallocHook_AddPreSbrkHook(MallocHook_PreSbrkHook hook);
PERFTOOLS_DLL_DECL int MallocHook_RemovePreSbrkHook(MallocHook_PreSbrkHook hook);

typedef void (*MallocHook_SbrkHook)(const void *result, ptrdiff_t increment);
PERFTOOLS_DLL_DECL int MallocHook_AddSbrkHook(MallocHook_SbrkHook hook);
PERFTOOLS_DLL_DECL int MallocHook_RemoveSbrkHook(MallocHook_SbrkHook hook);

/* Deprecated: one singular hook per kind, run together with the others. */
PERFTOOLS_DLL_DECL MallocHook_NewHook MallocHook_SetNewHook(MallocHook_NewHook hook);
PERFTOOLS_DLL_DECL MallocHook_DeleteHook MallocHook_SetDeleteHook(MallocHook_DeleteHook hook);
PERFTOOLS_DLL_DECL MallocHook_PreMmapHook MallocHook_SetPreMmapHook(MallocHook_PreMmapHook hook);
PERFTOOLS_DLL_DECL MallocHook_MmapHook MallocHook_SetMmapHook(MallocHook_MmapHook hook);
PERFTOOLS_DLL_DECL MallocHook_MunmapHook MallocHook_SetMunmapHook(MallocHook_MunmapHook hook);
PERFTOOLS_DLL_DECL MallocHook_MremapHook MallocHook_SetMremapHook(MallocHook_MremapHook hook);
PERFTOOLS_DLL_DECL MallocHook_PreSbrkHook MallocHook_SetPreSbrkHook(MallocHook_PreSbrkHook hook);
PERFTOOLS_DLL_DECL MallocHook_SbrkHook MallocHook_SetSbrkHook(MallocHook_SbrkHook hook);

/* heapcheck's own, behind the C++ class's Get*Hook, Invoke*Hook and
 * Unhooked* members. */
MallocHook_NewHook hc_malloc_hook_get_New(void);
MallocHook_DeleteHook hc_malloc_hook_get_Delete(void);
MallocHook_PreMmapHook hc_malloc_hook_get_PreMmap(void);
MallocHook_MmapHook hc_malloc_hook_get_Mmap(void);
MallocHook_MunmapHook hc_malloc_hook_get_Munmap(void);
MallocHook_MremapHook hc_malloc_hook_get_Mremap(void);
MallocHook_PreSbrkHook hc_malloc_hook_get_PreSbrk(void);
MallocHook_SbrkHook hc_malloc_hook_get_Sbrk(void);
void hc_malloc_hook_invoke_new(const void *p, size_t size);
void hc_malloc_hook_invoke_delete(const void *p);
void *hc_malloc_hook_unhooked_mmap(void *start, size_t len, int prot, int flags, int fd, off_t off);
int hc_malloc_hook_unhooked_munmap(void *start, size_t len);

#ifdef __cplusplus
}
#endif

#endif

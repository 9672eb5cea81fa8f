/* gperftools/malloc_hook.h - gperftools' MallocHook C++ class, served by
 * libheapcheck.  Header only: every member is an inline call of the C API
 * in gperftools/malloc_hook_c.h, where what each hook sees is described.
 * The Invoke*Hook members for the memory calls are not provided (the
 * interposed mmap family runs those hooks itself). */
#ifndef HEAPCHECK_GPERFTOOLS_MALLOC_HOOK_H
#define HEAPCHECK_GPERFTOOLS_MALLOC_HOOK_H

#include <stddef.h>
#include <sys/types.h>

#include "malloc_hook_c.h"

#define HC_MALLOC_HOOK_KIND_(Name)                                                                  \
  typedef MallocHook_##Name##Hook Name##Hook;                                                       \
  inline static bool Add##Name##Hook(Name##Hook hook) { return MallocHook_Add##Name##Hook(hook) != 0; } \
  inline static bool Remove##Name##Hook(Name##Hook hook) { return MallocHook_Remove##Name##Hook(hook) != 0; } \
  inline static Name##Hook Get##Name##Hook() { return hc_malloc_hook_get_##Name(); }                \
  inline static Name##Hook Set##Name##Hook(Name##Hook hook) { return MallocHook_Set##Name##Hook(hook); }

class MallocHook {
 public:
  HC_MALLOC_HOOK_KIND_(New)
  HC_MALLOC_HOOK_KIND_(Delete)
  HC_MALLOC_HOOK_KIND_(PreMmap)
  HC_MALLOC_HOOK_KIND_(Mmap)
  HC_MALLOC_HOOK_KIND_(Munmap)
  HC_MALLOC_HOOK_KIND_(Mremap)
  HC_MALLOC_HOOK_KIND_(PreSbrk)
  HC_MALLOC_HOOK_KIND_(Sbrk)

  typedef MallocHook_MmapReplacement MmapReplacement;
  inline static bool SetMmapReplacement(MmapReplacement hook) { return MallocHook_SetMmapReplacement(hook) != 0; }
  inline static bool RemoveMmapReplacement(MmapReplacement hook) {
    return MallocHook_RemoveMmapReplacement(hook) != 0;
  }
  typedef MallocHook_MunmapReplacement MunmapReplacement;
  inline static bool SetMunmapReplacement(MunmapReplacement hook) {
    return MallocHook_SetMunmapReplacement(hook) != 0;
  }
  inline static bool RemoveMunmapReplacement(MunmapReplacement hook) {
    return MallocHook_RemoveMunmapReplacement(hook) != 0;
  }

  inline static void InvokeNewHook(const void *p, size_t s) { hc_malloc_hook_invoke_new(p, s); }
  inline static void InvokeDeleteHook(const void *p) { hc_malloc_hook_invoke_delete(p); }

  inline static int GetCallerStackTrace(void **result, int max_depth, int skip_count) {
    return MallocHook_GetCallerStackTrace(result, max_depth, skip_count);
  }

  static void *UnhookedMMap(void *start, size_t length, int prot, int flags, int fd, off_t offset) {
    return hc_malloc_hook_unhooked_mmap(start, length, prot, flags, fd, offset);
  }
  static int UnhookedMUnmap(void *start, size_t length) { return hc_malloc_hook_unhooked_munmap(start, length); }
};

#undef HC_MALLOC_HOOK_KIND_

#endif

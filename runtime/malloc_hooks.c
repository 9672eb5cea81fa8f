/* malloc_hooks.c - gperftools' MallocHook C API (<gperftools/malloc_hook_c.h>;
 * the C++ class of <gperftools/malloc_hook.h> is inline over it) and the
 * mmap, mmap64, mremap, munmap and sbrk that run its memory hooks.
 *
 * The lists live in allocator/malloc_hook.c (new and delete hooks are run
 * by the allocator's slow paths).  The memory calls are interposed as
 * gperftools does: the pre-hooks, then a replacement if one is installed
 * (it may take the call over), the system call, then the hooks with the
 * result.  With no hook installed each is the system call that glibc's is
 * (same checks, same errno), plus one scan of the hook slots.  Each hook
 * sees every call of the process that goes through these symbols,
 * heapcheck's own heap mappings included (as tcmalloc's system allocator's
 * do under gperftools); glibc-internal calls (its own malloc is not in use,
 * dlopen's mappings) do not go through them.
 * Locks: none (the hook slots are atomics). */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "hc_internal.h"
#include "heapcheck.h"

#define HOOK_MAX HCI_HOOK_SLOTS

typedef void (*new_hook)(const void *, size_t);
typedef void (*delete_hook)(const void *);
typedef void (*premmap_hook)(const void *, size_t, int, int, int, off_t);
typedef void (*mmap_hook)(const void *, const void *, size_t, int, int, int, off_t);
typedef int (*mmap_replace)(const void *, size_t, int, int, int, off_t, void **);
typedef void (*munmap_hook)(const void *, size_t);
typedef int (*munmap_replace)(const void *, size_t, int *);
typedef void (*mremap_hook)(const void *, const void *, size_t, size_t, int, const void *);
typedef void (*presbrk_hook)(ptrdiff_t);
typedef void (*sbrk_hook)(const void *, ptrdiff_t);

#define FN(f) ((hci_hook_fn)(uintptr_t)(f))

/* Add/Remove/Set for one kind, with gperftools' names. */
#define HOOK_API(Name, kind, type)                                                                   \
  hc_public int MallocHook_Add##Name##Hook(type hook) { return hci_hook_add(kind, FN(hook)); }       \
  hc_public int MallocHook_Remove##Name##Hook(type hook) { return hci_hook_remove(kind, FN(hook)); } \
  hc_public type MallocHook_Set##Name##Hook(type hook) {                                             \
    return (type)(uintptr_t)hci_hook_set_singular(kind, FN(hook));                                   \
  }                                                                                                  \
  hc_public type hc_malloc_hook_get_##Name(void) { return (type)(uintptr_t)hci_hook_get_singular(kind); }

HOOK_API(New, HCI_HOOK_NEW, new_hook)
HOOK_API(Delete, HCI_HOOK_DELETE, delete_hook)
HOOK_API(PreMmap, HCI_HOOK_PREMMAP, premmap_hook)
HOOK_API(Mmap, HCI_HOOK_MMAP, mmap_hook)
HOOK_API(Munmap, HCI_HOOK_MUNMAP, munmap_hook)
HOOK_API(Mremap, HCI_HOOK_MREMAP, mremap_hook)
HOOK_API(PreSbrk, HCI_HOOK_PRESBRK, presbrk_hook)
HOOK_API(Sbrk, HCI_HOOK_SBRK, sbrk_hook)

/* One replacement at a time, as in gperftools (a second Set fails). */
hc_public int MallocHook_SetMmapReplacement(mmap_replace hook) {
  return !hci_hook_any(HCI_HOOK_MMAP_REPLACE) && hci_hook_add(HCI_HOOK_MMAP_REPLACE, FN(hook));
}
hc_public int MallocHook_RemoveMmapReplacement(mmap_replace hook) {
  return hci_hook_remove(HCI_HOOK_MMAP_REPLACE, FN(hook));
}
hc_public int MallocHook_SetMunmapReplacement(munmap_replace hook) {
  return !hci_hook_any(HCI_HOOK_MUNMAP_REPLACE) && hci_hook_add(HCI_HOOK_MUNMAP_REPLACE, FN(hook));
}
hc_public int MallocHook_RemoveMunmapReplacement(munmap_replace hook) {
  return hci_hook_remove(HCI_HOOK_MUNMAP_REPLACE, FN(hook));
}

/* The Invoke functions of the C++ class (a program may run the hooks itself). */
hc_public void hc_malloc_hook_invoke_new(const void *p, size_t size) { hci_hook_run_new(p, size); }
hc_public void hc_malloc_hook_invoke_delete(const void *p) { hci_hook_run_delete(p); }

/* MallocHook::UnhookedMMap/UnhookedMUnmap: no hooks, replacements still apply. */
hc_public void *hc_malloc_hook_unhooked_mmap(void *start, size_t len, int prot, int flags, int fd, off_t off);
hc_public int hc_malloc_hook_unhooked_munmap(void *start, size_t len);

hc_public int MallocHook_GetCallerStackTrace(void **result, int max_depth, int skip_count) {
  /* The frames above the hook's caller: ours are the allocator's, which
   * the new/delete hooks are called from, and skip_count is the hint. */
  return hc_stack_trace(result, NULL, max_depth, skip_count + 1);
}

// ---- the memory calls ----

#define EACH_HOOK(kind, type, h)                     \
  hci_hook_fn h##_all[HOOK_MAX];                     \
  int h##_n = hci_hook_get(kind, h##_all, HOOK_MAX); \
  for (int h##_i = 0; h##_i < h##_n; h##_i++)        \
    for (type h = (type)(uintptr_t)h##_all[h##_i]; h; h = NULL)

static void *sys_mmap(void *start, size_t len, int prot, int flags, int fd, off_t off) {
  if (off & 4095) { /* glibc's check (MMAP_OFF_LOW_MASK) */
    errno = EINVAL;
    return MAP_FAILED;
  }
  return hci_os_mmap(start, len, prot, flags, fd, off);
}

static void *hooked_mmap(void *start, size_t len, int prot, int flags, int fd, off_t off) {
  if (!hci_hook_any(HCI_HOOK_PREMMAP) && !hci_hook_any(HCI_HOOK_MMAP) && !hci_hook_any(HCI_HOOK_MMAP_REPLACE))
    return sys_mmap(start, len, prot, flags, fd, off);
  { EACH_HOOK(HCI_HOOK_PREMMAP, premmap_hook, h) h(start, len, prot, flags, fd, off); }
  void *result = MAP_FAILED;
  bool replaced = false;
  { EACH_HOOK(HCI_HOOK_MMAP_REPLACE, mmap_replace, r) replaced = replaced || r(start, len, prot, flags, fd, off, &result); }
  if (!replaced) result = sys_mmap(start, len, prot, flags, fd, off);
  { EACH_HOOK(HCI_HOOK_MMAP, mmap_hook, h) h(result, start, len, prot, flags, fd, off); }
  return result;
}

hc_public void *hc_malloc_hook_unhooked_mmap(void *start, size_t len, int prot, int flags, int fd, off_t off) {
  void *result = MAP_FAILED;
  { EACH_HOOK(HCI_HOOK_MMAP_REPLACE, mmap_replace, r) if (r(start, len, prot, flags, fd, off, &result)) return result; }
  return sys_mmap(start, len, prot, flags, fd, off);
}

hc_public int hc_malloc_hook_unhooked_munmap(void *start, size_t len) {
  int result = 0;
  { EACH_HOOK(HCI_HOOK_MUNMAP_REPLACE, munmap_replace, r) if (r(start, len, &result)) return result; }
  return hci_os_munmap(start, len);
}

/* Both names, whatever _FILE_OFFSET_BITS makes of the declarations in
 * <sys/mman.h> (off_t is 64 bits on the 64-bit targets heapcheck serves). */
hc_public void *hc_mmap_entry(void *start, size_t len, int prot, int flags, int fd, off_t off) __asm__("mmap");
hc_public void *hc_mmap_entry(void *start, size_t len, int prot, int flags, int fd, off_t off) {
  return hooked_mmap(start, len, prot, flags, fd, off);
}
hc_public void *hc_mmap64_entry(void *start, size_t len, int prot, int flags, int fd, off_t off) __asm__("mmap64");
hc_public void *hc_mmap64_entry(void *start, size_t len, int prot, int flags, int fd, off_t off) {
  return hooked_mmap(start, len, prot, flags, fd, off);
}

hc_public int munmap(void *start, size_t len) {
  if (!hci_hook_any(HCI_HOOK_MUNMAP) && !hci_hook_any(HCI_HOOK_MUNMAP_REPLACE))
    return hci_os_munmap(start, len);
  { EACH_HOOK(HCI_HOOK_MUNMAP, munmap_hook, h) h(start, len); }
  int result = 0;
  bool replaced = false;
  { EACH_HOOK(HCI_HOOK_MUNMAP_REPLACE, munmap_replace, r) replaced = replaced || r(start, len, &result); }
  return replaced ? result : hci_os_munmap(start, len);
}

hc_public void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...) {
  void *new_addr = NULL;
  if (flags & MREMAP_FIXED) {
    va_list ap;
    va_start(ap, flags);
    new_addr = va_arg(ap, void *);
    va_end(ap);
  }
  void *result = (void *)syscall(SYS_mremap, old, old_len, new_len, flags, new_addr);
  { EACH_HOOK(HCI_HOOK_MREMAP, mremap_hook, h) h(result, old, old_len, new_len, flags, new_addr); }
  return result;
}

/* glibc's sbrk keeps the break in __curbrk: the work stays glibc's. */
extern void *__sbrk(intptr_t increment);

hc_public void *sbrk(intptr_t increment) {
  if (increment == 0) return __sbrk(0); /* gperftools runs no hook for a query */
  { EACH_HOOK(HCI_HOOK_PRESBRK, presbrk_hook, h) h(increment); }
  void *result = __sbrk(increment);
  { EACH_HOOK(HCI_HOOK_SBRK, sbrk_hook, h) h(result, increment); }
  return result;
}

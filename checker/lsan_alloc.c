/* lsan_alloc.c - sanitizer_common's allocator interface
 * (<sanitizer/allocator_interface.h>) for programs written for
 * LeakSanitizer: __sanitizer_install_malloc_and_free_hooks,
 * __sanitizer_get_ownership, __sanitizer_get_allocated_size and
 * __sanitizer_get_estimated_allocated_size.
 *
 * The hooks ride on the allocator's MallocHook lists (one adapter each,
 * added on the first install): as LSan's, up to 5 pairs, the malloc hook
 * sees successful allocations only, the free hook runs before the block is
 * given back (so ownership and size still answer for it).  A failed realloc
 * calls neither.  Sizes are the requested ones, as LSan's.
 *
 * Runs in the program's calls and, for the adapters, inside malloc/free:
 * no malloc, no stdio, no lock of its own (slots are claimed by CAS).
 */
#include <stdatomic.h>

#include "hc_checker.h"
#include "hc_heap_view.h"

typedef void (*san_malloc_hook_t)(const volatile void *p, size_t size);
typedef void (*san_free_hook_t)(const volatile void *p);

#define SAN_HOOK_PAIRS 5 /* LSan's kMaxMallocFreeHooks */
static struct {
  _Atomic(san_malloc_hook_t) on_malloc;
  _Atomic(san_free_hook_t) on_free;
} pairs[SAN_HOOK_PAIRS];
static _Atomic int adapters_added;

static void run_malloc_hooks(const void *p, size_t size) {
  if (!p) return; /* gperftools' hooks see failures (NULL) too; LSan's do not */
  for (int i = 0; i < SAN_HOOK_PAIRS; i++) {
    san_malloc_hook_t h = atomic_load_explicit(&pairs[i].on_malloc, memory_order_acquire);
    if (h) h(p, size);
  }
}

static void run_free_hooks(const void *p) {
  if (!p) return;
  for (int i = 0; i < SAN_HOOK_PAIRS; i++) {
    san_free_hook_t h = atomic_load_explicit(&pairs[i].on_free, memory_order_acquire);
    if (h) h(p);
  }
}

/* Returns the pair's number (1..5), or 0 when a hook is NULL or every slot
 * is taken, as LSan. */
hc_public int __sanitizer_install_malloc_and_free_hooks(san_malloc_hook_t on_malloc, san_free_hook_t on_free) {
  if (!on_malloc || !on_free) return 0;
  hci_ensure_init();
  for (int i = 0; i < SAN_HOOK_PAIRS; i++) {
    san_malloc_hook_t none = NULL;
    if (!atomic_compare_exchange_strong(&pairs[i].on_malloc, &none, on_malloc)) continue;
    atomic_store_explicit(&pairs[i].on_free, on_free, memory_order_release);
    if (!atomic_exchange(&adapters_added, 1)) {
      hci_hook_add(HCI_HOOK_NEW, (hci_hook_fn)(uintptr_t)run_malloc_hooks);
      hci_hook_add(HCI_HOOK_DELETE, (hci_hook_fn)(uintptr_t)run_free_hooks);
    }
    return i + 1;
  }
  return 0;
}

/* The live object starting at p (LSan: owned = the start of a live block). */
static bool live_start(const volatile void *p, hci_heap_obj_t *o) {
  if (!p || !hci_heap_find((uintptr_t)p, o) || o->start != (uintptr_t)p) return false;
  return !o->meta || o->meta->stack_id != HC_STACK_NONE;
}

hc_public int __sanitizer_get_ownership(const volatile void *p) {
  hci_heap_obj_t o;
  return live_start(p, &o);
}

hc_public size_t __sanitizer_get_allocated_size(const volatile void *p) {
  hci_heap_obj_t o;
  return live_start(p, &o) ? o.size : 0;
}

hc_public size_t __sanitizer_get_estimated_allocated_size(size_t size) { return size; }

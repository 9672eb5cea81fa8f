/* malloc_hook.c - gperftools' MallocHook lists (<gperftools/malloc_hook_c.h>):
 * the program's functions called on every allocation and deallocation
 * (new and delete hooks) and around mmap, mremap, munmap and sbrk (their
 * hooks are kept here and run by runtime/malloc_hooks.c, which also
 * exports the MallocHook_* functions and interposes those calls).
 *
 * Each kind has seven slots for Add*Hook plus one for the deprecated
 * singular Set*Hook, as gperftools' HookList: Add fails when the hook is
 * NULL or all seven are taken, Remove fails when the hook is not there, and
 * the Invoke functions call every non-NULL slot.  Slots are atomics: hooks
 * are added and removed while other threads allocate.
 *
 * While a new or delete hook is installed every allocation and free takes
 * the slow path, the way checker mode does (free: every list limit 0;
 * malloc: sample_left held below HC_HOOK_BIAS, the sampler counting on top
 * of it, so sampling goes on); the fast paths carry no test for hooks.  The
 * calling thread sees a hook at once, another thread at its next
 * allocation slow path at the latest (its sample_left is biased under the
 * registry lock, the way a new sampling rate reaches it).
 *
 * Hooks run after the allocation (new) or before the free (delete), with
 * no allocator lock held; they may allocate.  The allocator calls only the
 * program's functions here, never a layer above.
 * Locks: hook_lock (the on/off switch) -> thread-cache registry. */
#include "hc_internal.h"

static _Atomic(hci_hook_fn) lists[HCI_HOOK_KINDS][HCI_HOOK_SLOTS];
int hci_hooks_on; /* a new or delete hook is installed: every call takes the slow path */
static hci_lock_t hook_lock = HCI_LOCK_INIT(HC_RANK_HOOKS);
void hci_hooks_locks(hci_lock_fn *each) { each(&hook_lock); }

static bool has_hooks(int kind) {
  for (int i = 0; i < HCI_HOOK_SLOTS; i++)
    if (atomic_load_explicit(&lists[kind][i], memory_order_relaxed)) return true;
  return false;
}

/* Turns the all-slow mode on or off after a change of the new/delete lists. */
static void update_switch(void) {
  hci_lock(&hook_lock);
  int on = has_hooks(HCI_HOOK_NEW) || has_hooks(HCI_HOOK_DELETE);
  if (on != hci_hooks_on) {
    __atomic_store_n(&hci_hooks_on, on, __ATOMIC_RELAXED);
    hci_tc_set_fastpath(!on && !hci_record_all);
    hci_sampler_hooks_changed(on);
  }
  hci_unlock(&hook_lock);
}

/* Replaces `from` by `to` in the first slot holding it (Add: NULL -> fn,
 * Remove: fn -> NULL), then updates the switch. */
static bool swap_slot(int kind, hci_hook_fn fn, hci_hook_fn from, hci_hook_fn to) {
  if (!fn || kind < 0 || kind >= HCI_HOOK_KINDS) return false;
  bool ok = false;
  for (int i = 0; i < HCI_HOOK_SLOTS - 1 && !ok; i++) {
    hci_hook_fn expect = from;
    ok = atomic_compare_exchange_strong(&lists[kind][i], &expect, to);
  }
  if (ok && (kind == HCI_HOOK_NEW || kind == HCI_HOOK_DELETE)) update_switch();
  return ok;
}

bool hci_hook_add(int kind, hci_hook_fn fn) { return swap_slot(kind, fn, NULL, fn); }

bool hci_hook_remove(int kind, hci_hook_fn fn) { return swap_slot(kind, fn, fn, NULL); }

hci_hook_fn hci_hook_set_singular(int kind, hci_hook_fn fn) {
  if (kind < 0 || kind >= HCI_HOOK_KINDS) return NULL;
  hci_hook_fn old = atomic_exchange(&lists[kind][HCI_HOOK_SLOTS - 1], fn);
  if (kind == HCI_HOOK_NEW || kind == HCI_HOOK_DELETE) update_switch();
  return old;
}

hci_hook_fn hci_hook_get_singular(int kind) {
  if (kind < 0 || kind >= HCI_HOOK_KINDS) return NULL;
  return atomic_load_explicit(&lists[kind][HCI_HOOK_SLOTS - 1], memory_order_acquire);
}

int hci_hook_get(int kind, hci_hook_fn *out, int max) {
  int n = 0;
  if (kind < 0 || kind >= HCI_HOOK_KINDS) return 0;
  for (int i = 0; i < HCI_HOOK_SLOTS && n < max; i++) {
    hci_hook_fn f = atomic_load_explicit(&lists[kind][i], memory_order_acquire);
    if (f) out[n++] = f;
  }
  return n;
}

bool hci_hook_any(int kind) { return kind >= 0 && kind < HCI_HOOK_KINDS && has_hooks(kind); }

typedef void (*new_hook_t)(const void *, size_t);
typedef void (*delete_hook_t)(const void *);

void hci_hook_run_new(const void *p, size_t size) {
  hci_hook_fn f[HCI_HOOK_SLOTS];
  int n = hci_hook_get(HCI_HOOK_NEW, f, HCI_HOOK_SLOTS);
  for (int i = 0; i < n; i++) ((new_hook_t)(uintptr_t)f[i])(p, size);
}

void hci_hook_run_delete(const void *p) {
  hci_hook_fn f[HCI_HOOK_SLOTS];
  int n = hci_hook_get(HCI_HOOK_DELETE, f, HCI_HOOK_SLOTS);
  for (int i = 0; i < n; i++) ((delete_hook_t)(uintptr_t)f[i])(p);
}

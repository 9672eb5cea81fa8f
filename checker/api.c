/* api.c - the checker part of the public C API (include/heapcheck.h):
 * scoped checks, the whole-program check on demand, ignore/unignore, the
 * Disabler, root regions, cleanups (and freeing libc's caches before the
 * final check), hc_is_active.
 *
 * Every function works whether or not the checker is on: when it is off
 * they do nothing and report "no leaks" (gperftools' inactive checker).
 * Check handles, the region table and the cleanup list live in the
 * metadata arena (never in the user heap, so draconian mode never reports
 * them and a check never scans them).  Messages keep gperftools' wording.
 *
 * Locks: hci_chk_lock guards the region table, the cleanup list and the
 * ignore flag updates (so they never change under a running check).
 */
#include <string.h>

#include "hc_checker.h"
#include "heapcheck.h"

#define CHECK_MAGIC 0x68636b31u /* "hck1" */

struct hc_check {
  uint32_t magic;
  bool active;               /* false: the checker was off at hc_check_begin */
  uint16_t epoch;            /* objects with epoch >= this are in scope */
  size_t alloc_size;         /* for hci_meta_free; 0 for the static fallback */
  ssize_t bytes, objects;    /* totals of the last hc_check_end; -1 before */
  const char *name;          /* points just after the struct */
};

static hc_check_t inactive_check = {CHECK_MAGIC, false, 0, 0, -1, -1, ""};

_Atomic int hci_api_any_ignored;

static struct {
  hci_region_t *regions;     /* guarded by hci_chk_lock */
  int nregions, cap_regions;
  void (**cleanups)(void);   /* guarded by hci_chk_lock */
  int ncleanups, cap_cleanups;
} A;
HC_PRIVATE_STATE(A);

/* Doubles a meta-arena array; false when out of memory. */
static bool grow_array(void **v, int *cap, size_t elem) {
  int ncap = *cap ? *cap * 2 : 16;
  void *n = hci_meta_alloc((size_t)ncap * elem);
  if (!n) return false;
  if (*v) {
    memcpy(n, *v, (size_t)*cap * elem);
    hci_meta_free(*v, (size_t)*cap * elem);
  }
  *v = n;
  *cap = ncap;
  return true;
}

// ---- state ----

hc_public int hc_is_active(void) {
  hci_ensure_init();
  return hci_chk.active;
}

hc_public int hc_has_global_check(void) {
  hci_ensure_init();
  return hci_chk.active && hci_chk.global_check;
}

hc_public int hc_set_verbosity(int level) {
  hci_ensure_init();
  /* gperftools' FLAGS_verbose: read by every message from now on. */
  __atomic_store_n(&hci_chk.verbose, level, __ATOMIC_RELAXED);
  return __atomic_exchange_n(&hci_log_verbose, level, __ATOMIC_RELAXED);
}

// ---- scoped checks ----

hc_public hc_check_t *hc_check_begin(const char *name) {
  hci_ensure_init();
  if (!name) name = "";
  if (!hci_chk.active) {
    hci_chk_log(HCI_LOG_WARNING, "Heap checker is not active, hence checker \"%s\" will do nothing!", name);
    hci_chk_log(HCI_LOG_WARNING, "To activate set the HEAPCHECK environment variable.");
  }
  size_t n = strlen(name);
  if (n > 4096) n = 4096;
  size_t size = sizeof(hc_check_t) + n + 1;
  hc_check_t *c = hci_meta_alloc(size);
  if (!c) return &inactive_check;
  char *copy = (char *)(c + 1);
  memcpy(copy, name, n);
  copy[n] = 0;
  c->magic = CHECK_MAGIC;
  c->alloc_size = size;
  c->name = copy;
  c->bytes = c->objects = -1;
  c->active = hci_chk.active;
  /* A new epoch: this thread's next allocation carries it (program order);
   * other threads' allocations racing with this call may fall either side. */
  if (c->active) c->epoch = hci_alloc_next_epoch();
  return c;
}

/* A handle is the static inactive one or lives in the metadata arena:
 * anything else (a wild, freed-from-the-heap or NULL pointer) is never
 * read, so a bad handle is an error message, not a crash. */
static bool is_handle(const hc_check_t *c) {
  if (c == &inactive_check) return true;
  uintptr_t a = (uintptr_t)c;
  return c && a % _Alignof(hc_check_t) == 0 && hci_meta_owns(a) && hci_meta_owns(a + sizeof *c - 1) &&
         c->magic == CHECK_MAGIC;
}

static bool valid(const hc_check_t *c) {
  if (is_handle(c)) return true;
  hci_chk_log(HCI_LOG_ERROR, "heapcheck: error: %p is not a check handle from hc_check_begin() (or was freed)",
              (const void *)c);
  return false;
}

static hc_noinline int check_end(hc_check_t *c, int flags, uintptr_t sp) {
  hci_check_req_t req = {
      .name = c->name,
      .report = (flags & HC_CHECK_REPORT) != 0,
      .symbolize = (flags & HC_CHECK_SYMBOLIZE) != 0,
      .base_epoch = c->epoch,
      .self_sp = sp,
  };
  ssize_t b, o;
  int ok = hci_chk_run(&req, &b, &o);
  c->bytes = b;
  c->objects = o;
  return ok;
}

hc_public hc_noinline int hc_check_end(hc_check_t *check, int flags) {
  HCI_ENTRY_SP(sp);
  if (!valid(check) || !check->active) return 1;
  return check_end(check, flags, sp);
}

hc_public ssize_t hc_check_bytes_leaked(const hc_check_t *check) {
  return is_handle(check) ? check->bytes : -1;
}

hc_public ssize_t hc_check_objects_leaked(const hc_check_t *check) {
  return is_handle(check) ? check->objects : -1;
}

hc_public const char *hc_check_name(const hc_check_t *check) {
  return is_handle(check) ? check->name : "";
}

hc_public void hc_check_free(hc_check_t *check) {
  if (!check || check == &inactive_check || !valid(check)) return;
  check->magic = 0;
  hci_meta_free(check, check->alloc_size);
}

// ---- the whole-program check ----

hc_public hc_noinline int hc_no_global_leaks(void) {
  HCI_ENTRY_SP(sp);
  hci_ensure_init();
  return hci_chk_global_now(sp, NULL, 0);
}

hc_public ssize_t hc_global_bytes_leaked(void) {
  ssize_t b, o;
  hci_chk_global_totals(&b, &o);
  return b;
}

hc_public ssize_t hc_global_objects_leaked(void) {
  ssize_t b, o;
  hci_chk_global_totals(&b, &o);
  return o;
}

hc_public void hc_cancel_global_check(void) {
  hci_ensure_init();
  hci_chk_cancel_global();
}

// ---- ignore ----

/* The record of the live object containing p, within the interior-pointer
 * limit, or NULL.  requires: hci_chk_lock. */
static hc_objmeta_t *find_record(const void *p, hci_heap_obj_t *o) {
  if (!p || !hci_heap_find((uintptr_t)p, o) || !o->meta || o->meta->stack_id == HC_STACK_NONE) return NULL;
  uintptr_t inner = (uintptr_t)p - o->start;
  size_t size = o->size ? o->size : 1;
  if (inner >= size) return NULL;
  if (hci_chk.max_pointer_offset >= 0 && inner > (uintptr_t)hci_chk.max_pointer_offset) return NULL;
  return o->meta;
}

int hci_api_ignore(const void *p, size_t *size) {
  hci_heap_obj_t o;
  hci_lock(&hci_chk_lock);
  hc_objmeta_t *m = find_record(p, &o);
  uint16_t old = 0;
  if (m) {
    old = atomic_fetch_or_explicit(&m->xflags, HC_OBJ_IGNORED, memory_order_relaxed);
    atomic_store_explicit(&hci_api_any_ignored, 1, memory_order_relaxed);
  }
  hci_unlock(&hci_chk_lock);
  *size = m ? o.size : 0;
  return !m ? -1 : (old & HC_OBJ_IGNORED) ? 1 : 0;
}

hc_public int hc_ignore_object(const void *p) {
  hci_ensure_init();
  if (!hci_chk.active) return 0;
  size_t size;
  int rc = hci_api_ignore(p, &size);
  if (rc < 0) {
    hci_chk_log(HCI_LOG_ERROR, "No live heap object at %p to ignore", p);
    return -1;
  }
  if (rc > 0) hci_chk_log(HCI_LOG_WARNING, "Object at %p is already being ignored", p);
  else hci_chk_log(10, "Going to ignore live object at %p of %zu bytes", p, size);
  return 0;
}

hc_public int hc_unignore_object(const void *p) {
  hci_ensure_init();
  if (!hci_chk.active) return 0;
  hci_heap_obj_t o;
  hci_lock(&hci_chk_lock);
  hc_objmeta_t *m = find_record(p, &o);
  uint16_t old = m ? atomic_load_explicit(&m->xflags, memory_order_relaxed) : 0;
  if (m && (old & HC_OBJ_IGNORED))
    atomic_fetch_and_explicit(&m->xflags, (uint16_t)~HC_OBJ_IGNORED, memory_order_relaxed);
  hci_unlock(&hci_chk_lock);
  if (!m) {
    hci_chk_log(HCI_LOG_ERROR, "No live heap object at %p to un-ignore", p);
    return -1;
  }
  if (!(old & HC_OBJ_IGNORED)) {
    hci_chk_log(HCI_LOG_ERROR, "Object at %p has not been ignored", p);
    return -1;
  }
  hci_chk_log(10, "Going to un-ignore live object at %p of %zu bytes", p, o.size);
  return 0;
}

// ---- the Disabler ----

hc_public void hc_disable_begin(void) {
  hci_ensure_init();
  if (!hci_alloc_disable_begin()) return; /* thread exiting: its allocations are recorded plainly */
  atomic_store_explicit(&hci_api_any_ignored, 1, memory_order_relaxed);
}

int hci_api_disable_depth(void) { return hci_alloc_disable_depth(); }

hc_public void hc_disable_end(void) {
  if (!hci_alloc_disable_end())
    hci_chk_log(HCI_LOG_ERROR, "heapcheck: error: hc_disable_end() without a matching hc_disable_begin() on this thread");
}

// ---- root regions ----

hc_public int hc_register_root_region(const void *begin, size_t size) {
  uintptr_t lo = (uintptr_t)begin;
  if (!begin || size == 0 || lo + size < lo) {
    hci_chk_log(HCI_LOG_ERROR, "heapcheck: error: hc_register_root_region(%p, %zu): bad region", begin, size);
    return -1;
  }
  hci_ensure_init();
  int rc = 0;
  hci_lock(&hci_chk_lock);
  if (A.nregions == A.cap_regions && !grow_array((void **)&A.regions, &A.cap_regions, sizeof(hci_region_t))) rc = -1;
  else A.regions[A.nregions++] = (hci_region_t){lo, lo + size};
  hci_unlock(&hci_chk_lock);
  return rc;
}

int hci_api_unregister_region(const void *begin, size_t size) {
  uintptr_t lo = (uintptr_t)begin;
  int rc = -1;
  hci_lock(&hci_chk_lock);
  for (int i = 0; i < A.nregions; i++)
    if (A.regions[i].lo == lo && A.regions[i].hi == lo + size) {
      A.regions[i] = A.regions[--A.nregions];
      rc = 0;
      break;
    }
  hci_unlock(&hci_chk_lock);
  return rc;
}

hc_public int hc_unregister_root_region(const void *begin, size_t size) {
  int rc = hci_api_unregister_region(begin, size);
  if (rc) hci_chk_log(HCI_LOG_ERROR, "heapcheck: error: hc_unregister_root_region(%p, %zu): no such region", begin, size);
  return rc;
}

int hci_api_root_regions(const hci_region_t **v) {
  *v = A.regions;
  return A.nregions;
}

// ---- cleanups ----

hc_public int hc_register_cleanup(void (*fn)(void)) {
  if (!fn) return -1;
  hci_ensure_init();
  int rc = 0;
  hci_lock(&hci_chk_lock);
  if (A.ncleanups == A.cap_cleanups && !grow_array((void **)&A.cleanups, &A.cap_cleanups, sizeof(fn))) rc = -1;
  else A.cleanups[A.ncleanups++] = fn;
  hci_unlock(&hci_chk_lock);
  return rc;
}

void hci_api_run_cleanups(void) {
  /* gperftools runs cleanups in every mode but local, when checking. */
  if (!hci_chk.active || !hci_chk.global_check) return;
  for (;;) { /* a cleanup may register more: run those too */
    hci_lock(&hci_chk_lock);
    void (**list)(void) = A.cleanups;
    int n = A.ncleanups, cap = A.cap_cleanups;
    A.cleanups = NULL;
    A.ncleanups = A.cap_cleanups = 0;
    hci_unlock(&hci_chk_lock);
    if (!list) return;
    for (int i = 0; i < n; i++) list[i]();
    hci_meta_free(list, (size_t)cap * sizeof *list);
  }
}

/* libc's and libstdc++'s own caches (stdio buffers, locale, the EH pool):
 * what valgrind frees at exit.  Only with no other thread alive. */
/* Strong: glibc has it in libc.so.6 and libc.a, and a static link must pull
 * it in (a weak reference would leave it out). */
extern void __libc_freeres(void);
extern void _ZN9__gnu_cxx9__freeresEv(void) __attribute__((weak));

void hci_api_free_libc(void) {
  if (hci_proc_status_field("Threads") > 1) {
    hci_chk_log(1, "heapcheck: other threads still run: libc's resources are not freed before the check");
    return;
  }
  if (_ZN9__gnu_cxx9__freeresEv) _ZN9__gnu_cxx9__freeresEv();
  __libc_freeres();
}

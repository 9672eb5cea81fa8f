/* flood_roots.c - the roots of a flood: root ranges from roots.c (unstable
 * ones through hci_copy_safe), registered regions, ignored objects, and the
 * objects allocated by ld.so or by a suppressed stack (steps 3-4 of flood.c).
 * Invariants and locks: flood_internal.h; runs with the world stopped.
 */
#include <string.h>
#include <sys/mman.h>

#include "flood_internal.h"

// ---- roots ----

/* Copies [lo, hi) (within one run of resident pages) SCRATCH bytes at a
 * time with hci_copy_safe and scans the copies. */
static void scan_run(flood_t *f, uintptr_t lo, uintptr_t hi) {
  for (uintptr_t a = lo; a < hi;) {
    uintptr_t end = (a & ~(uintptr_t)(SCRATCH - 1)) + SCRATCH;
    if (end > hi) end = hi;
    hci_copy_safe(f->scratch, a, end - a);
    hci_fl_scan_main(f, (uintptr_t)f->scratch, (uintptr_t)f->scratch + (end - a), 0);
    hci_fl_drain(f);
    a = end;
  }
}

/* A range that may vanish or was never touched (the program's own mappings,
 * running threads' stacks): only its resident pages are copied and scanned.
 * One mincore call answers for RES_WINDOW (128 MiB) and untouched pages are
 * skipped eight at a time, so a read-write reservation of a terabyte costs
 * 8192 calls and a pass over their answers (with a call per 64 KiB it was
 * 16 M calls: 36 s of exit check for 1 TiB of MAP_NORESERVE).
 *
 * mapped_only: a file's pages (shmem, memfd) or a shared mapping's, where
 * mincore answers for the file's page cache, not for this mapping, in a
 * mapping registered with userfaultfd: such a page is read only when the
 * program's page tables hold it (present or swapped, /proc/self/pagemap).
 * Reading one they do not is a fault, which in a view registered in minor
 * mode (QEMU's postcopy over a memfd) waits for the program's
 * fault-serving thread, stopped by the check: such an exit check hung for
 * ever.  Only there: a shared mapping's pages are in a fork child's page
 * tables only once touched, and one view of a memfd mapped twice holds
 * what the other wrote (reading them mapped only reported false leaks;
 * val29). */
static void scan_resident(flood_t *f, uintptr_t l, uintptr_t h, bool mapped_only) {
  if (!mapped_only) {
    scan_run(f, l, h);
    return;
  }
  uintptr_t run = 0;
  for (uintptr_t a = l; a < h;) {
    uintptr_t next = (a & ~(uintptr_t)4095) + 4096;
    if (next > h) next = h;
    if (hci_fl_page_mapped(f, a)) {
      if (!run) run = a;
    } else if (run) {
      scan_run(f, run, a);
      run = 0;
    }
    a = next;
  }
  if (run) scan_run(f, run, h);
}

/* The mappings registered with userfaultfd, in f->uffd_* (hci_maps_uffd,
 * through the scratch copy buffer: no malloc, the world is stopped). */
static void read_uffd_ranges(flood_t *f) {
  if (!f->scratch) f->scratch = hci_os_map(SCRATCH_MAP);
  int cap = (int)(sizeof f->uffd_lo / sizeof f->uffd_lo[0]);
  int n = f->scratch ? hci_maps_uffd((char *)f->scratch, SCRATCH, f->uffd_lo, f->uffd_hi, cap) : -1;
  f->uffd_state = n < 0 ? 2 : 1;
  f->uffd_n = n < 0 ? 0 : n;
}

/* Whether [lo, hi) meets a mapping registered with userfaultfd (or that
 * cannot be told). */
static bool uffd_registered(flood_t *f, uintptr_t lo, uintptr_t hi) {
  if (f->uffd_state == 0) read_uffd_ranges(f);
  if (f->uffd_state != 1) return true;
  for (int i = 0; i < f->uffd_n; i++)
    if (f->uffd_lo[i] < hi && f->uffd_hi[i] > lo) return true;
  return false;
}

static void scan_copied(flood_t *f, uintptr_t lo, uintptr_t hi, bool mapped_only) {
  if (mapped_only) mapped_only = uffd_registered(f, lo, hi);
  if (!f->scratch) f->scratch = hci_os_map(SCRATCH_MAP);
  if (!f->scratch) {
    f->r->oom = true;
    return;
  }
  unsigned char *vec = (unsigned char *)f->scratch + SCRATCH_VEC;
  for (uintptr_t a = lo & ~(uintptr_t)7; a < hi;) {
    uintptr_t page = a & ~(uintptr_t)4095;
    uintptr_t wend = hi - page > RES_WINDOW ? page + RES_WINDOW : hi;
    if (mincore((void *)page, wend - page, vec) != 0) { /* residency unknown: read it all */
      scan_resident(f, a, wend, mapped_only);
      a = wend;
      continue;
    }
    size_t npages = (wend - page + 4095) / 4096;
    for (size_t i = 0; i < npages;) {
      uint64_t eight;
      if (i % 8 == 0 && i + 8 <= npages && (memcpy(&eight, vec + i, 8), eight == 0)) {
        i += 8;
        continue;
      }
      if (!(vec[i] & 1)) {
        i++;
        continue;
      }
      size_t j = i + 1;
      while (j < npages && (vec[j] & 1)) j++;
      uintptr_t l = page + i * 4096, h = page + j * 4096;
      scan_resident(f, l > a ? l : a, h < wend ? h : wend, mapped_only);
      i = j;
    }
    a = wend;
  }
}

void hci_fl_root_cb(void *ctx, uintptr_t lo, uintptr_t hi, hci_root_kind_t kind) {
  flood_t *f = ctx;
  if (lo >= hi) return;
  if (hci_root_kind_unstable(kind)) {
    scan_copied(f, lo, hi, kind == HCI_ROOT_FILE_MAPPING);
    return;
  }
  if (f->p->align == (int)sizeof(uintptr_t)) { /* 8-aligned chunk boundaries: see hci_fl_drain() */
    uintptr_t a = (lo + sizeof(uintptr_t) - 1) & ~(uintptr_t)(sizeof(uintptr_t) - 1);
    /* A module's globals leave out their pages the page tables do not
     * hold (never written: the file's data or zeros) and guard regions a
     * program put in its .bss (hci_fl_push_populated). */
    if (a < hi && kind == HCI_ROOT_GLOBAL) hci_fl_push_populated(f, a, hi - a);
    else if (a < hi) push(f, a, hi - a);
  } else {
    hci_fl_scan_range(f, lo, hi);
  }
  hci_fl_drain(f);
}

/* A registered region, clipped to readable mappings (it may be stale). */
void hci_fl_scan_region(flood_t *f, const hci_maps_t *maps, uintptr_t lo, uintptr_t hi) {
  if (maps->n == 0) return; /* cannot tell what is mapped: skip rather than fault */
  for (int i = 0; i < maps->n; i++) {
    const hci_map_t *m = &maps->v[i];
    if (m->hi <= lo || m->lo >= hi) continue;
    if (!(m->flags & HCI_MAP_R) || (m->flags & (HCI_MAP_SPECIAL | HCI_MAP_DEVICE))) continue;
    /* A region may be a file mapping (SIGBUS past the file's end) or be
     * unmapped by a thread that runs: read through a copy; but for a
     * private anonymous mapping, only what this mapping holds. */
    bool anon = (m->flags & (HCI_MAP_ANON | HCI_MAP_PRIVATE)) == (HCI_MAP_ANON | HCI_MAP_PRIVATE);
    scan_copied(f, lo > m->lo ? lo : m->lo, hi < m->hi ? hi : m->hi, !anon);
  }
}

/* Objects flagged HC_OBJ_IGNORED (IgnoreObject, Disabler) are roots. */
static void ignored_root(flood_t *f, uint8_t *m, const hci_heap_slot_t *o, const hc_objmeta_t *rec) {
  if (!rec->stack_id || !(atomic_load_explicit(&rec->xflags, memory_order_relaxed) & HC_OBJ_IGNORED)) return;
  mark_live(f, m, o->start, hci_heap_slot_size(o));
  hci_fl_drain(f);
}

/* The same for the objects the flood reached only through a pointer into
 * their middle (pending): a root is live, not "possibly lost" - a thread's
 * DTV, which glibc's descriptor points to one entry in (valgrind and our
 * report called every live thread's DTV possibly lost), an ignored object
 * whose only pointer is interior. */
static void pending_too(flood_t *f, fl_slot_fn fn) {
  if (!f->npending) return;
  for_each_slot(f, fn);
}

static void pending_ignored_root(flood_t *f, uint8_t *m, const hci_heap_slot_t *o, const hc_objmeta_t *rec) {
  if (*m == M_PENDING) ignored_root(f, m, o, rec);
}

void hci_fl_push_ignored(flood_t *f) {
  for_each_unmarked(f, ignored_root);
  pending_too(f, pending_ignored_root);
}

/* Allocated by the dynamic loader (its first frame is in ld.so: DTV,
 * dynamic TLS blocks, link maps) or by a suppressed stack.  Cached per id.
 * With use_ld_allocations=0 the loader's objects made inside pthread_create
 * stay roots: a thread's DTV, which glibc keeps with the descriptor in its
 * stack cache after the join, reachable from nothing we scan (LSan ignores
 * whatever pthread_create allocates, for that reason). */
static bool extra_root(flood_t *f, uint32_t id) {
  ldso_ent_t *c = f->ldso ? &f->ldso[id % LDSO_CACHE] : NULL;
  if (c && c->id == id) return c->is_root;
  const uintptr_t *pcs;
  int n = hci_depot_get(id, &pcs);
  bool root = (n > 0 && hci_pc_in_ldso(pcs[0]) && (!f->p->no_ld_roots || hci_stack_in_thread_create(pcs, n))) ||
              hci_supp_is_suppressed(id);
  if (c) {
    c->id = id;
    c->is_root = root;
  }
  return root;
}

static void extra_root_slot(flood_t *f, uint8_t *m, const hci_heap_slot_t *o, const hc_objmeta_t *rec) {
  uint32_t id = rec->stack_id;
  if (!id) {
    *m = M_FREE;
    return;
  }
  if (!extra_root(f, id)) return;
  mark_live(f, m, o->start, hci_heap_slot_size(o));
  hci_fl_drain(f);
}

static void pending_extra_root(flood_t *f, uint8_t *m, const hci_heap_slot_t *o, const hc_objmeta_t *rec) {
  if (*m == M_PENDING && rec->stack_id) extra_root_slot(f, m, o, rec);
}

void hci_fl_push_extra_roots(flood_t *f) {
  f->ldso = hci_os_map(LDSO_CACHE * sizeof(ldso_ent_t));
  for_each_unmarked(f, extra_root_slot);
  pending_too(f, pending_extra_root);
}


/* test_size_classes.c - exhaustive checks of the size-class table.
 *
 * For every request size 0..HC_MAX_SMALL: the class fits, is 16-byte
 * aligned, wastes <= 12.5% (less than 16 bytes below 128), and is the
 * smallest fitting class.  For every class: span geometry (objs, tail
 * waste), the reciprocal used for object indexes (exact for every offset of
 * the span), and hc_is_object_start() true exactly at object starts.
 * Failures print the first offending size/class and the test exits 1. */
#include <stdio.h>
#include <stdlib.h>

#include "alloc_inline.h"

static int failures;
#define FAIL(...)                                   \
  do {                                              \
    if (failures++ < 20) {                          \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                 \
      fputc('\n', stderr);                          \
    }                                               \
  } while (0)

static void check_lookup(void) {
  if (hci_class_index(HC_MAX_SMALL) >= HC_CLASS_LOOKUP_LEN)
    FAIL("lookup index of HC_MAX_SMALL %zu out of table (%d)", hci_class_index(HC_MAX_SMALL),
         HC_CLASS_LOOKUP_LEN);
  for (size_t size = 0; size <= HC_MAX_SMALL; size++) {
    unsigned c = hci_size_class(size);
    if (c == 0 || c >= HC_NUM_CLASSES) {
      FAIL("size %zu: class %u out of range", size, c);
      continue;
    }
    size_t cs = hci_classes[c].size;
    if (cs < size) FAIL("size %zu: class %u size %zu does not fit", size, c, cs);
    if (cs % 16) FAIL("size %zu: class %u size %zu not a multiple of 16", size, c, cs);
    if (size >= 128) {
      if ((cs - size) * 8 > size) FAIL("size %zu: class size %zu wastes more than 12.5%%", size, cs);
    } else if (size == 0) {
      if (cs != 16) FAIL("size 0: class size %zu, want 16", cs);
    } else if (cs - size >= 16) {
      FAIL("size %zu: class size %zu wastes >= 16 bytes", size, cs);
    }
    if (c > 1 && hci_classes[c - 1].size >= size)
      FAIL("size %zu: class %u (size %zu) is not the smallest fit, class %u (size %u) fits", size, c, cs, c - 1,
           hci_classes[c - 1].size);
  }
  /* every class is reachable: its own size maps to it */
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++)
    if (hci_size_class(hci_classes[c].size) != c)
      FAIL("class %u (size %u) is not the class of its own size (got %u)", c, hci_classes[c].size,
           hci_size_class(hci_classes[c].size));
  if (hci_classes[HC_NUM_CLASSES - 1].size != HC_MAX_SMALL)
    FAIL("last class size %u != HC_MAX_SMALL", hci_classes[HC_NUM_CLASSES - 1].size);
  if (hci_classes[0].size != 0) FAIL("class 0 must be the 'not small' class, has size %u", hci_classes[0].size);
}

static void check_class(unsigned c) {
  const hc_class_info_t *ci = &hci_classes[c];
  size_t span = (size_t)ci->pages * HC_PAGE_SIZE;
  if (c > 1 && ci->size <= hci_classes[c - 1].size)
    FAIL("class %u: size %u not above class %u's %u", c, ci->size, c - 1, hci_classes[c - 1].size);
  if (ci->pages == 0 || ci->batch == 0 || ci->objs == 0) {
    FAIL("class %u: pages %u batch %u objs %u must be > 0", c, ci->pages, ci->batch, ci->objs);
    return;
  }
  if (span / ci->size != ci->objs) FAIL("class %u: objs %u != %zu / %u", c, ci->objs, span, ci->size);
  if ((span - (size_t)ci->objs * ci->size) * 8 > span)
    FAIL("class %u: tail waste %zu of %zu > 1/8", c, span - (size_t)ci->objs * ci->size, span);
  /* A span's tail shares its last page with objects (resident): for a
   * class up to 1 KiB, when some span of at most 8 pages holding the
   * class's minimum of objects (min(8, 64 KiB / size)) wastes at most
   * 1/32, the class's span is the smallest such (tools/gen_size_classes.py). */
  size_t want = 65536 / ci->size < 8 ? 65536 / ci->size : 8;
  if (want == 0) want = 1;
  for (size_t p = 1; p <= 8 && ci->size <= 1024; p++) {
    size_t sp = p * HC_PAGE_SIZE;
    if (sp / ci->size < want || (sp % ci->size) * 32 > sp) continue;
    if (ci->pages != p)
      FAIL("class %u (size %u): %u pages per span, but %zu pages hold %zu objects with a tail of %zu (<= 1/32)", c,
           ci->size, ci->pages, p, sp / ci->size, sp % ci->size);
    break;
  }
  if (ci->pages > 255) FAIL("class %u: %u pages do not fit the pagemap's page offset", c, ci->pages);
  uint64_t want_recip = (((uint64_t)1 << 48) + ci->size - 1) / ci->size;
  if (ci->recip != want_recip) FAIL("class %u: recip %llu != ceil(2^48/size) %llu", c,
                                    (unsigned long long)ci->recip, (unsigned long long)want_recip);
  for (uintptr_t off = 0; off < span; off++) {
    uintptr_t idx = (off * ci->recip) >> 48;
    if (idx != off / ci->size) {
      FAIL("class %u: (%zu * recip) >> 48 = %zu, want %zu", c, (size_t)off, (size_t)idx, (size_t)(off / ci->size));
      return;
    }
    bool start = hc_is_object_start(off, ci);
    bool want = off % ci->size == 0 && off / ci->size < ci->objs;
    if (start != want) {
      FAIL("class %u (size %u, %u objs): hc_is_object_start(%zu) = %d, want %d%s", c, ci->size, ci->objs,
           (size_t)off, start, want, off / ci->size >= ci->objs ? " (offset in the span's tail)" : "");
      return;
    }
    /* the free fast path's form of the same test (thread-cache list copy) */
    bool fast = hc_tc_is_start(off, ci->recip, hc_start_lim(ci));
    if (fast != want) {
      FAIL("class %u (size %u, %u objs): hc_tc_is_start(%zu) = %d, want %d", c, ci->size, ci->objs, (size_t)off,
           fast, want);
      return;
    }
  }
  /* offsets past the span (a pointer into the next span's pages never
   * maps to this span, but the test must not accept them either) */
  for (uintptr_t off = span; off < span + 4 * HC_PAGE_SIZE; off += 16)
    if (hc_tc_is_start(off, ci->recip, hc_start_lim(ci))) {
      FAIL("class %u: hc_tc_is_start(%zu) past the span", c, (size_t)off);
      return;
    }
}

int main(void) {
  check_lookup();
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) check_class(c);
  if (failures) {
    fprintf(stderr, "%d failures\n", failures);
    return 1;
  }
  printf("size classes OK (%d classes)\n", HC_NUM_CLASSES - 1);
  return 0;
}

/* stats.c - counters and the malloc_stats() report.
 *
 * Numbers are read without stopping the world, so a report taken while
 * other threads allocate is approximate (each counter is exact on its own).
 * The layout follows tcmalloc's: totals first, then one line per size class. */
#include "hc_internal.h"
#include "heapcheck.h"

static size_t sampled_totals(size_t *bytes) {
  size_t n = 0, b = 0;
  hci_lock(&hci_samples.lock);
  for (hc_span_t *s = hci_samples.head; s; s = s->snext) {
    n++;
    b += s->weight > s->req_size ? s->weight : s->req_size;
  }
  hci_unlock(&hci_samples.lock);
  *bytes = b;
  return n;
}

void hci_stats_get(hc_stats_t *st) {
  hc_pageheap_t *ph = &hci_pageheap;
  size_t central = 0;
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) central += hci_central_free_objects(c) * hci_classes[c].size;
  size_t tcache = hci_tc_total_bytes();
  size_t small_spans = 0, small_objs = 0, large = 0;
  size_t stashed = hci_sample_stash_bytes(); /* in use for the page heap, free for the program */
  size_t quar_small, quar_large; /* checker mode's quarantine: likewise */
  hci_quarantine_held(&quar_small, &quar_large);
  hci_lock(&ph->lock);
  size_t mapped = ph->mapped_bytes;
  size_t released = ph->released_pages << HC_PAGE_SHIFT;
  size_t free_committed = ph->free_pages << HC_PAGE_SHIFT;
  size_t spans_inuse = ph->inuse_bytes;
  hci_unlock(&ph->lock);
  /* Small spans in bytes (to tell large spans apart) and in object bytes:
   * the tail of a span that holds no whole object is nobody's, not in use. */
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) {
    size_t n = __atomic_load_n(&hci_central[c].nspans, __ATOMIC_RELAXED);
    small_spans += n * hci_classes[c].pages << HC_PAGE_SHIFT;
    small_objs += n * hci_classes[c].objs * hci_classes[c].size;
  }
  large = spans_inuse > small_spans + stashed + quar_large ? spans_inuse - small_spans - stashed - quar_large : 0;
  size_t small_free = central + tcache + quar_small;
  st->heap_mapped = mapped;
  st->heap_released = released;
  st->small_in_use = small_objs > small_free ? small_objs - small_free : 0;
  st->large_in_use = large;
  st->in_use = st->small_in_use + st->large_in_use;
  st->page_heap_free = free_committed + stashed;
  st->central_free = central;
  st->thread_cache_free = tcache;
  st->metadata = hci_meta_bytes();
  st->thread_caches = hci_tc_count();
  st->sampled_objects = sampled_totals(&st->sampled_bytes);
  st->stacks = hci_depot_count();
}

static void line(int fd, const char *label, size_t bytes) {
  hci_fdprintf(fd, "MALLOC: %15zu (%8zu MiB) %s\n", bytes, bytes >> 20, label);
}

void hci_stats_print(int fd) {
  hc_stats_t st;
  hci_stats_get(&st);
  hci_fdprintf(fd, "------------------------------------------------\n");
  line(fd, "Bytes in use by application", st.in_use);
  line(fd, "Bytes in page heap freelist", st.page_heap_free);
  line(fd, "Bytes in central cache freelist", st.central_free);
  line(fd, "Bytes in thread cache freelists", st.thread_cache_free);
  line(fd, "Bytes in malloc metadata", st.metadata);
  hci_fdprintf(fd, "MALLOC:   ------------\n");
  line(fd, "Actual memory used (physical + swap)", st.heap_mapped - st.heap_released + st.metadata);
  line(fd, "Bytes released to OS (aka unmapped)", st.heap_released);
  hci_fdprintf(fd, "MALLOC:   ------------\n");
  line(fd, "Virtual address space used", st.heap_mapped + st.metadata);
  hci_fdprintf(fd, "MALLOC:\n");
  hci_fdprintf(fd, "MALLOC: %15zu              Thread heaps in use\n", st.thread_caches);
  hci_fdprintf(fd, "MALLOC: %15zu              Sampled objects live\n", st.sampled_objects);
  hci_fdprintf(fd, "MALLOC: %15zu              Distinct stacks recorded\n", st.stacks);
  hci_fdprintf(fd, "MALLOC: %15zu              Tcmalloc page size\n", HC_PAGE_SIZE);
  hci_fdprintf(fd, "------------------------------------------------\n");
  hci_fdprintf(fd, "Total size of freelists for per-thread and central caches:\n");
  hci_fdprintf(fd, "class %3s [ %8s bytes ] : %8s objs; %7s MiB free; %6s spans; %5s pages/span\n", "#",
               "size", "free", "", "", "");
  for (unsigned c = 1; c < HC_NUM_CLASSES; c++) {
    size_t objs = hci_central_free_objects(c);
    size_t spans = __atomic_load_n(&hci_central[c].nspans, __ATOMIC_RELAXED);
    if (!objs && !spans) continue;
    size_t bytes = objs * hci_classes[c].size;
    hci_fdprintf(fd, "class %3u [ %8u bytes ] : %8zu objs; %7zu.%zu MiB free; %6zu spans; %5u pages/span\n", c,
                 hci_classes[c].size, objs, bytes >> 20, ((bytes & ((1 << 20) - 1)) * 10) >> 20, spans,
                 hci_classes[c].pages);
  }
  hci_fdprintf(fd, "------------------------------------------------\n");
}

// ---- public API ----

hc_public void hc_get_stats(hc_stats_t *out) {
  if (out) hci_stats_get(out);
}

hc_public void hc_print_stats(int fd) { hci_stats_print(fd); }

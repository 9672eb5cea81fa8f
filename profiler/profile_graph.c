/* profile_graph.c - the live heap as a flame graph or folded stacks
 * (HEAPCHECK_REPORT=svg:/folded: with the checker off, HEAP_PROFILE_FORMAT):
 * a per-stack snapshot handed to the symbolizer's graph writer. */
#include "hc_profiler.h"
#include "hc_symbolize.h"

int hci_fg_write_profile(int fd, bool svg, const char *title) {
  hci_prof_snap_t s;
  if (hci_profile_snapshot(&s, true) < 0) return -1;
  size_t map = ((s.n ? s.n : 1) * sizeof(hci_fg_item_t) + 4095) & ~(size_t)4095;
  hci_fg_item_t *v = hci_os_map(map);
  int rc = -1;
  if (v) {
    size_t k = 0;
    for (size_t i = 0; i < s.n; i++) {
      if (!s.v[i].n) continue;
      v[k].stack_id = s.v[i].stack_id;
      v[k].value = (uint64_t)(s.v[i].est_bytes + 0.5);
      v[k].count = (uint64_t)(s.v[i].est_n + 0.5);
      k++;
    }
    char t[600];
    hci_snprintf(t, sizeof t, "%s (%s)", title, s.exact ? "exact" : "estimated from samples");
    rc = svg ? hci_fg_write_svg(fd, v, k, t, "bytes", HCI_FG_PROFILE) : hci_fg_write_folded(fd, v, k);
    hci_os_unmap(v, map);
  }
  hci_profile_snapshot_free(&s);
  return rc;
}

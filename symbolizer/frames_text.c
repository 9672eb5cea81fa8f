/* frames_text.c - a recorded stack as the lines of a text report (the
 * profiler's top sites and old-allocation reports):
 *     "    #K 0x<pc, 16 hex digits> function file:line (module+0xoff)"
 * Symbolizes (takes the symbolizer lock): never in a signal handler, inside
 * malloc or with the world stopped.
 */
#include "hc_internal.h"
#include "hc_symbolize.h"

int hci_stack_lines(uint32_t id, int max, void (*emit)(void *ctx, const char *line), void *ctx) {
  return hci_stack_lines_at(id, 0, max, emit, ctx);
}

int hci_stack_lines_at(uint32_t id, int first, int max, void (*emit)(void *ctx, const char *line), void *ctx) {
  const uintptr_t *pcs;
  int d = hci_depot_get(id, &pcs);
  if (d <= 0) emit(ctx, "    (stack unknown)\n");
  for (int k = 0, shown = first; k < d && shown < first + max; k++) {
    hci_frame_t f;
    char frame[768], line[832];
    hci_symbolize(pcs[k], &f);
    if (f.hidden) continue;
    hci_format_frame(frame, sizeof frame, &f);
    hci_snprintf(line, sizeof line, "    #%d 0x%016lx %s\n", shown++, (unsigned long)pcs[k], frame);
    emit(ctx, line);
  }
  return d;
}

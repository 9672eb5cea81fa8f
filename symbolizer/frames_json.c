/* frames_json.c - a symbolized stack as a JSON array, for the report
 * formats of the leak checker (checker/report_json.c) and of the profiler
 * (profiler/heap_old.c): [{address, module, offset, function,
 * function_offset, file, line}], innermost frame first (schema in
 * docs/report-formats.md).  Same rules as the symbolizer: never in a signal
 * handler or inside malloc.
 */
#include "hc_internal.h"
#include "hc_symbolize.h"

static void hex(hci_out_t *o, const char *key, uintptr_t v) { hci_out_printf(o, "\"%s\":\"0x%lx\"", key, (unsigned long)v); }

void hci_json_frames(hci_out_t *o, uint32_t stack_id) {
  const uintptr_t *pcs;
  int n = hci_depot_get(stack_id, &pcs);
  hci_out_puts(o, "[");
  for (int i = 0, shown = 0; i < n; i++) {
    hci_frame_t f;
    hci_symbolize(pcs[i], &f);
    if (f.hidden) continue;
    hci_out_puts(o, shown++ ? ",{" : "{");
    hex(o, "address", pcs[i]);
    hci_out_puts(o, ",\"module\":");
    hci_out_json_str(o, f.module);
    hci_out_puts(o, ",");
    hex(o, "offset", f.module_offset);
    hci_out_puts(o, ",\"function\":");
    hci_out_json_str(o, f.function);
    hci_out_puts(o, ",\"function_offset\":");
    if (f.function) hci_out_printf(o, "%lu", (unsigned long)f.function_offset);
    else hci_out_puts(o, "null");
    hci_out_puts(o, ",\"file\":");
    hci_out_json_str(o, f.file);
    hci_out_puts(o, ",\"line\":");
    if (f.line > 0) hci_out_printf(o, "%d", f.line);
    else hci_out_puts(o, "null");
    hci_out_puts(o, "}");
  }
  hci_out_puts(o, "]");
}


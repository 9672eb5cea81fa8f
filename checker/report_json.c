/* report_json.c - one leak check as one JSON document (HEAPCHECK_REPORT=json:FILE).
 *
 * The schema ("heapcheck-leak-check/1") is documented in
 * docs/report-formats.md and checked by tests/test_report_formats.sh:
 *   { schema, tool, program, pid, time, check, mode, whole_program,
 *     totals: {leaked_bytes, leaked_objects, direct_bytes, direct_objects,
 *              indirect_bytes, indirect_objects, records,
 *              reachable_bytes, reachable_objects},
 *     leaks: [ {kind, bytes, objects, stack_id, suppression,
 *               frames: [ {address, module, offset, function,
 *                          function_offset, file, line} ] } ] }
 * The document is written on one line (JSON Lines: one document per check).
 * Called from report_out.c (see its rules: world running, no malloc).
 */
#include <string.h>
#include <unistd.h>

#include "hc_checker.h"
#include "hc_symbolize.h"

static void num(hci_out_t *o, const char *key, unsigned long long v, bool comma) {
  hci_out_printf(o, "\"%s\":%llu%s", key, v, comma ? "," : "");
}

void hci_json_check(hci_out_t *o, const hci_fmt_check_t *c) {
  const hci_report_in_t *in = c->in;
  hci_out_puts(o, "{\"schema\":\"heapcheck-leak-check/1\",\"tool\":\"heapcheck\",\"program\":");
  hci_out_json_str(o, hci_prog_name());
  hci_out_printf(o, ",\"pid\":%d,\"time\":%lld,\"check\":", (int)getpid(), (long long)c->unix_time);
  hci_out_json_str(o, in->name);
  hci_out_puts(o, ",\"mode\":");
  hci_out_json_str(o, hci_chk.mode_name);
  hci_out_printf(o, ",\"whole_program\":%s,\"totals\":{", in->whole_program ? "true" : "false");
  num(o, "leaked_bytes", in->bytes, true);
  num(o, "leaked_objects", in->nleaks, true);
  num(o, "direct_bytes", c->direct_bytes, true);
  num(o, "direct_objects", c->direct_objects, true);
  num(o, "indirect_bytes", c->indirect_bytes, true);
  num(o, "indirect_objects", c->indirect_objects, true);
  num(o, "records", c->nrecs, true);
  num(o, "reachable_bytes", in->reach_bytes, true);
  num(o, "reachable_objects", in->reach_objects, false);
  hci_out_puts(o, "},\"leaks\":[");
  for (size_t i = 0; i < c->nrecs; i++) {
    const hci_fmt_rec_t *r = &c->recs[i];
    hci_out_printf(o, "%s{\"kind\":\"%s\",", i ? "," : "", r->kind == HCI_LEAK_INDIRECT ? "indirect" : "direct");
    num(o, "bytes", r->bytes, true);
    num(o, "objects", r->count, true);
    num(o, "stack_id", r->stack_id, true);
    char s[1024];
    hci_out_puts(o, "\"suppression\":");
    hci_out_json_str(o, hci_fmt_suppression(r->stack_id, s, sizeof s) ? s : NULL);
    hci_out_puts(o, ",\"frames\":");
    hci_json_frames(o, r->stack_id);
    hci_out_puts(o, "}");
    if (o->len > sizeof o->buf / 2) hci_out_flush(o);
  }
  hci_out_puts(o, "]}");
}

/* report_sarif.c - leak checks as SARIF 2.1.0 (HEAPCHECK_REPORT=sarif:FILE).
 *
 * One run per check (report_out.c appends runs to the file this process
 * created), one result per leak record.  A result's location is the first
 * frame of its allocation stack that has a source line (preferring the
 * program's frames over libc's and libstdc++'s): GitHub and GitLab code
 * scanning put their annotation on that line.  URIs are relative to
 * %SRCROOT% (HEAPCHECK_SOURCE_ROOT, else the working directory at the time
 * of the report) when the file lies below it, else absolute file:// URIs.
 * The whole stack is in result.stacks[0].  Rules: "direct-leak" (level
 * error) and "indirect-leak" (level warning).
 * Called from report_out.c (world running, no malloc).
 */
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "hc_checker.h"
#include "hc_symbolize.h"

const char hci_sarif_head[] =
    "{\"$schema\":\"https://json.schemastore.org/sarif-2.1.0.json\",\"version\":\"2.1.0\",\"runs\":[\n";
const char hci_sarif_tail[] = "\n]}\n";

static char root[PATH_MAX];
static size_t root_len;

/* Lexical clean-up of an absolute path in place: "//", "/./" and "d/../"
 * go (symbolic links are not resolved: no realpath, it may allocate). */
static void clean_path(char *p) {
  if (p[0] != '/') return;
  size_t w = 0;
  for (size_t r = 0; p[r];) {
    while (p[r] == '/') r++;
    size_t e = r;
    while (p[e] && p[e] != '/') e++;
    size_t n = e - r;
    if (n == 1 && p[r] == '.') {
    } else if (n == 2 && p[r] == '.' && p[r + 1] == '.') {
      while (w > 0 && p[w - 1] != '/') w--;
      if (w > 0) w--;
    } else if (n) {
      p[w++] = '/';
      memmove(p + w, p + r, n);
      w += n;
    }
    r = e;
  }
  if (w == 0) p[w++] = '/';
  p[w] = 0;
}

static void find_root(void) {
  const char *r = hci_opt_str(HCO_HEAPCHECK_SOURCE_ROOT);
  if (r && *r && strlen(r) < sizeof root - 2) memcpy(root, r, strlen(r) + 1);
  else if (!getcwd(root, sizeof root - 2)) root[0] = 0;
  clean_path(root);
  root_len = strlen(root);
}

/* Percent-encodes what a URI path may not hold. */
static void uri_chars(hci_out_t *o, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    bool ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr("/-._~+,=@:", *p);
    if (ok) {
      hci_out_put(o, (const char *)p, 1);
    } else {
      char e[4];
      hci_snprintf(e, sizeof e, "%%%02X", *p);
      hci_out_put(o, e, 3);
    }
  }
}

static void artifact(hci_out_t *o, const char *file) {
  hci_out_puts(o, "\"artifactLocation\":{\"uri\":\"");
  bool rel = root_len > 1 && strncmp(file, root, root_len) == 0 && file[root_len] == '/';
  if (rel) {
    uri_chars(o, file + root_len + 1);
    hci_out_puts(o, "\",\"uriBaseId\":\"%SRCROOT%\"}");
  } else {
    if (file[0] == '/') hci_out_puts(o, "file://");
    uri_chars(o, file);
    hci_out_puts(o, "\"}");
  }
}

static void physical(hci_out_t *o, const hci_frame_t *f) {
  hci_out_puts(o, "\"physicalLocation\":{");
  artifact(o, f->file);
  hci_out_printf(o, ",\"region\":{\"startLine\":%d}}", f->line);
}

static void logical(hci_out_t *o, const hci_frame_t *f) {
  hci_out_puts(o, "\"logicalLocations\":[{\"name\":");
  hci_out_json_str(o, f->function);
  hci_out_puts(o, ",\"kind\":\"function\"}]");
}

/* The frame the annotation goes on: index, or -1. */
static int primary_frame(const uintptr_t *pcs, int n, hci_frame_t *out) {
  int any = -1;
  hci_frame_t first;
  for (int i = 0; i < n; i++) {
    hci_frame_t f;
    hci_symbolize(pcs[i], &f);
    if (f.hidden || !f.file || f.line <= 0) continue;
    const char *b = strrchr(f.module, '/');
    b = b ? b + 1 : f.module;
    bool runtime = strncmp(b, "libc.so", 7) == 0 || strncmp(b, "libstdc++", 9) == 0 || strncmp(b, "ld-linux", 8) == 0;
    if (!runtime) {
      *out = f;
      return i;
    }
    if (any < 0) {
      any = i;
      first = f;
    }
  }
  if (any >= 0) *out = first;
  return any;
}

static uint64_t fingerprint(const uintptr_t *pcs, int n) {
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < n; i++) {
    hci_frame_t f;
    hci_symbolize(pcs[i], &f);
    if (f.hidden) continue;
    const char *s = f.function ? f.function : "?";
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    h = (h ^ ';') * 1099511628211ull;
  }
  return h;
}

static void result(hci_out_t *o, const hci_fmt_rec_t *r, bool comma) {
  const uintptr_t *pcs;
  int n = hci_depot_get(r->stack_id, &pcs);
  if (n < 0) n = 0;
  bool ind = r->kind == HCI_LEAK_INDIRECT;
  hci_frame_t top = {0}, at = {0};
  if (n > 0) hci_symbolize(pcs[0], &top);
  int p = primary_frame(pcs, n, &at);
  char msg[1536], where[1024] = "";
  if (p >= 0) hci_snprintf(where, sizeof where, " (%s:%d)", at.file, at.line);
  hci_snprintf(msg, sizeof msg, "%s of %zu bytes in %zu objects allocated from %s%s", ind ? "Indirect leak" : "Leak",
               r->bytes, r->count, p >= 0 && at.function ? at.function : top.function ? top.function : "an unknown function",
               where);
  hci_out_printf(o, "%s{\"ruleId\":\"%s\",\"ruleIndex\":%d,\"level\":\"%s\",\"message\":{\"text\":", comma ? "," : "",
                 ind ? "indirect-leak" : "direct-leak", ind ? 1 : 0, ind ? "warning" : "error");
  hci_out_json_str(o, msg);
  hci_out_puts(o, "},\"locations\":[{");
  if (p >= 0) {
    physical(o, &at);
    hci_out_puts(o, ",");
    logical(o, &at);
  } else {
    logical(o, &top);
  }
  hci_out_printf(o, "}],\"partialFingerprints\":{\"heapcheckStack/v1\":\"%016llx\"},",
                 (unsigned long long)fingerprint(pcs, n));
  hci_out_printf(o, "\"properties\":{\"bytes\":%zu,\"objects\":%zu,\"stackId\":%u},", r->bytes, r->count, r->stack_id);
  hci_out_puts(o, "\"stacks\":[{\"message\":{\"text\":\"allocation stack\"},\"frames\":[");
  for (int i = 0, shown = 0; i < n; i++) {
    hci_frame_t f;
    hci_symbolize(pcs[i], &f);
    if (f.hidden) continue;
    hci_out_puts(o, shown++ ? ",{\"location\":{" : "{\"location\":{");
    if (f.file && f.line > 0) {
      physical(o, &f);
      hci_out_puts(o, ",");
    }
    char text[1024];
    hci_format_frame(text, sizeof text, &f);
    hci_out_puts(o, "\"message\":{\"text\":");
    hci_out_json_str(o, text);
    hci_out_puts(o, "}");
    if (f.function) {
      hci_out_puts(o, ",");
      logical(o, &f);
    }
    hci_out_puts(o, "},\"module\":");
    hci_out_json_str(o, f.module);
    hci_out_printf(o, ",\"properties\":{\"address\":\"0x%lx\",\"offset\":\"0x%lx\"}}", (unsigned long)pcs[i],
                   (unsigned long)f.module_offset);
  }
  hci_out_puts(o, "]}]}");
  hci_out_flush(o);
}

void hci_sarif_run(hci_out_t *o, const hci_fmt_check_t *c) {
  static unsigned seq;
  find_root();
  hci_out_puts(o,
               "{\"tool\":{\"driver\":{\"name\":\"heapcheck\",\"rules\":["
               "{\"id\":\"direct-leak\",\"name\":\"MemoryLeak\",\"shortDescription\":{\"text\":\"Memory leak\"},"
               "\"fullDescription\":{\"text\":\"Heap memory allocated here is no longer reachable from any root "
               "(globals, thread stacks, registers, TLS) and was never freed.\"},"
               "\"defaultConfiguration\":{\"level\":\"error\"},\"help\":{\"text\":\"Free the object when it is no "
               "longer needed, or keep a pointer to it.  A known leak can be suppressed with a leak:FUNCTION line in "
               "HEAPCHECK_SUPPRESSIONS.\"}},"
               "{\"id\":\"indirect-leak\",\"name\":\"IndirectMemoryLeak\",\"shortDescription\":{\"text\":\"Indirect "
               "memory leak\"},\"fullDescription\":{\"text\":\"Heap memory allocated here is reachable only from "
               "leaked objects; fixing the direct leak that owns it fixes it.\"},"
               "\"defaultConfiguration\":{\"level\":\"warning\"}}]}},");
  hci_out_puts(o, "\"automationDetails\":{\"id\":\"heapcheck/");
  for (const char *s = c->in->name; *s; s++) {
    char ch = (*s == '/' || *s == '"' || *s == '\\' || (unsigned char)*s < 0x20) ? '_' : *s;
    hci_out_put(o, &ch, 1);
  }
  hci_out_printf(o, "/%d-%u\"},", (int)getpid(), ++seq);
  if (root_len) {
    hci_out_puts(o, "\"originalUriBaseIds\":{\"%SRCROOT%\":{\"uri\":\"file://");
    uri_chars(o, root);
    hci_out_puts(o, "/\"}},");
  }
  hci_out_puts(o, "\"invocations\":[{\"executionSuccessful\":true,\"commandLine\":");
  hci_out_json_str(o, hci_prog_name());
  hci_out_printf(o, ",\"properties\":{\"pid\":%d,\"check\":", (int)getpid());
  hci_out_json_str(o, c->in->name);
  hci_out_puts(o, ",\"mode\":");
  hci_out_json_str(o, hci_chk.mode_name);
  hci_out_printf(o, ",\"leakedBytes\":%zu,\"leakedObjects\":%zu}}],\"results\":[", c->in->bytes, c->in->nleaks);
  for (size_t i = 0; i < c->nrecs; i++) result(o, &c->recs[i], i > 0);
  hci_out_puts(o, "]}");
}

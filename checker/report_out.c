/* report_out.c - HEAPCHECK_REPORT and the machine-readable report files.
 *
 * HEAPCHECK_REPORT is a comma-separated list of items (docs/report-formats.md):
 *   top[:N]            at exit, the top N call sites (heap_top.c)
 *   json:FILE          one JSON document per leak check, one per line
 *   sarif:FILE         SARIF 2.1.0 log, one run per leak check
 *   svg:FILE           flame graph of each check's leaks (of the live heap at
 *                      exit when the checker is off)
 *   folded:FILE        the same as folded stacks ("f1;f2;f3 bytes")
 *   suppressions       print a ready-to-paste suppression under each record
 *   suppressions:FILE  append every record's suppression to FILE
 *   old:AGE[:PERIOD]   live samples older than AGE, every PERIOD (heap_old.c)
 *   peak               a snapshot at each new high-water mark (heap_old.c)
 * FILE may contain %p (pid), %n (check name) and %%.
 *
 * Everything here runs with the world going, after a check, from the
 * checking thread (never inside malloc or a signal handler): the symbolizer
 * may be used.  Files are written through hci_out_t (no stdio, no malloc);
 * buffers come from hci_os_map.  Files are created afresh (unlink, then
 * O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600), appended to only when this
 * process created them (json, sarif) or when they are suppression lists.
 *
 * Locks: called with hci_chk_lock held (one check at a time), which also
 * guards the small state below.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hc_checker.h"
#include "hc_symbolize.h"

// ---- HEAPCHECK_REPORT ----

static hci_report_opts_t R;
static bool r_read;
static char r_text[4 * PATH_MAX]; /* private copy of the variable, items cut in place */

/* "5m", "30s", "500ms", "2h", "10" (seconds); 0 on error. */
__attribute__((unused)) static uint64_t parse_duration(const char *s) {
  if (!*s) return 0;
  uint64_t v = 0;
  const char *p = s;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (v > 1000000000ull) return 0;
    v = v * 10 + (uint64_t)(*p - '0');
  }
  if (p == s) return 0;
  uint64_t unit = 1000000000ull;
  if (strcmp(p, "ms") == 0) unit = 1000000ull;
  else if (strcmp(p, "m") == 0) unit = 60ull * 1000000000ull;
  else if (strcmp(p, "h") == 0) unit = 3600ull * 1000000000ull;
  else if (*p && strcmp(p, "s") != 0) return 0;
  return v * unit;
}

static void bad_item(const char *item, const char *why) {
  hci_warn("HEAPCHECK_REPORT: \"%s\": %s; item ignored (items: top[:N], json:FILE, sarif:FILE, svg:FILE, "
           "folded:FILE, suppressions[:FILE])",
           item, why);
}

static void parse_item(char *it) {
  char *arg = strchr(it, ':');
  if (arg) *arg++ = 0;
  if (strcmp(it, "top") == 0) {
    R.top_n = 10;
    if (arg) {
      long n = 0;
      const char *p = arg;
      for (; *p >= '0' && *p <= '9' && n < 1000000; p++) n = n * 10 + (*p - '0');
      if (*p || n <= 0 || n > 100000) hci_warn("HEAPCHECK_REPORT=top:%s: bad N; using the default 10", arg);
      else R.top_n = (int)n;
    }
    return;
  }
  const char **file = strcmp(it, "json") == 0     ? &R.json
                      : strcmp(it, "sarif") == 0  ? &R.sarif
                      : strcmp(it, "svg") == 0    ? &R.svg
                      : strcmp(it, "folded") == 0 ? &R.folded
                                                  : NULL;
  if (file) {
    if (!arg || !*arg) bad_item(it, "needs a file name (e.g. json:/tmp/leaks.%p.json)");
    else *file = arg;
    return;
  }
  if (strcmp(it, "suppressions") == 0) {
    if (arg && *arg) R.supp_file = arg;
    else R.supp_print = true;
    return;
  }
  bad_item(it, "unknown item");
}

const hci_report_opts_t *hci_report_opts(void) {
  if (r_read) return &R;
  r_read = true;
  const char *v = hci_env_get("HEAPCHECK_REPORT");
  if (!v || !*v) return &R;
  size_t n = strlen(v);
  if (n >= sizeof r_text) {
    hci_warn("HEAPCHECK_REPORT is longer than %zu characters; ignored", sizeof r_text - 1);
    return &R;
  }
  memcpy(r_text, v, n + 1);
  for (char *it = r_text; it;) {
    char *comma = strchr(it, ',');
    if (comma) *comma = 0;
    if (*it) parse_item(it);
    it = comma ? comma + 1 : NULL;
  }
  return &R;
}

// ---- writing helpers ----

void hci_out_put(hci_out_t *o, const char *s, size_t n) {
  while (n) {
    if (o->len == sizeof o->buf) hci_out_flush(o);
    size_t k = sizeof o->buf - o->len < n ? sizeof o->buf - o->len : n;
    memcpy(o->buf + o->len, s, k);
    o->len += k;
    s += k;
    n -= k;
  }
}

void hci_out_puts(hci_out_t *o, const char *s) { hci_out_put(o, s, strlen(s)); }

void hci_out_json_str(hci_out_t *o, const char *s) {
  if (!s) {
    hci_out_put(o, "null", 4);
    return;
  }
  hci_out_put(o, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    char esc[8];
    if (*p == '"' || *p == '\\') {
      esc[0] = '\\';
      esc[1] = (char)*p;
      hci_out_put(o, esc, 2);
    } else if (*p < 0x20 || *p == 0x7f) {
      hci_snprintf(esc, sizeof esc, "\\u%04x", *p);
      hci_out_put(o, esc, 6);
    } else {
      hci_out_put(o, (const char *)p, 1);
    }
  }
  hci_out_put(o, "\"", 1);
}

void hci_out_xml(hci_out_t *o, const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
      case '&': hci_out_puts(o, "&amp;"); break;
      case '<': hci_out_puts(o, "&lt;"); break;
      case '>': hci_out_puts(o, "&gt;"); break;
      case '"': hci_out_puts(o, "&quot;"); break;
      case '\'': hci_out_puts(o, "&apos;"); break;
      default:
        /* Control characters are not allowed in XML 1.0. */
        if (*p < 0x20 && *p != '\t') hci_out_put(o, "?", 1);
        else hci_out_put(o, (const char *)p, 1);
    }
  }
}

void hci_fmt_path(char *buf, size_t size, const char *tmpl, const char *name) {
  size_t n = 0;
  char tmp[32];
  for (const char *t = tmpl; *t && n + 1 < size; t++) {
    const char *ins = NULL;
    if (t[0] == '%' && t[1] == 'p') {
      hci_snprintf(tmp, sizeof tmp, "%d", (int)getpid());
      ins = tmp;
    } else if (t[0] == '%' && t[1] == 'n') {
      ins = name ? name : "heap";
    } else if (t[0] == '%' && t[1] == '%') {
      ins = "%";
    }
    if (!ins) {
      buf[n++] = *t;
      continue;
    }
    t++;
    /* A check name is not a path: '/' becomes '_'. */
    bool is_name = ins == name;
    for (; *ins && n + 1 < size; ins++) buf[n++] = is_name && *ins == '/' ? '_' : *ins;
  }
  buf[n] = 0;
}

int hci_fmt_create(const char *path, const char *what) {
  if (hci_is_secure()) return -1; /* a privileged program writes no files on the environment's say */
  unlink(path);
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) hci_chk_log(HCI_LOG_ERROR, "heapcheck: error: cannot create %s file %s (errno %d)", what, path, errno);
  return fd;
}

hci_out_t *hci_out_new(int fd) {
  hci_out_t *o = hci_os_map(sizeof *o);
  if (o) o->fd = fd;
  return o;
}

/* Flushes, closes and frees; false when something failed. */
bool hci_out_close(hci_out_t *o, const char *path) {
  hci_out_flush(o);
  bool ok = !o->failed;
  if (close(o->fd) != 0) ok = false;
  hci_os_unmap(o, sizeof *o);
  if (!ok) hci_chk_log(HCI_LOG_ERROR, "heapcheck: error: writing %s failed", path);
  return ok;
}

/* Paths this process created (json, sarif: later checks append). */
static struct {
  int n;
  uint64_t hash[32];
} made; /* inherited by a fork child, which appends to its parent's files */

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h ? h : 1;
}

static bool made_here(const char *path, bool mark) {
  uint64_t h = hash_str(path);
  for (int i = 0; i < made.n; i++)
    if (made.hash[i] == h) return true;
  if (mark && made.n < 32) made.hash[made.n++] = h;
  return false;
}

// ---- frames ----

static bool boring_module(const char *m) {
  const char *b = strrchr(m, '/');
  b = b ? b + 1 : m;
  static const char *const libs[] = {"libc.so", "libstdc++.so", "ld-linux", "libheapcheck.so", "libc++.so",
                                     "libgcc_s.so"};
  for (size_t i = 0; i < sizeof libs / sizeof libs[0]; i++)
    if (strncmp(b, libs[i], strlen(libs[i])) == 0) return true;
  return false;
}

bool hci_fmt_suppression(uint32_t stack_id, char *buf, size_t size) {
  const uintptr_t *pcs;
  int n = hci_depot_get(stack_id, &pcs);
  const char *module = NULL;
  for (int i = 0; i < n; i++) {
    hci_frame_t f;
    hci_symbolize(pcs[i], &f);
    if (!module && f.module && strcmp(f.module, "?") != 0) module = f.module;
    /* The first named frame outside libc, libstdc++ and the loader: the
     * program's own allocation site, not strdup or std::string. */
    if (f.function && *f.function && !strchr(f.function, '#') && !boring_module(f.module)) {
      hci_snprintf(buf, size, "leak:^%s$", f.function);
      return true;
    }
  }
  if (module) {
    const char *b = strrchr(module, '/');
    hci_snprintf(buf, size, "leak:%s", b ? b + 1 : module);
    return true;
  }
  return false;
}

void hci_fmt_print_suppression(hci_out_t *o, uint32_t stack_id) {
  char s[1024];
  if (hci_fmt_suppression(stack_id, s, sizeof s)) hci_out_printf(o, "Suppression: %s\n", s);
  else hci_out_printf(o, "Suppression: (none: the stack has no named frame)\n");
}

// ---- records ----

static int cmp_leak(const void *a, const void *b) {
  const hci_leak_t *x = a, *y = b;
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

static int cmp_rec(const void *a, const void *b) {
  const hci_fmt_rec_t *x = a, *y = b;
  if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
  if (x->bytes != y->bytes) return x->bytes > y->bytes ? -1 : 1;
  if (x->count != y->count) return x->count > y->count ? -1 : 1;
  return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/* Groups the leaks by (kind, stack) in the text report's order. */
static hci_fmt_rec_t *make_recs(const hci_report_in_t *in, size_t *nrec, size_t *map) {
  *nrec = 0;
  *map = 0;
  if (!in->nleaks) return NULL;
  size_t lmap = (in->nleaks * sizeof(hci_leak_t) + 4095) & ~(size_t)4095;
  hci_leak_t *l = hci_os_map(lmap);
  if (!l) return NULL;
  memcpy(l, in->leaks, in->nleaks * sizeof *l);
  hci_chk_sort(l, in->nleaks, sizeof *l, cmp_leak);
  size_t k = 0;
  for (size_t i = 0; i < in->nleaks; i++)
    if (i == 0 || l[i].stack_id != l[i - 1].stack_id || l[i].kind != l[i - 1].kind) k++;
  *map = (k * sizeof(hci_fmt_rec_t) + 4095) & ~(size_t)4095;
  hci_fmt_rec_t *r = hci_os_map(*map);
  if (r) {
    k = 0;
    for (size_t i = 0; i < in->nleaks; i++) {
      if (i == 0 || l[i].stack_id != l[i - 1].stack_id || l[i].kind != l[i - 1].kind) {
        r[k].stack_id = l[i].stack_id;
        r[k].kind = l[i].kind;
        k++;
      }
      r[k - 1].bytes += l[i].size;
      r[k - 1].count++;
    }
    hci_chk_sort(r, k, sizeof *r, cmp_rec);
    *nrec = k;
  }
  hci_os_unmap(l, lmap);
  return r;
}

// ---- the formats ----

static void write_json(const hci_fmt_check_t *c) {
  char path[PATH_MAX];
  hci_fmt_path(path, sizeof path, R.json, c->in->name);
  int fd;
  if (made_here(path, true)) fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  else fd = hci_fmt_create(path, "JSON report");
  if (fd < 0) return;
  hci_out_t *o = hci_out_new(fd);
  if (!o) {
    close(fd);
    return;
  }
  hci_json_check(o, c);
  hci_out_put(o, "\n", 1);
  if (hci_out_close(o, path) && hci_chk_log_on(1)) hci_chk_log(1, "heapcheck: JSON report written to %s", path);
}

/* A SARIF log must be one document: the first check writes head, run,
 * tail; each later one overwrites the tail with ",run" and the tail. */
static void write_sarif(const hci_fmt_check_t *c) {
  char path[PATH_MAX];
  hci_fmt_path(path, sizeof path, R.sarif, c->in->name);
  size_t tl = strlen(hci_sarif_tail);
  int fd = -1;
  bool more = false;
  if (made_here(path, true)) {
    fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    char tail[64];
    if (fd >= 0 && tl < sizeof tail && lseek(fd, -(off_t)tl, SEEK_END) >= 0 && read(fd, tail, tl) == (ssize_t)tl &&
        memcmp(tail, hci_sarif_tail, tl) == 0 && lseek(fd, -(off_t)tl, SEEK_END) >= 0) {
      more = true;
    } else if (fd >= 0) {
      close(fd);
      fd = -1;
    }
  }
  if (fd < 0) fd = hci_fmt_create(path, "SARIF report");
  if (fd < 0) return;
  hci_out_t *o = hci_out_new(fd);
  if (!o) {
    close(fd);
    return;
  }
  hci_out_puts(o, more ? ",\n" : hci_sarif_head);
  hci_sarif_run(o, c);
  hci_out_puts(o, hci_sarif_tail);
  if (hci_out_close(o, path) && hci_chk_log_on(1)) hci_chk_log(1, "heapcheck: SARIF report written to %s", path);
}

static hci_fg_item_t *leak_items(const hci_fmt_check_t *c, size_t *map) {
  *map = ((c->nrecs ? c->nrecs : 1) * sizeof(hci_fg_item_t) + 4095) & ~(size_t)4095;
  hci_fg_item_t *v = hci_os_map(*map);
  if (!v) return NULL;
  for (size_t i = 0; i < c->nrecs; i++) {
    v[i].stack_id = c->recs[i].stack_id;
    v[i].value = c->recs[i].bytes;
    v[i].count = c->recs[i].count;
  }
  return v;
}

static void write_graph(const hci_fmt_check_t *c, const char *tmpl, bool svg) {
  char path[PATH_MAX], title[512];
  hci_fmt_path(path, sizeof path, tmpl, c->in->name);
  size_t map;
  hci_fg_item_t *v = leak_items(c, &map);
  if (!v) return;
  int fd = hci_fmt_create(path, svg ? "flame graph" : "folded stacks");
  if (fd >= 0) {
    extern char *program_invocation_short_name;
    hci_snprintf(title, sizeof title, "Leaks of check \"%s\" of %s (pid %d): %zu bytes in %zu objects",
                 c->in->name, program_invocation_short_name ? program_invocation_short_name : "?", (int)getpid(),
                 c->in->bytes, c->in->nleaks);
    int rc = svg ? hci_fg_write_svg(fd, v, c->nrecs, title, "bytes", HCI_FG_LEAKS) : hci_fg_write_folded(fd, v, c->nrecs);
    if (close(fd) != 0) rc = -1;
    if (rc < 0) hci_chk_log(HCI_LOG_ERROR, "heapcheck: error: writing %s failed", path);
    else hci_chk_log(1, "heapcheck: %s written to %s", svg ? "flame graph" : "folded stacks", path);
  }
  hci_os_unmap(v, map);
}

/* Appends the records' suppressions (each once per process) to the file. */
static struct {
  int n;
  uint64_t hash[4096];
} supp_seen;

static void write_suppressions(const hci_fmt_check_t *c) {
  if (hci_is_secure() || !c->nrecs) return;
  char path[PATH_MAX];
  hci_fmt_path(path, sizeof path, R.supp_file, c->in->name);
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    hci_chk_log(HCI_LOG_ERROR, "heapcheck: error: cannot open suppressions output %s (errno %d)", path, errno);
    return;
  }
  hci_out_t *o = hci_out_new(fd);
  if (!o) {
    close(fd);
    return;
  }
  size_t written = 0;
  for (size_t i = 0; i < c->nrecs; i++) {
    char s[1024];
    if (!hci_fmt_suppression(c->recs[i].stack_id, s, sizeof s)) continue;
    uint64_t h = hash_str(s);
    bool seen = false;
    for (int k = 0; k < supp_seen.n && !seen; k++) seen = supp_seen.hash[k] == h;
    if (seen) continue;
    if (supp_seen.n < 4096) supp_seen.hash[supp_seen.n++] = h;
    hci_out_printf(o, "%s\n", s);
    written++;
  }
  if (hci_out_close(o, path) && written)
    hci_chk_log(0, "heapcheck: %zu suppression%s appended to %s", written, written == 1 ? "" : "s", path);
}

void hci_fmt_check(const hci_report_in_t *in) {
  hci_report_opts();
  if (!R.json && !R.sarif && !R.svg && !R.folded && !R.supp_file) return;
  hci_fmt_check_t c = {.in = in};
  size_t map = 0;
  hci_fmt_rec_t *recs = make_recs(in, &c.nrecs, &map);
  if (in->nleaks && !recs) {
    hci_chk_log(HCI_LOG_ERROR, "heapcheck: error: out of memory: report files of check \"%s\" not written", in->name);
    return;
  }
  c.recs = recs;
  for (size_t i = 0; i < c.nrecs; i++) {
    if (recs[i].kind == HCI_LEAK_INDIRECT) {
      c.indirect_bytes += recs[i].bytes;
      c.indirect_objects += recs[i].count;
    } else {
      c.direct_bytes += recs[i].bytes;
      c.direct_objects += recs[i].count;
    }
  }
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  c.unix_time = (int64_t)ts.tv_sec;
  if (R.json) write_json(&c);
  if (R.sarif) write_sarif(&c);
  if (R.svg) write_graph(&c, R.svg, true);
  if (R.folded) write_graph(&c, R.folded, false);
  if (R.supp_file) write_suppressions(&c);
  if (recs) hci_os_unmap(recs, map);
}

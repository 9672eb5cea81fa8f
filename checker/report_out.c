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
#include <sys/stat.h>
#include <limits.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hc_checker.h"
#include "hc_symbolize.h"

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h ? h : 1;
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
    if (f.hidden) continue;
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
  hci_sort(l, in->nleaks, sizeof *l, cmp_leak);
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
    hci_sort(r, k, sizeof *r, cmp_rec);
    *nrec = k;
  }
  hci_os_unmap(l, lmap);
  return r;
}

// ---- the formats ----

static void write_json(const hci_fmt_check_t *c) {
  hci_out_t *o = hci_fmt_json_open(c->in->name);
  if (!o) return;
  hci_json_check(o, c);
  hci_out_put(o, "\n", 1);
  hci_fmt_json_close(o);
}

/* A SARIF log must be one document: the first check writes head, run,
 * tail; each later one overwrites the tail with ",run" and the tail. */
static void write_sarif(const hci_fmt_check_t *c) {
  char path[PATH_MAX];
  hci_fmt_path(path, sizeof path, hci_report_opts()->sarif, c->in->name);
  size_t tl = strlen(hci_sarif_tail);
  int fd = -1;
  bool more = false;
  if (hci_fmt_made_here(path, true)) {
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
    hci_snprintf(title, sizeof title, "Leaks of check \"%s\" of %s (pid %d): %zu bytes in %zu objects",
                 c->in->name, *hci_prog_short_name() ? hci_prog_short_name() : "?", (int)getpid(),
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
HC_PRIVATE_STATE(supp_seen);

static void write_suppressions(const hci_fmt_check_t *c) {
  if (hci_is_secure() || !c->nrecs) return;
  char path[PATH_MAX];
  hci_fmt_path(path, sizeof path, hci_report_opts()->supp_file, c->in->name);
  /* O_NONBLOCK: a FIFO nobody reads says ENXIO instead of holding the
   * exit for good (its other threads stopped, its signals held: adv30);
   * only a regular file is written. */
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0600);
  struct stat st;
  if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    close(fd);
    fd = -1;
    errno = EINVAL;
  }
  if (fd < 0) {
    hci_chk_log(HCI_LOG_ERROR, "heapcheck: error: cannot open suppressions output %s (errno %d%s)", path, errno,
                errno == EINVAL || errno == ENXIO ? ": not a regular file" : "");
    return;
  }
  fcntl(fd, F_SETFL, O_APPEND); /* blocking writes again */
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
  if (!hci_report_opts()->json && !hci_report_opts()->sarif && !hci_report_opts()->svg && !hci_report_opts()->folded && !hci_report_opts()->supp_file) return;
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
  if (hci_report_opts()->json) write_json(&c);
  if (hci_report_opts()->sarif) write_sarif(&c);
  if (hci_report_opts()->svg) write_graph(&c, hci_report_opts()->svg, true);
  if (hci_report_opts()->folded) write_graph(&c, hci_report_opts()->folded, false);
  if (hci_report_opts()->supp_file) write_suppressions(&c);
  if (recs) hci_os_unmap(recs, map);
}

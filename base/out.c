/* out.c - the buffered writer on a file descriptor (reports, profile files,
 * report formats) and the helpers that create its files.
 *
 * No malloc, no stdio: text is formatted with hci_vsnprintf into the
 * writer's buffer and written with write(2) when it fills or on flush.
 * A failed write sets o->failed (disk full...) and later output is dropped
 * for that buffer's worth; hci_out_close reports it.  A writer is owned by
 * one thread at a time (its caller's lock).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#include "hc_base.h"

// ---- buffered output ----

void hci_out_flush(hci_out_t *o) {
  if (o->len == 0) return;
  int err = hci_write_err(o->fd, o->buf, o->len);
  if (err && !o->failed) o->err = err;
  if (err) o->failed = true;
  o->len = 0;
}

void hci_out_printf(hci_out_t *o, const char *fmt, ...) {
  char line[2048];
  va_list ap;
  va_start(ap, fmt);
  int n = hci_vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  size_t len = n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
  if (o->len + len > sizeof o->buf) hci_out_flush(o);
  memcpy(o->buf + o->len, line, len);
  o->len += len;
}

// ---- raw output, escaping, files ----

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

int hci_create_own(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) {
    int e = errno;
    (void)fchmod(fd, 0600);
    errno = e;
  }
  return fd;
}

int hci_fmt_create(const char *path, const char *what) {
  if (hci_is_secure()) return -1; /* a privileged program writes no files on the environment's say */
  unlink(path);
  int fd = hci_create_own(path);
  if (fd < 0) hci_log(HCI_LOG_ERROR, "heapcheck: error: cannot create %s file %s (errno %d)", what, path, errno);
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
  if (!ok) hci_log(HCI_LOG_ERROR, "heapcheck: error: writing %s failed", path);
  return ok;
}


// ---- files a process appends to ----

/* Paths this process created (json, sarif). */
static struct {
  hci_lock_t lock;
  int n;
  uint64_t hash[32];
} made = {.lock = HCI_LOCK_INIT(HC_RANK_OUT_FILES)}; /* inherited by a fork child, which appends to its parent's files */
HC_PRIVATE_STATE(made);

static uint64_t hash_str(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h ? h : 1;
}

bool hci_fmt_made_here(const char *path, bool mark) {
  uint64_t h = hash_str(path);
  bool found = false;
  hci_lock(&made.lock);
  for (int i = 0; i < made.n && !found; i++) found = made.hash[i] == h;
  if (!found && mark && made.n < 32) made.hash[made.n++] = h;
  hci_unlock(&made.lock);
  return found;
}

static hci_lock_t json_lock = HCI_LOCK_INIT(HC_RANK_OUT_JSON);
static char json_path[4096];

void hci_fmt_fork_json_locks(hci_lock_fn *each) { each(&json_lock); }
void hci_fmt_fork_files_locks(hci_lock_fn *each) { each(&made.lock); }

hci_out_t *hci_fmt_json_open(const char *name) {
  const char *tmpl = hci_report_opts()->json;
  if (!tmpl) return NULL;
  hci_lock(&json_lock);
  hci_fmt_path(json_path, sizeof json_path, tmpl, name);
  int fd;
  if (hci_fmt_made_here(json_path, true)) fd = open(json_path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  else fd = hci_fmt_create(json_path, "JSON report");
  hci_out_t *o = fd >= 0 ? hci_out_new(fd) : NULL;
  if (!o) {
    if (fd >= 0) close(fd);
    hci_unlock(&json_lock);
  }
  return o;
}

void hci_fmt_json_close(hci_out_t *o) {
  if (hci_out_close(o, json_path)) hci_log(1, "heapcheck: JSON report written to %s", json_path);
  hci_unlock(&json_lock);
}

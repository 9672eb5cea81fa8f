/* suppress.c - leak suppressions (design D18, LSan's file format).
 *
 * HEAPCHECK_SUPPRESSIONS=<file> (HEAP_CHECK_SUPPRESSIONS is accepted too)
 * holds one rule per line:
 *     leak:<pattern>      # comments and blank lines are ignored
 * A pattern is a glob (* any run, ? one character) matched as a substring,
 * like LSan: "^" anchors it at the start, "$" at the end.  It is tried
 * against every frame of a leak's allocation stack: the function name
 * (demangled), the source file and the module path.  A bad line is an error
 * naming file and line; it is skipped and the rest still applies.
 *
 * A suppressed stack's objects become roots and the check is redone, so what
 * they point to is not reported as indirect leaks either (leaks.c).  Every
 * stack id is matched once (symbolizing it) and the answer cached; the cache
 * is read while the world is stopped, so readers take no lock: writers hold
 * the checker lock, and a check (the only reader) holds it too.
 *
 * Memory: the rules and the cache live in the metadata arena (never malloc).
 * Locks: callers hold hci_chk_lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hc_checker.h"
#include "hc_symbolize.h"

#define MAX_RULES 1024
#define MAX_FILE ((size_t)4 << 20)

typedef struct rule {
  const char *pat;     /* the glob; unanchored ends got a '*' (meta arena) */
  size_t objects, bytes; /* matched since the last "Suppressions used" block */
  const char *line;    /* the pattern as written, for the summary (in text) */
} rule_t;

typedef struct cache_ent {
  uint32_t id;         /* 0 = empty slot */
  int32_t rule;        /* matching rule or -1 */
} cache_ent_t;

static struct {
  bool loaded;
  rule_t *rules;
  int nrules;
  char *text;          /* the file's bytes, patterns cut in place */
  size_t text_size;
  cache_ent_t *cache;
  size_t cap, n;       /* open addressing, power-of-two capacity */
} S;
HC_PRIVATE_STATE(S);

// ---- loading ----

/* The file must be a regular text file of at most MAX_FILE bytes: anything
 * else is one clear error and no suppressions (never a silent cut, never a
 * blocking open: O_NONBLOCK, then fstat, so a FIFO is refused at once). */
static char *read_file(const char *path, size_t *size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    hci_chk_log(HCI_LOG_ERROR, "heapcheck: error: cannot open suppressions file %s: %s; no suppressions loaded",
                path, hci_errno_text(errno));
    return NULL;
  }
  struct stat st;
  char why[128] = "";
  if (fstat(fd, &st) != 0) hci_snprintf(why, sizeof why, "%s", hci_errno_text(errno));
  else if (S_ISDIR(st.st_mode)) hci_snprintf(why, sizeof why, "it is a directory");
  else if (S_ISFIFO(st.st_mode)) hci_snprintf(why, sizeof why, "it is a FIFO, not a regular file");
  else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) hci_snprintf(why, sizeof why, "it is a device, not a regular file");
  else if (!S_ISREG(st.st_mode)) hci_snprintf(why, sizeof why, "it is not a regular file");
  else if ((size_t)st.st_size > MAX_FILE)
    hci_snprintf(why, sizeof why, "it has %lld bytes, more than the limit of %zu (4 MiB)", (long long)st.st_size, MAX_FILE);
  size_t cap = why[0] ? 0 : (size_t)st.st_size + 2; /* one more byte: a file that grew is noticed */
  char *buf = cap ? hci_meta_alloc(cap) : NULL;
  size_t len = 0;
  if (cap && !buf) hci_snprintf(why, sizeof why, "out of memory");
  while (buf && len + 1 < cap) {
    ssize_t k = read(fd, buf + len, cap - 1 - len);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) {
      hci_snprintf(why, sizeof why, "read failed: %s", hci_errno_text(errno));
      break;
    }
    if (k == 0) break;
    len += (size_t)k;
  }
  close(fd);
  if (!why[0] && len > (size_t)st.st_size) hci_snprintf(why, sizeof why, "it grew while it was read");
  if (!why[0] && memchr(buf, 0, len)) {
    int line = 1;
    for (const char *c = buf; *c; c++) line += *c == '\n';
    hci_snprintf(why, sizeof why, "line %d holds a NUL byte: it is not a text file", line);
  }
  if (why[0]) {
    hci_chk_log(HCI_LOG_ERROR, "heapcheck: error: suppressions file %s: %s; no suppressions loaded", path, why);
    if (buf) hci_meta_free(buf, cap);
    return NULL;
  }
  buf[len] = 0;
  S.text_size = cap;
  *size = len;
  return buf;
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t' || *s == '\r') s++;
  char *e = s + strlen(s);
  while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) *--e = 0;
  return s;
}

#define MAX_BAD_LINES 20 /* errors printed one by one; the rest are counted */
static int bad_lines;

static void bad_line(const char *file, int lineno, const char *why, const char *text) {
  if (++bad_lines <= MAX_BAD_LINES)
    hci_chk_log(HCI_LOG_ERROR, "heapcheck: error: %s:%d: %s: \"%.200s\" (line ignored)", file, lineno, why, text);
}

static void parse(const char *file, char *text) {
  int lineno = 0, extra = 0, first_extra = 0;
  for (char *line = text; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = 0;
    lineno++;
    char *hash = strchr(line, '#');
    if (hash) *hash = 0;
    char *l = trim(line);
    line = nl ? nl + 1 : NULL;
    if (!*l) continue;
    char *colon = strchr(l, ':');
    if (!colon) {
      bad_line(file, lineno, "expected leak:<pattern>", l);
      continue;
    }
    *colon = 0;
    char *type = trim(l), *pat = trim(colon + 1);
    if (strcmp(type, "leak") != 0) {
      *colon = ':';
      bad_line(file, lineno, "unknown suppression type (only \"leak\" is supported)", l);
      continue;
    }
    if (!*pat || strcmp(pat, "^") == 0 || strcmp(pat, "$") == 0) {
      bad_line(file, lineno, "empty pattern", "leak:");
      continue;
    }
    if (S.nrules == MAX_RULES) {
      if (extra++ == 0) first_extra = lineno;
      continue;
    }
    bool a0 = pat[0] == '^';
    size_t n = strlen(pat);
    bool a1 = n > 1 && pat[n - 1] == '$';
    size_t core = n - a0 - a1;
    if (core == 0) {
      bad_line(file, lineno, "empty pattern", pat);
      continue;
    }
    /* Substring semantics: an unanchored end is an implicit '*'. */
    char *glob = hci_meta_alloc(core + 3);
    if (!glob) continue;
    size_t g = 0;
    if (!a0) glob[g++] = '*';
    memcpy(glob + g, pat + a0, core);
    g += core;
    if (!a1) glob[g++] = '*';
    glob[g] = 0;
    rule_t *r = &S.rules[S.nrules++];
    r->line = pat;
    r->pat = glob;
  }
  if (bad_lines > MAX_BAD_LINES)
    hci_chk_log(HCI_LOG_ERROR, "heapcheck: error: %s: %d more bad lines ignored (%d in all)", file,
                bad_lines - MAX_BAD_LINES, bad_lines);
  if (extra)
    hci_chk_log(HCI_LOG_ERROR,
                "heapcheck: error: %s: more than %d suppressions: the %d from line %d on are ignored", file,
                MAX_RULES, extra, first_extra);
}

void hci_supp_init(void) {
  if (S.loaded) return;
  S.loaded = true;
  /* The program's __lsan_default_suppressions() first (LSan's order), then the file. */
  const char *builtin = hci_lsan_default_suppressions();
  if (!hci_chk.suppressions && !(builtin && *builtin)) return;
  S.rules = hci_meta_alloc(MAX_RULES * sizeof(rule_t));
  if (!S.rules) return;
  if (builtin && *builtin) {
    size_t n = strlen(builtin);
    char *copy = hci_meta_alloc(n + 1); /* parse cuts patterns in place; kept for the summary */
    if (copy) {
      memcpy(copy, builtin, n + 1);
      parse("__lsan_default_suppressions()", copy);
      hci_chk_log(1, "heapcheck: %d suppression%s from __lsan_default_suppressions()", S.nrules,
                  S.nrules == 1 ? "" : "s");
    }
  }
  if (!hci_chk.suppressions) return;
  int before = S.nrules;
  size_t len;
  S.text = read_file(hci_chk.suppressions, &len);
  if (!S.text) return;
  parse(hci_chk.suppressions, S.text);
  hci_chk_log(1, "heapcheck: %d suppression%s loaded from %s", S.nrules - before,
              S.nrules - before == 1 ? "" : "s", hci_chk.suppressions);
}

bool hci_supp_any(void) { return S.nrules > 0; }

// ---- matching ----

/* Glob match of p against the whole of s[0..n) (* and ?), iterative with
 * one backtrack point: linear in practice. */
static bool glob_full(const char *p, const char *s, size_t n) {
  const char *star = NULL, *back = NULL;
  size_t i = 0;
  while (i < n) {
    if (*p == '*') {
      star = ++p;
      back = s + i;
    } else if (*p && (*p == '?' || *p == s[i])) {
      p++;
      i++;
    } else if (star) {
      p = star;
      i = (size_t)(++back - s);
    } else {
      return false;
    }
  }
  while (*p == '*') p++;
  return *p == 0;
}

static bool rule_matches(const rule_t *r, const char *s) {
  return s && *s && glob_full(r->pat, s, strlen(s));
}

static int match_stack(uint32_t id) {
  const uintptr_t *pcs;
  int n = hci_depot_get(id, &pcs);
  for (int i = 0; i < n; i++) {
    hci_frame_t fr;
    hci_symbolize(pcs[i], &fr);
    /* Every function of the pc: inlined ones and the one they were inlined into. */
    for (const hci_frame_t *f = &fr; f; f = f->caller)
      for (int k = 0; k < S.nrules; k++) {
        const rule_t *r = &S.rules[k];
        if (rule_matches(r, f->function) || rule_matches(r, f->file) || rule_matches(r, f->module)) return k;
      }
  }
  return -1;
}

static size_t slot_of(uint32_t id, size_t cap) { return (id * 2654435761u) & (cap - 1); }

static cache_ent_t *cache_find(uint32_t id) {
  if (!S.cache) return NULL;
  for (size_t i = slot_of(id, S.cap);; i = (i + 1) & (S.cap - 1)) {
    if (S.cache[i].id == id) return &S.cache[i];
    if (S.cache[i].id == 0) return NULL;
  }
}

static bool cache_put(uint32_t id, int rule) {
  if ((S.n + 1) * 2 > S.cap) {
    size_t ncap = S.cap ? S.cap * 2 : 1024;
    cache_ent_t *n = hci_meta_alloc(ncap * sizeof *n);
    if (!n) return false;
    for (size_t i = 0; i < S.cap; i++) {
      if (!S.cache[i].id) continue;
      size_t j = slot_of(S.cache[i].id, ncap);
      while (n[j].id) j = (j + 1) & (ncap - 1);
      n[j] = S.cache[i];
    }
    cache_ent_t *old = S.cache;
    size_t oldcap = S.cap;
    S.cache = n;
    S.cap = ncap;
    if (old) hci_meta_free(old, oldcap * sizeof *old);
  }
  size_t j = slot_of(id, S.cap);
  while (S.cache[j].id) j = (j + 1) & (S.cap - 1);
  S.cache[j].id = id;
  S.cache[j].rule = rule;
  S.n++;
  return true;
}

int hci_supp_match(uint32_t stack_id) {
  if (S.nrules == 0 || stack_id < 2) return -1;
  cache_ent_t *e = cache_find(stack_id);
  if (e) return e->rule;
  int rule = match_stack(stack_id);
  cache_put(stack_id, rule);
  return rule;
}

bool hci_supp_is_suppressed(uint32_t stack_id) {
  if (S.n == 0) return false;
  cache_ent_t *e = cache_find(stack_id);
  return e && e->rule >= 0;
}

void hci_supp_count(int index, size_t objects, size_t bytes) {
  if (index < 0 || index >= S.nrules) return;
  S.rules[index].objects += objects;
  S.rules[index].bytes += bytes;
}

void hci_supp_print_used(void) {
  bool any = false;
  for (int k = 0; k < S.nrules; k++) any |= S.rules[k].objects > 0;
  if (!any || !hci_chk_log_on(HCI_LOG_ERROR) || hci_chk.quiet_suppressions) goto reset;
  hci_out_t o = {.fd = hci_log_stream_fd()};
  hci_out_printf(&o, "-----------------------------------------------------\n");
  hci_out_printf(&o, "Suppressions used:\n");
  hci_out_printf(&o, "  count      bytes template\n");
  for (int k = 0; k < S.nrules; k++)
    if (S.rules[k].objects)
      hci_out_printf(&o, "%7zu %10zu %s\n", S.rules[k].objects, S.rules[k].bytes, S.rules[k].line);
  hci_out_printf(&o, "-----------------------------------------------------\n");
  hci_out_flush(&o);
reset:
  for (int k = 0; k < S.nrules; k++) S.rules[k].objects = S.rules[k].bytes = 0;
}

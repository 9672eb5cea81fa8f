/* test_profile.c - heap profile text, files and API with exact data.
 *
 * Runs with HEAPCHECK_SAMPLE_PARAMETER=1 (re-executes itself with it when
 * unset), so every allocation is a sample and the profile must be exact:
 * allocates known objects from three call sites, writes a profile with
 * hc_heap_profile_write and parses it back (header totals, per-site counts
 * and bytes in use and allocated, frames, MAPPED_LIBRARIES), then checks
 * hc_heap_profile_get / GetHeapProfile, the HeapProfiler* file API (names,
 * numbering, stale symlinks replaced, stop), hc_report_top and
 * hc_set_sample_interval.  Two child processes run with HEAPPROFILE set:
 * one crosses HEAP_PROFILE_ALLOCATION_INTERVAL three times and then gets
 * HEAPPROFILESIGNAL, the other crosses HEAP_PROFILE_INUSE_INTERVAL high-water
 * marks; their log lines and files are checked.
 *
 * Call sites are told apart by the first frame of each stack (the return
 * address of malloc inside the site function): each site function lives in
 * a section of its own, whose bounds the linker provides (__start_/__stop_).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gperftools/heap-profiler.h"
#include "heapcheck.h"

#include "hc_check.h"

#define SITE(sec) __attribute__((noinline, used, section(sec)))
extern char __start_hcprof_one[], __stop_hcprof_one[];
extern char __start_hcprof_two[], __stop_hcprof_two[];
extern char __start_hcprof_three[], __stop_hcprof_three[];

static void *volatile sink;

SITE("hcprof_one") void site_one(void **out, int n, size_t size) {
  for (int i = 0; i < n; i++) out[i] = malloc(size);
  sink = out[0];
}

SITE("hcprof_two") void site_two(void **out, int n, size_t size) {
  for (int i = 0; i < n; i++) out[i] = malloc(size);
  sink = out[0];
}

SITE("hcprof_three") void site_three(int n, size_t size) {
  for (int i = 0; i < n; i++) {
    void *p = malloc(size);
    sink = p;
    free(p);
  }
}

enum { S_ONE, S_TWO, S_THREE, S_OTHER, NSITES };

typedef struct counts {
  unsigned long long v[4]; /* in-use objects, bytes, allocated objects, bytes */
  int lines;
} counts_t;

typedef struct parsed {
  unsigned long long hdr[4];
  char kind[64];
  counts_t site[NSITES];
  unsigned long long sum[4];
  int nlines;
  int dup_stacks; /* lines whose stack is the same as an earlier line's */
  int maps_lines;
  int has_self;
  int bad_lines;
} parsed_t;

static int site_of(unsigned long pc) {
  char *p = (char *)pc;
  if (p > __start_hcprof_one && p <= __stop_hcprof_one) return S_ONE;
  if (p > __start_hcprof_two && p <= __stop_hcprof_two) return S_TWO;
  if (p > __start_hcprof_three && p <= __stop_hcprof_three) return S_THREE;
  return S_OTHER;
}

static char self_path[4096];

/* Parses a profile held in text (NUL-terminated). */
static void parse(const char *text, parsed_t *r) {
  memset(r, 0, sizeof *r);
  const char *line = text;
  int n = sscanf(line, "heap profile: %llu: %llu [%llu: %llu] @ %63s", &r->hdr[0], &r->hdr[1], &r->hdr[2],
                 &r->hdr[3], r->kind);
  if (n != 5) {
    r->bad_lines++;
    return;
  }
  line = strchr(line, '\n');
  while (line && *++line && *line != '\n') {
    unsigned long long c[4];
    int used = 0;
    if (sscanf(line, "%llu: %llu [%llu: %llu] @%n", &c[0], &c[1], &c[2], &c[3], &used) != 4 || !used) {
      r->bad_lines++;
      line = strchr(line, '\n');
      continue;
    }
    unsigned long pc = 0;
    int frames = 0;
    const char *q = line + used;
    int width = 0;
    if (sscanf(q, " 0x%lx%n", &pc, &width) == 1) frames = 1;
    /* every frame has the form " 0x" + 16 hex digits */
    while (*q == ' ') {
      if (strncmp(q, " 0x", 3) != 0 || strspn(q + 3, "0123456789abcdef") != 16) {
        r->bad_lines++;
        break;
      }
      q += 19;
    }
    if (!frames) r->bad_lines++;
    for (const char *prev = text; (prev = strchr(prev, '\n')) != NULL && prev + 1 < line;) {
      prev++;
      const char *pa = strchr(prev, '@'), *la = line + used - 1;
      size_t n1 = strcspn(pa, "\n"), n2 = strcspn(la, "\n");
      if (n1 == n2 && memcmp(pa, la, n1) == 0) r->dup_stacks++;
    }
    counts_t *s = &r->site[site_of(pc)];
    for (int k = 0; k < 4; k++) {
      s->v[k] += c[k];
      r->sum[k] += c[k];
    }
    s->lines++;
    r->nlines++;
    line = strchr(line, '\n');
  }
  const char *m = line ? strstr(line, "\nMAPPED_LIBRARIES:\n") : NULL;
  if (!m) return;
  for (const char *l = m + 19; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
    unsigned long lo, hi;
    if (sscanf(l, "%lx-%lx ", &lo, &hi) == 2 && lo < hi) r->maps_lines++;
    const char *e = strchr(l, '\n');
    size_t len = e ? (size_t)(e - l) : strlen(l);
    size_t sl = strlen(self_path);
    if (sl && len >= sl && memcmp(l + len - sl, self_path, sl) == 0) r->has_self = 1;
  }
}

static char *read_file(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return NULL;
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  size_t k;
  while ((k = fread(buf + len, 1, cap - len - 1, f)) > 0) {
    len += k;
    if (cap - len < 4096) buf = realloc(buf, cap *= 2);
  }
  buf[len] = '\0';
  fclose(f);
  return buf;
}

static void expect_site(const parsed_t *p, int site, unsigned long long n, unsigned long long bytes,
                        unsigned long long an, unsigned long long abytes, const char *what) {
  const counts_t *c = &p->site[site];
  CHECK(c->v[0] == n && c->v[1] == bytes, "%s site %d: in use %llu objects %llu bytes, want %llu %llu", what, site,
        c->v[0], c->v[1], n, bytes);
  CHECK(c->v[2] == an && c->v[3] == abytes, "%s site %d: allocated %llu objects %llu bytes, want %llu %llu", what,
        site, c->v[2], c->v[3], an, abytes);
}

static void check_common(const parsed_t *p, const char *what) {
  CHECK(p->bad_lines == 0, "%s: %d malformed lines", what, p->bad_lines);
  CHECK(strcmp(p->kind, "heapprofile") == 0, "%s: header kind '%s', want heapprofile (exact data)", what, p->kind);
  for (int k = 0; k < 4; k++)
    CHECK(p->hdr[k] == p->sum[k], "%s: header column %d = %llu, lines sum to %llu", what, k, p->hdr[k], p->sum[k]);
  CHECK(p->maps_lines > 3, "%s: MAPPED_LIBRARIES has %d lines", what, p->maps_lines);
  CHECK(p->has_self, "%s: MAPPED_LIBRARIES does not name %s", what, self_path);
  CHECK(p->dup_stacks == 0, "%s: %d stacks on more than one line (exact profiles have one line per stack)", what,
        p->dup_stacks);
  for (int s = S_ONE; s <= S_THREE; s++) CHECK(p->site[s].lines >= 1, "%s: no line for site %d", what, s);
}

static void profile_to_file(const char *path, parsed_t *p) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
  hc_stats_t st;
  hc_get_stats(&st); /* nothing allocates between here and the write */
  CHECK(hc_heap_profile_write(fd) == 0, "hc_heap_profile_write failed");
  close(fd);
  char *text = read_file(path);
  CHECK(text != NULL, "cannot read %s back", path);
  if (!text) return;
  parse(text, p);
  free(text);
  CHECK(p->hdr[0] == st.sampled_objects, "header in-use objects %llu != live sampled objects %zu", p->hdr[0],
        st.sampled_objects);
}

static int file_exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

/* ---- children with HEAPPROFILE set (argv[1] names the mode) ---- */

#define CHUNK 100000
#define MiB 1048576

SITE("hcprof_one") static void *child_alloc(size_t n) {
  void *p = malloc(n);
  sink = p;
  return p;
}

/* 3.5 MB allocated and freed in 100 kB pieces (a dump per MiB), then the signal. */
static int child_intervals(void) {
  for (int i = 0; i < 35; i++) free(child_alloc(CHUNK));
  raise(SIGUSR1);
  free(child_alloc(16)); /* the next sample writes the signal's profile */
  return 0;
}

/* 2.5 MB live (dumps past 1 and 2 MiB), freed, then 2.5 MB again: below the
 * high-water mark plus the interval, so no more dumps. */
static int child_inuse(void) {
  static void *v[25];
  for (int i = 0; i < 25; i++) v[i] = child_alloc(CHUNK);
  for (int i = 0; i < 25; i++) free(v[i]);
  for (int i = 0; i < 25; i++) v[i] = child_alloc(CHUNK);
  return 0;
}

/* HEAPCHECK_REPORT=top at exit, after the program closed stderr (as
 * coreutils' close_stdout does): the report still reaches it. */
void *volatile top_closed_keep[8]; /* live at exit: global, so a root */
static int child_top_closed(void) {
  for (int i = 0; i < 8; i++) top_closed_keep[i] = child_alloc(CHUNK);
  close(2);
  return 0;
}

/* Runs this program in mode `mode` with the extra environment, stderr to log. */
static int run_child(char **argv, const char *mode, const char *log, const char *const *env) {
  pid_t pid = fork();
  if (pid == 0) {
    for (; *env; env += 2) setenv(env[0], env[1], 1);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || dup2(fd, 2) < 0) _exit(126);
    char *args[] = {argv[0], (char *)mode, NULL};
    execv("/proc/self/exe", args);
    _exit(127);
  }
  int st = 0;
  if (pid < 0 || waitpid(pid, &st, 0) != pid) return -1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Checks that log has "Dumping heap profile to <prefix>.<pid>.<seq>.heap (<reason...>" for
 * seq = 1..n in order, that the files exist and are exact profiles; returns the pid. */
static void check_dumps(const char *log, const char *prefix, int n, const char *const *reasons) {
  char *text = read_file(log);
  CHECK(text != NULL, "no log %s", log);
  if (!text) return;
  CHECK(strstr(text, "Starting tracking the heap\n") != NULL, "no start line in:\n%s", text);
  const char *pos = text;
  for (int seq = 1; seq <= n + 1; seq++) {
    char want[4400];
    snprintf(want, sizeof want, "Dumping heap profile to %s.", prefix);
    const char *hit = strstr(pos, want);
    if (seq == n + 1) {
      CHECK(hit == NULL, "more than %d dumps:\n%s", n, text);
      break;
    }
    CHECK(hit != NULL, "dump %d missing:\n%s", seq, text);
    if (!hit) break;
    int pid = 0;
    unsigned got = 0;
    char reason[256] = "";
    const char *rest = hit + strlen(want);
    CHECK(sscanf(rest, "%d.%4u.heap (%255[^)\n]", &pid, &got, reason) == 3 && got == (unsigned)seq,
          "dump %d line: %.200s", seq, hit);
    CHECK(strncmp(reason, reasons[seq - 1], strlen(reasons[seq - 1])) == 0, "dump %d reason '%s', want '%s...'",
          seq, reason, reasons[seq - 1]);
    char file[4400];
    snprintf(file, sizeof file, "%s.%d.%04d.heap", prefix, pid, seq);
    char *prof = read_file(file);
    CHECK(prof && strncmp(prof, "heap profile: ", 14) == 0 && strstr(prof, "@ heapprofile\n"), "file %s: %.60s",
          file, prof ? prof : "(missing)");
    free(prof);
    pos = rest;
  }
  free(text);
}

static void test_children(char **argv, const char *dir) {
  char prefix[4200], log[4200];
  snprintf(prefix, sizeof prefix, "%s/iv", dir);
  snprintf(log, sizeof log, "%s/iv.log", dir);
  const char *env1[] = {"HEAPPROFILE", prefix, "HEAP_PROFILE_ALLOCATION_INTERVAL", "1M",
                        "HEAP_PROFILE_INUSE_INTERVAL", "0", "HEAPPROFILESIGNAL", "10", NULL};
  _Static_assert(SIGUSR1 == 10, "HEAPPROFILESIGNAL below names SIGUSR1 by number");
  int rc = run_child(argv, "child-intervals", log, env1);
  CHECK(rc == 0, "child-intervals exited with %d", rc);
  const char *r1[] = {"1 MB allocated cumulatively, 0 MB currently in use",
                      "2 MB allocated cumulatively, 0 MB currently in use",
                      "3 MB allocated cumulatively, 0 MB currently in use", "signal", "Exiting, "};
  check_dumps(log, prefix, 5, r1);
  char *text = read_file(log);
  CHECK(text && strstr(text, "Using signal 10 as heap profiling switch"), "no signal line");
  free(text);

  snprintf(prefix, sizeof prefix, "%s/hw", dir);
  snprintf(log, sizeof log, "%s/hw.log", dir);
  const char *env2[] = {"HEAPPROFILE", prefix, "HEAP_PROFILE_ALLOCATION_INTERVAL", "0",
                        "HEAP_PROFILE_INUSE_INTERVAL", "1M", NULL};
  rc = run_child(argv, "child-inuse", log, env2);
  CHECK(rc == 0, "child-inuse exited with %d", rc);
  const char *r2[] = {"1 MB currently in use", "2 MB currently in use", "Exiting, 2 MB in use"};
  check_dumps(log, prefix, 3, r2);

  /* The exit report and the last dump survive a closed stderr. */
  snprintf(prefix, sizeof prefix, "%s/cl", dir);
  snprintf(log, sizeof log, "%s/cl.log", dir);
  const char *env4[] = {"HEAPCHECK_REPORT", "top:3", "HEAPPROFILE", prefix, "HEAP_PROFILE_INUSE_INTERVAL", "0",
                        "HEAP_PROFILE_ALLOCATION_INTERVAL", "0", NULL};
  rc = run_child(argv, "child-top-closed", log, env4);
  CHECK(rc == 0, "child-top-closed exited with %d", rc);
  text = read_file(log);
  CHECK(text && strstr(text, "call sites by live bytes") && strstr(text, "child_alloc"),
        "no top report after stderr was closed:\n%s", text ? text : "(none)");
  CHECK(text && strstr(text, "Dumping heap profile to ") && strstr(text, "(Exiting, "),
        "no exit dump line after stderr was closed:\n%s", text ? text : "(none)");
  free(text);

  /* A bad value is reported with the variable's name and the default. */
  snprintf(log, sizeof log, "%s/bad.log", dir);
  const char *env3[] = {"HEAP_PROFILE_INUSE_INTERVAL", "lots", NULL};
  rc = run_child(argv, "child-inuse", log, env3);
  text = read_file(log);
  CHECK(rc == 0 && text && strstr(text, "HEAP_PROFILE_INUSE_INTERVAL") && strstr(text, "104857600"),
        "bad value warning: %s", text ? text : "(none)");
  free(text);

  /* gperftools' HEAP_PROFILE_CLEANUP: a warning, and nothing deleted. */
  snprintf(prefix, sizeof prefix, "%s/cu", dir);
  snprintf(log, sizeof log, "%s/cu.log", dir);
  char old[4300];
  snprintf(old, sizeof old, "%s.1.0001.heap", prefix);
  int ofd = open(old, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  CHECK(ofd >= 0, "create %s", old);
  if (ofd >= 0) close(ofd);
  const char *env5[] = {"HEAPPROFILE", prefix, "HEAP_PROFILE_CLEANUP", "true", NULL};
  rc = run_child(argv, "child-inuse", log, env5);
  text = read_file(log);
  CHECK(rc == 0 && text && strstr(text, "HEAP_PROFILE_CLEANUP is not supported"), "cleanup warning: %s",
        text ? text : "(none)");
  CHECK(file_exists(old), "%s was deleted", old);
  free(text);
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "child-intervals") == 0) return child_intervals();
  if (argc > 1 && strcmp(argv[1], "child-inuse") == 0) return child_inuse();
  if (argc > 1 && strcmp(argv[1], "child-top-closed") == 0) return child_top_closed();
  const char *param = getenv("HEAPCHECK_SAMPLE_PARAMETER");
  if (!param || strcmp(param, "1") != 0) { /* options are read at start-up: run again with them */
    setenv("HEAPCHECK_SAMPLE_PARAMETER", "1", 1);
    unsetenv("HEAPCHECK");
    unsetenv("HEAPPROFILE");
    execv("/proc/self/exe", argv);
    perror("execv");
    return 1;
  }
  ssize_t sl = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
  if (sl > 0) self_path[sl] = '\0';
  char dir[] = "/tmp/hc_test_profile.XXXXXX";
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  char path[4200], prefix[4200], name[4300];
  snprintf(path, sizeof path, "%s/direct.heap", dir);

  CHECK(hc_heap_profile_running() == 0, "profiler running without HEAPPROFILE");
  CHECK(IsHeapProfilerRunning() == 0, "IsHeapProfilerRunning without HEAPPROFILE");

  static void *one[10], *two[5];
  site_one(one, 10, 100);
  site_two(two, 5, 3000);
  site_three(7, 50);

  parsed_t p;
  profile_to_file(path, &p);
  check_common(&p, "write");
  expect_site(&p, S_ONE, 10, 1000, 10, 1000, "write");
  expect_site(&p, S_TWO, 5, 15000, 5, 15000, "write");
  expect_site(&p, S_THREE, 0, 0, 7, 350, "write");

  /* The same profile as a string, both spellings. */
  char *s = hc_heap_profile_get();
  CHECK(s != NULL, "hc_heap_profile_get returned NULL");
  if (s) {
    parse(s, &p);
    check_common(&p, "get");
    expect_site(&p, S_ONE, 10, 1000, 10, 1000, "get");
    expect_site(&p, S_TWO, 5, 15000, 5, 15000, "get");
    free(s);
  }
  s = GetHeapProfile();
  CHECK(s != NULL && strncmp(s, "heap profile: ", 14) == 0, "GetHeapProfile: %.40s", s ? s : "(null)");
  free(s);

  /* Files: <prefix>.<pid>.<seq>.heap, numbered from 1, continuing after a restart. */
  snprintf(prefix, sizeof prefix, "%s/prof", dir);
  HeapProfilerStart(prefix);
  CHECK(IsHeapProfilerRunning() == 1, "not running after HeapProfilerStart");
  CHECK(hc_heap_profile_start(prefix) == -1, "a second start must fail");
  HeapProfilerDump("test one");
  snprintf(name, sizeof name, "%s.%d.0001.heap", prefix, (int)getpid());
  char *text = read_file(name);
  CHECK(text != NULL, "no file %s", name);
  if (text) {
    parse(text, &p);
    check_common(&p, "dump 1");
    expect_site(&p, S_TWO, 5, 15000, 5, 15000, "dump 1");
    free(text);
  }
  /* A stale symlink where the next file goes is replaced, never followed. */
  char target[4300];
  snprintf(target, sizeof target, "%s/target", dir);
  int tfd = open(target, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  CHECK(tfd >= 0 && write(tfd, "keep", 4) == 4, "cannot create %s", target);
  close(tfd);
  snprintf(name, sizeof name, "%s.%d.0002.heap", prefix, (int)getpid());
  CHECK(symlink(target, name) == 0, "symlink: %s", strerror(errno));
  CHECK(hc_heap_profile_dump("test two") == 0, "second dump failed");
  struct stat st;
  CHECK(lstat(name, &st) == 0 && S_ISREG(st.st_mode), "%s is not a regular file", name);
  text = read_file(target);
  CHECK(text && strcmp(text, "keep") == 0, "the symlink target was written to");
  free(text);

  for (int i = 0; i < 10; i++) free(one[i]);
  HeapProfilerStop();
  CHECK(IsHeapProfilerRunning() == 0, "running after HeapProfilerStop");
  CHECK(hc_heap_profile_dump("stopped") == -1, "dump while stopped must fail");
  HeapProfilerDump("stopped");
  snprintf(name, sizeof name, "%s.%d.0003.heap", prefix, (int)getpid());
  CHECK(!file_exists(name), "%s written while stopped", name);
  CHECK(hc_heap_profile_start(prefix) == 0, "restart failed");
  CHECK(hc_heap_profile_dump("restarted") == 0, "dump after restart failed");
  CHECK(file_exists(name), "numbering does not continue after a restart: no %s", name);
  hc_heap_profile_stop();
  text = read_file(name);
  if (text) {
    parse(text, &p);
    check_common(&p, "dump 3");
    expect_site(&p, S_ONE, 0, 0, 10, 1000, "dump 3");
    expect_site(&p, S_TWO, 5, 15000, 5, 15000, "dump 3");
    free(text);
  }

  /* hc_report_top: both live sites, by name (the symbolizer reads .symtab). */
  site_one(one, 10, 100);
  snprintf(name, sizeof name, "%s/top.txt", dir);
  int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  hc_report_top(fd, 5);
  close(fd);
  text = read_file(name);
  CHECK(text && strstr(text, "by live bytes") && strstr(text, "by live objects"), "top report: %s",
        text ? text : "(none)");
  CHECK(text && strstr(text, "site_two") && strstr(text, "site_one"), "top report lacks the site names:\n%s",
        text ? text : "");
  CHECK(text && strstr(text, "(exact)"), "top report does not say exact:\n%s", text ? text : "");
  free(text);

  test_children(argv, dir);

  for (int i = 0; i < 10; i++) free(one[i]);
  for (int i = 0; i < 5; i++) free(two[i]);
  profile_to_file(path, &p);
  check_common(&p, "after free");
  expect_site(&p, S_ONE, 0, 0, 20, 2000, "after free");
  expect_site(&p, S_TWO, 0, 0, 5, 15000, "after free");

  /* Another interval: the profile is a sampled one at that rate.  Last,
   * because samples taken at 65536 stay in the allocated columns, after
   * which no profile of this process can be exact again. */
  CHECK(hc_set_sample_interval(1) == 1, "previous interval is not 1");
  CHECK(hc_set_sample_interval(65536) == 1, "previous interval is not 1");
  s = hc_heap_profile_get();
  CHECK(s && strstr(s, "] @ heap_v2/65536\n"), "header after hc_set_sample_interval: %.80s", s ? s : "(null)");
  free(s);
  CHECK(hc_set_sample_interval(1) == 65536, "previous interval is not 65536");


  if (!failures) { /* keep the files of a failed run for inspection */
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
  }
  printf("%s: %d failures\n", failures ? "FAIL" : "PASS", failures);
  return failures != 0;
}

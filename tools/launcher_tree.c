/* launcher_tree.c - the launcher's private directory: created before the
 * program starts, read after it ended, and the one summary of the tree.
 *
 * Record lines (checker/tree.c): pid \t bytes \t objects \t state \t report \t cmdline,
 * state "ok" or "incomplete" (the check could not complete: it proves
 * nothing, so the summary never says "no leaks found" then), or "pending":
 * the process walled itself in (chroot, seccomp, Landlock, or closed the
 * kept records descriptor where it could not open the file again) and its own
 * record may never come; the next record of that pid replaces it, and one
 * that none replaces counts as a check that could not complete (sshd's
 * sandboxed child, which closes every descriptor and chroots, was missing
 * from the summary).
 * A process appears once per checked image: a process that exec'ed another
 * checked program records twice with the same pid (both are listed).
 */
#define _GNU_SOURCE
#include "launcher_tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *hc_tree_tmpdir(void) {
  const char *t = getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

/* mkdtemp in base: the directory, 0700 whatever the umask (under umask
 * 0777 it was made 0000 and the launcher, not root, could not create its
 * records file in it: exit 2, the program never run). */
static bool make_dir(hc_tree_t *t, const char *base) {
  if (snprintf(t->dir, sizeof t->dir, "%s/heapcheck.XXXXXX", base) >= (int)sizeof t->dir) {
    errno = ENAMETOOLONG;
    return false;
  }
  if (!mkdtemp(t->dir)) return false;
  (void)chmod(t->dir, 0700);
  return true;
}

int hc_tree_create(hc_tree_t *t) {
  /* An unusable TMPDIR (missing, not writable) falls back to /tmp, as
   * libc's temporary files do. */
  if (!make_dir(t, hc_tree_tmpdir()) && (strcmp(hc_tree_tmpdir(), "/tmp") == 0 || !make_dir(t, "/tmp"))) return -1;
  snprintf(t->records, sizeof t->records, "%s/processes", t->dir);
  int fd = open(t->records, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) (void)fchmod(fd, 0600); /* the umask's say: see make_dir */
  /* Run as root, the tree may change users: a server's processes run as
   * its own user (varnishd's manager as varnish after closing every
   * descriptor, the kept ones too; its VCL compiler starts as vcache), and
   * then could neither create their report nor append their record: missing
   * from the summary ("no leaks found", status 0), their report on their own
   * stderr (varnishd showed it as the C compiler's messages).  So the
   * directory lets every user create files but list none and remove only
   * their own (1733), and the records file takes appends from any of them
   * (0622).  Files in it are created O_EXCL | O_NOFOLLOW, mode 0600 (never
   * through a link, never another's); another user's process that learns
   * the name (from a tree process's environment) could add records or files,
   * not read or change the tree's. */
  if (fd >= 0 && geteuid() == 0 && (chmod(t->dir, 01733) != 0 || fchmod(fd, 0622) != 0)) {
    close(fd);
    fd = -1;
    unlink(t->records);
  }
  if (fd < 0) {
    int e = errno;
    rmdir(t->dir);
    errno = e;
    return -1;
  }
  close(fd);
  return 0;
}

static char *field(char **p) {
  char *s = *p;
  if (!s) return NULL;
  char *tab = strchr(s, '\t');
  if (tab) {
    *tab = 0;
    *p = tab + 1;
  } else {
    *p = NULL;
  }
  return s;
}

void hc_tree_read(const hc_tree_t *t, hc_tree_summary_t *s) {
  memset(s, 0, sizeof *s);
  FILE *f = fopen(t->records, "re");
  if (!f) return;
  char *line = NULL;
  size_t cap = 0, alloc = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, f)) > 0) {
    if (line[n - 1] == '\n') line[n - 1] = 0;
    char *p = line;
    char *pid = field(&p), *bytes = field(&p), *objects = field(&p), *state = field(&p), *report = field(&p),
         *cmd = p;
    if (!pid || !bytes || !objects || !state || !report || !cmd) continue;
    long id = strtol(pid, NULL, 10);
    hc_proc_t *pr = NULL;
    for (size_t i = s->nprocs; i-- > 0 && !pr;)
      if (s->procs[i].pid == id && s->procs[i].pending) pr = &s->procs[i];
    if (pr) { /* its own record came after all */
      free(pr->report);
      free(pr->cmdline);
    } else {
      if (s->nprocs == alloc) {
        alloc = alloc ? alloc * 2 : 64;
        hc_proc_t *np = realloc(s->procs, alloc * sizeof *np);
        if (!np) break;
        s->procs = np;
      }
      pr = &s->procs[s->nprocs++];
    }
    pr->pid = id;
    pr->bytes = strtoull(bytes, NULL, 10);
    pr->objects = strtoull(objects, NULL, 10);
    pr->pending = strcmp(state, "pending") == 0;
    pr->incomplete = pr->pending || strcmp(state, "incomplete") == 0;
    pr->report = strdup(report);
    pr->cmdline = strdup(cmd);
    /* An unfinished check's totals (roots missing) are no verdict; a
     * pending record is counted at the end, when none replaced it. */
    if (pr->pending) {
      continue;
    } else if (pr->incomplete) {
      s->incomplete++;
    } else if (pr->bytes || pr->objects) {
      s->leaking++;
      s->bytes += pr->bytes;
      s->objects += pr->objects;
    }
  }
  free(line);
  fclose(f);
  for (size_t i = 0; i < s->nprocs; i++) s->incomplete += s->procs[i].pending;
}

bool hc_tree_has(const hc_tree_summary_t *s, long pid) {
  for (size_t i = 0; i < s->nprocs; i++)
    if (s->procs[i].pid == pid) return true;
  return false;
}

void hc_tree_print(const hc_tree_t *t, const hc_tree_summary_t *s, FILE *out) {
  (void)t;
  const char *ps = s->nprocs == 1 ? "" : "es";
  char unfinished[96] = "";
  if (s->incomplete)
    snprintf(unfinished, sizeof unfinished, "; %zu check%s could not complete", s->incomplete,
             s->incomplete == 1 ? "" : "s");
  /* Nothing checked is no verdict: "0 processes checked, no leaks found"
   * read as a pass for a program that ended without its check (adv29). */
  if (s->nprocs == 0 && s->incomplete == 0) {
    fprintf(out, "heapcheck: no process was checked: no leak verdict\n");
    return;
  }
  if (s->leaking == 0 && s->incomplete == 0) {
    fprintf(out, "heapcheck: %zu process%s checked, no leaks found\n", s->nprocs, ps);
    return;
  }
  if (s->leaking == 0)
    fprintf(out, "heapcheck: %zu process%s checked, no leaks found in the others%s\n", s->nprocs, ps, unfinished);
  else
    fprintf(out, "heapcheck: %zu process%s checked, %zu leaked: %llu bytes in %llu allocations%s\n", s->nprocs, ps,
            s->leaking, s->bytes, s->objects, unfinished);
  for (size_t i = 0; i < s->nprocs; i++) {
    const hc_proc_t *p = &s->procs[i];
    if (p->pending)
      fprintf(out,
              "heapcheck:   pid %ld: check could not complete (no record after it walled itself in: chroot, seccomp, "
              "Landlock or a closed descriptor; report: %s): %s\n",
              p->pid, p->report, p->cmdline);
    else if (p->incomplete)
      fprintf(out, "heapcheck:   pid %ld: check could not complete (report: %s): %s\n", p->pid, p->report,
              p->cmdline);
    else if (p->bytes || p->objects)
      fprintf(out, "heapcheck:   pid %ld: %llu bytes in %llu allocations (report: %s): %s\n", p->pid, p->bytes,
              p->objects, p->report, p->cmdline);
  }
}

static bool in_dir(const hc_tree_t *t, const char *path) {
  size_t n = strlen(t->dir);
  return strncmp(path, t->dir, n) == 0 && path[n] == '/';
}

/* The pid a report file is named after ("report.<pid>" or, for an exec'ed
 * image of the same process, "report.<pid>.<k>"); 0 for another name. */
static long report_pid(const char *name) {
  if (strncmp(name, "report.", 7) != 0 || name[7] < '1' || name[7] > '9') return 0;
  char *end;
  long pid = strtol(name + 7, &end, 10);
  return *end == 0 || *end == '.' ? pid : 0;
}

/* A process that outlived the program: its report file stays, empty or not,
 * for its check at its own exit (a daemon the program forked: supervisord,
 * svnserve -d).  Removed, the daemon's report went into an unlinked file and
 * its notice named a path that no longer existed; with the directory gone,
 * its children warned and reported on a stderr it hands on to others
 * (distccd's clients).  Only where leases are refused (tree_alive): a pid
 * is the launcher's view of it, which a tree in a pid namespace of its own
 * (report.1, report.2: init and kthreadd here) or a pid reused since gets
 * wrong. */
static bool pid_alive(long pid) { return kill((pid_t)pid, 0) == 0 || errno == EPERM; }

/* Whether some process of the tree still runs: each keeps the records file
 * open (base/log_stream.c: from its start, or a forked child through its
 * parent's descriptor, shared at the fork), and the kernel grants a write
 * lease only on a file nobody else has open.  This sees a daemon forked
 * just before the program ended whose report file does not exist yet (the
 * directory went, and its report to the stderr it hands on: 1 run in 5),
 * in any pid namespace.  1 busy, 0 not, -1 leases refused
 * (fs.leases-enable=0, a file system without them).  SIGIO, which breaking
 * a lease sends its holder (an open of the file while it is held), is
 * ignored meanwhile: by default it ends the process. */
static int tree_alive(const hc_tree_t *t) {
  int fd = open(t->records, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  struct sigaction ign, old;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigaction(SIGIO, &ign, &old);
  int r = fcntl(fd, F_SETLEASE, F_WRLCK) == 0 ? 0 : errno == EAGAIN ? 1 : -1;
  if (r == 0) (void)fcntl(fd, F_SETLEASE, F_UNLCK);
  close(fd);
  sigaction(SIGIO, &old, NULL);
  return r;
}

/* Removes the empty report files (processes that printed nothing, e.g. an
 * exec'ed image that was replaced before its check), with by_pid those
 * of processes still running left (*running counts them); the records file
 * is left alone.  Returns the number of other files left. */
static size_t remove_empty(const hc_tree_t *t, bool by_pid, size_t *running) {
  DIR *d = opendir(t->dir);
  size_t left = 0;
  if (!d) return 0;
  const char *records = strrchr(t->records, '/');
  records = records ? records + 1 : t->records;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' || strcmp(e->d_name, records) == 0) continue;
    long pid = by_pid ? report_pid(e->d_name) : 0;
    if (pid > 0 && pid_alive(pid)) {
      (*running)++;
      continue;
    }
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && st.st_size == 0 &&
        unlinkat(dirfd(d), e->d_name, 0) == 0)
      continue;
    left++;
  }
  closedir(d);
  return left;
}

void hc_tree_cleanup(hc_tree_t *t, hc_tree_summary_t *s) {
  size_t kept = 0;
  for (size_t i = 0; i < s->nprocs; i++) {
    hc_proc_t *p = &s->procs[i];
    if (!in_dir(t, p->report)) continue;
    if (p->bytes || p->objects || p->incomplete) kept++;
    else unlink(p->report);
  }
  /* Processes of the tree still running keep their report files, empty
   * ones too (which are theirs is not known), the records and the
   * directory, and learn that the launcher has ended from the marker. */
  int lease = tree_alive(t);
  size_t running = 0, left = 0;
  if (lease != 1) left = remove_empty(t, lease < 0, &running);
  bool alive = lease == 1 || running;
  /* The records stay beside the reports they list, and for the processes
   * still running, which append theirs at their exit. */
  if (kept == 0 && !alive) unlink(t->records);
  if (!alive && rmdir(t->dir) != 0 && left > kept)
    /* Reports of processes that never finished their check (killed,
     * _exit, exec of an unchecked program...) are kept for a look. */
    fprintf(stderr, "heapcheck: %zu unfinished report%s (killed or exec'ed processes) kept in %s\n", left - kept,
            left - kept == 1 ? "" : "s", t->dir);
  if (alive) {
    char ended[sizeof t->dir + 8];
    snprintf(ended, sizeof ended, "%s/ended", t->dir);
    int fd = open(ended, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) close(fd);
    fprintf(stderr, "heapcheck: processes of the tree still running (daemons): their reports will be in %s\n", t->dir);
  }
  for (size_t i = 0; i < s->nprocs; i++) {
    free(s->procs[i].report);
    free(s->procs[i].cmdline);
  }
  free(s->procs);
  s->procs = NULL;
}

void hc_tree_remove(hc_tree_t *t) {
  unlink(t->records);
  rmdir(t->dir);
}

/* log_stream.c - where the report stream goes: the one place that decides.
 *
 * The report stream is everything the checker and the profiler print
 * (reports, their warnings, the exit summary).  Its descriptor is
 * hci_diag_fd, kept above the program's descriptors (a program that closes
 * or reuses fd 2 does not lose or corrupt it).  Destinations, first match:
 *   1. HEAPCHECK_LOG_PATH=prefix        -> the file prefix.<pid>
 *      (prefix may hold %p, replaced by the pid, and %%: then no ".<pid>"
 *      is appended, as valgrind's --log-file=name.%p);
 *   2. a descendant in a launcher tree  -> <HEAPCHECK_TREE>/report.<pid>
 *      (HEAPCHECK_TREE=dir and HEAPCHECK_TREE_PID=<launcher pid> set by the
 *      launcher; the launched program itself, whose parent is the launcher,
 *      keeps stderr; HEAPCHECK_CHILD_REPORTS=stderr keeps stderr for all);
 *   3. otherwise                        -> a duplicate of stderr.
 * Files are created with O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, mode 0600,
 * so an existing file or symlink is never followed or overwritten; the
 * file of a process that exec'ed (same pid) gets ".1", ".2"... appended.
 * A file that cannot be created gets one warning naming the variable and
 * the path, then the stream is stderr.  A forked child opens its own file
 * (its pid) on the same descriptor number.
 *
 * The program's descriptors are its own (issue 9 point 6):
 *  - kept copies are close-on-exec and numbered high, just under
 *    RLIMIT_NOFILE's soft limit (at most 1024), out of the range the
 *    program's own open() calls use; under a limit too small for that
 *    (below 64) no copy of stderr is kept: reports go to fd 2 while it
 *    still is the original stderr;
 *  - every kept descriptor remembers the file it was opened on (device and
 *    inode), and hci_log_stream_fd checks before each use that it still is
 *    that file: after a close_range(3, ~0U) or a dup2 over it, a new copy is
 *    made from fd 2 when fd 2 still is the original stderr (or the log file
 *    is opened again by its path), else the stream has no destination;
 *  - when fd 2 was closed at start, there is no stderr stream at all: the
 *    report never lands in whatever file the program opens on fd 2 later;
 *  - a copy of a stderr that is a pipe or a socket keeps its reader waiting
 *    for end-of-file (`$(daemonprog)`): a forked child (daemon() forks)
 *    closes that copy at once and writes to its fd 2 only while fd 2 still
 *    is that pipe, and any process drops the copy as soon as it sees that
 *    its fd 2 now refers to another file (the program redirected it, e.g.
 *    to /dev/null), instead of writing to the new file.
 * Writes themselves never raise SIGPIPE (output.c, hci_write_all).
 *
 * Runs inside the first malloc and in the fork child: no malloc, no stdio,
 * no getenv, only async-signal-safe calls after fork.
 * Locks: none (opened once before threads exist; fork child is single-threaded).
 */
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hc_base.h"

#define HCI_PATH_MAX 4096

/* Set for good once the program sandboxed itself (hci_log_stream_mute). */
static _Atomic bool muted;
HC_PRIVATE_STATE(muted);

/* Which file a descriptor refers to. */
typedef struct file_id {
  dev_t dev;
  ino_t ino;
  mode_t mode;
  bool ok;                       /* the descriptor was open */
  bool unknown;                  /* open, but fstat was refused (a seccomp filter's EPERM) */
} file_id_t;

static file_id_t id_of(int fd) {
  file_id_t id = {0, 0, 0, false, false};
  struct stat st;
  if (fd < 0) return id;
  int saved = errno;
  if (fstat(fd, &st) == 0) id = (file_id_t){st.st_dev, st.st_ino, st.st_mode, true, false};
  else if (errno != EBADF) id.unknown = true;
  errno = saved;
  return id;
}

/* A descriptor whose fstat is refused is taken for the file it was: the
 * program that sandboxed itself against fstat (EPERM) lost its whole report
 * at exit, status 1 and nothing said. */
static bool is_open(file_id_t id) { return id.ok || id.unknown; }
static bool same_file(file_id_t a, file_id_t b) {
  if (a.unknown || b.unknown) return is_open(a) && is_open(b);
  return a.ok && b.ok && a.dev == b.dev && a.ino == b.ino;
}

/* A reader waits for end-of-file on these: a kept copy holds it up. */
static bool is_channel(file_id_t id) { return id.ok && (S_ISFIFO(id.mode) || S_ISSOCK(id.mode)); }

static struct {
  bool opened;
  file_id_t err_id;    /* fd 2 at open (ok = false: it was closed) */
  file_id_t diag_id;   /* what hci_diag_fd refers to */
  bool err_direct;     /* no kept copy of stderr: write to fd 2 while it is err_id (forked child of a pipe) */
  bool err_dropped;    /* stderr is no destination any more (fd 2 was replaced) */
  bool ending;         /* the final check runs: the process ends right after its report */
  bool to_file;
  bool reopen_warned;  /* the log file could not be opened again: said once, reports to stderr */
  bool in_tree;        /* HEAPCHECK_TREE set: the launcher follows this tree */
  bool tree_top;       /* the process the launcher started (parent = launcher) */
  int stderr_fd1;      /* the original stderr, kept high, plus one; 0 = use 2 (so LS is
                          all zeros: .bss, not 12 KiB of .data paged in at start-up) */
  char path[HCI_PATH_MAX];
  /* The variables, copied at start: the program may change its environment
   * and draconian's __libc_freeres clears it before the exit check. */
  char tree_dir[HCI_PATH_MAX];  /* HEAPCHECK_TREE */
  char log_path[HCI_PATH_MAX];  /* HEAPCHECK_LOG_PATH (or LSAN_OPTIONS' log_path) */
  const char *log_var;          /* which of the two, for messages */
  bool child_stderr;            /* HEAPCHECK_CHILD_REPORTS=stderr */
  char prog[1024];              /* program_invocation_name at start (see hci_prog_name) */
  int records_fd1;              /* <tree_dir>/processes, kept high, plus one; 0 = none */
  file_id_t records_id;         /* what records_fd1 - 1 refers to */
} LS;
HC_PRIVATE_STATE(LS);

static int stderr_fd(void) { return LS.stderr_fd1 - 1; }
static void set_stderr_fd(int fd) { LS.stderr_fd1 = fd + 1; }

/* A close-on-exec copy of fd numbered above the program's usual range:
 * from 32 under the soft RLIMIT_NOFILE (capped at 1024, so the kernel's
 * descriptor table stays small), else lower but never under low; -1 when
 * fd is not open or no such number is free.  Copies of stderr, which every
 * checked process keeps, take no number under STDERR_LOW: under a small
 * limit (`ulimit -n 8`) the copy took the number the program's next open()
 * was to get (3), and one of its few descriptors: its open()s returned
 * other numbers and ran out (EMFILE) one sooner.  The log and records files
 * (asked for by HEAPCHECK_LOG_PATH or the launcher) may go as low as 3. */
#define STDERR_LOW 32
static int keep_high(int fd, int low) {
  int top = 1024;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)top)
    top = (int)rl.rlim_cur;
  const int from[] = {top - 32, top / 2, 10, 3};
  for (size_t i = 0; i < sizeof from / sizeof from[0]; i++) {
    if (from[i] < low) continue;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, from[i]);
    if (high >= 0 || errno == EBADF) return high;
  }
  return -1;
}

static const char *err_text(int e) {
  switch (e) {
    case EACCES: return "permission denied";
    case ENOENT: return "no such directory";
    case ENOTDIR: return "a path component is not a directory";
    case EEXIST: return "the file exists";
    case ELOOP: return "the path is a symbolic link";
    case EROFS: return "read-only file system";
    case ENOSPC: return "no space left on device";
    case ENAMETOOLONG: return "name too long";
    case EMFILE: case ENFILE: return "too many open files";
    default: return "cannot create the file";
  }
}

/* prefix with %p / %% expanded, or prefix.<pid>; false when too long. */
static bool expand(char *out, size_t size, const char *prefix, int pid) {
  size_t n = 0;
  bool had_pid = false;
  char num[24];
  int numlen = hci_snprintf(num, sizeof num, "%d", pid);
  for (const char *s = prefix; *s; s++) {
    if (s[0] == '%' && s[1] == 'p') {
      if (n + (size_t)numlen >= size) return false;
      memcpy(out + n, num, (size_t)numlen);
      n += (size_t)numlen;
      had_pid = true;
      s++;
      continue;
    }
    if (s[0] == '%' && s[1] == '%') s++;
    if (n + 1 >= size) return false;
    out[n++] = *s;
  }
  if (!had_pid) {
    if (n + 1 + (size_t)numlen >= size) return false;
    out[n++] = '.';
    memcpy(out + n, num, (size_t)numlen);
    n += (size_t)numlen;
  }
  out[n] = 0;
  return true;
}

/* Creates the file for this pid; its fd or -1 (with errno). */
static int create(const char *base, char *path, size_t size) {
  size_t len = strlen(base);
  if (len + 8 >= size) {
    errno = ENAMETOOLONG;
    return -1;
  }
  memcpy(path, base, len + 1);
  for (int k = 1; k < 100; k++) {
    int fd = hci_create_own(path);
    if (fd >= 0 || errno != EEXIST) return fd;
    hci_snprintf(path + len, size - len, ".%d", k); /* an exec'ed process: same pid */
  }
  errno = EEXIST;
  return -1;
}

/* The destination prefix for this process, and the variable that named it. */
static const char *dest_prefix(const char **var, char *buf, size_t size) {
  if (LS.log_path[0]) {
    *var = LS.log_var ? LS.log_var : "HEAPCHECK_LOG_PATH";
    return LS.log_path;
  }
  if (!LS.in_tree || LS.tree_top || LS.child_stderr) return NULL;
  if (hci_snprintf(buf, size, "%s/report.%%p", LS.tree_dir) >= (int)size) return NULL;
  *var = "HEAPCHECK_TREE";
  return buf;
}

/* Points hci_diag_fd at this process's destination. */
static void route(void) {
  char pbuf[HCI_PATH_MAX], name[HCI_PATH_MAX];
  const char *var = NULL;
  const char *prefix = dest_prefix(&var, pbuf, sizeof pbuf);
  LS.to_file = false;
  if (prefix) {
    int fd = -1;
    if (!expand(name, sizeof name, prefix, (int)getpid())) errno = ENAMETOOLONG;
    else fd = create(name, LS.path, sizeof LS.path);
    if (fd >= 0) {
      if (hci_diag_fd >= 0 && hci_diag_fd != stderr_fd()) {
        /* Same number as before (fork child): dup3 replaces it. */
        if (dup3(fd, hci_diag_fd, O_CLOEXEC) >= 0) {
          close(fd);
          fd = hci_diag_fd;
        }
      } else {
        int high = keep_high(fd, 3);
        if (high >= 0) {
          close(fd);
          fd = high;
        }
      }
      hci_diag_fd = fd;
      LS.diag_id = id_of(fd);
      LS.to_file = true;
      return;
    }
    hci_fdprintf(hci_log_stream_stderr(),
                 "heapcheck: warning: %s: cannot create the log file %s (%s); reports go to stderr\n", var,
                 name, err_text(errno));
  }
  if (hci_diag_fd >= 0 && hci_diag_fd != stderr_fd()) close(hci_diag_fd);
  hci_diag_fd = stderr_fd();
  LS.diag_id = LS.err_id;
}

void hci_log_stream_set_path(const char *prefix, const char *var) {
  if (LS.opened || !prefix || !*prefix || strcmp(prefix, "stderr") == 0) return;
  size_t n = strlen(prefix);
  if (n >= sizeof LS.log_path) {
    hci_fdprintf(2, "heapcheck: warning: %s is too long; reports go to stderr\n", var);
    return;
  }
  memcpy(LS.log_path, prefix, n + 1);
  LS.log_var = var;
}

/* An existing file opened for appending (never created, never through a
 * symbolic link) and kept high (keep_high); -1 when it cannot be opened or,
 * with must_be, is not that file. */
static int open_kept(const char *path, const file_id_t *must_be) {
  int fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  int high = !must_be || same_file(id_of(fd), *must_be) ? keep_high(fd, 3) : -1;
  close(fd);
  return high;
}

/* <tree_dir>/processes (created by the launcher, never here) opened for
 * appending and kept high: a process that drops its privileges later
 * (nginx's workers become "nobody") can no longer open the launcher's
 * private directory, but writes through the descriptor it kept; forked
 * children share it.  -1 when it cannot be opened. */
static int open_records(void) {
  char path[HCI_PATH_MAX];
  if (hci_snprintf(path, sizeof path, "%s/processes", LS.tree_dir) >= (int)sizeof path) return -1;
  int high = open_kept(path, NULL);
  LS.records_id = id_of(high);
  LS.records_fd1 = high + 1;
  return high;
}

int hci_log_stream_records_fd(void) {
  /* Muted (a sandbox that kills): a record's write and its SIGPIPE guard
   * (rt_sigpending) are system calls the filter may kill (sshd's
   * pre-authentication child, once its fstat said EACCES and the kept
   * descriptor was taken for the records file). */
  if (!LS.opened || !LS.in_tree || atomic_load(&muted)) return -1;
  int fd = LS.records_fd1 - 1;
  if (fd >= 0 && same_file(id_of(fd), LS.records_id)) return fd;
  /* Closed or replaced by the program (never close that number: it may be
   * the program's now): open the file again by its path. */
  LS.records_fd1 = 0;
  return open_records();
}

/* The kept records descriptor's number, -1 when none (no system call:
 * close_watch.c's close compares every descriptor a program closes). */
int hci_log_stream_records_kept(void) { return LS.opened && LS.in_tree ? LS.records_fd1 - 1 : -1; }

bool hci_log_stream_records_lost_by(unsigned lo, unsigned hi) {
  if (!LS.opened || !LS.in_tree || LS.records_fd1 <= 0) return false;
  int fd = LS.records_fd1 - 1;
  if ((unsigned)fd < lo || (unsigned)fd > hi) return false;
  int saved = errno;
  bool lost = false;
  char path[HCI_PATH_MAX];
  if (same_file(id_of(fd), LS.records_id) &&
      hci_snprintf(path, sizeof path, "%s/processes", LS.tree_dir) < (int)sizeof path) {
    int t = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    /* A full table (EMFILE, ENFILE) is no sign: the close frees numbers. */
    if (t < 0) lost = errno != EMFILE && errno != ENFILE;
    else {
      lost = !same_file(id_of(t), LS.records_id);
      close(t);
    }
  }
  errno = saved;
  return lost;
}

/* The program's name as it was at start: glibc's program_invocation_name
 * points into argv[0], which servers overwrite with their process titles
 * (postgres's "postgres: checkpointer", nginx's "nginx: worker process"),
 * so at exit it may hold another string or the tail of one. */
static void keep_prog_name(void) {
  extern char *program_invocation_name;
  const char *n = program_invocation_name;
  size_t len = n ? strnlen(n, sizeof LS.prog - 1) : 0;
  memcpy(LS.prog, n ? n : "", len);
  LS.prog[len] = 0;
}

const char *hci_prog_name(void) {
  extern char *program_invocation_name;
  if (!LS.opened) return program_invocation_name ? program_invocation_name : "";
  return LS.prog;
}

const char *hci_prog_short_name(void) {
  const char *n = hci_prog_name();
  const char *slash = strrchr(n, '/');
  return slash ? slash + 1 : n;
}

void hci_log_stream_open(void) {
  if (LS.opened) return;
  keep_prog_name();
  LS.opened = true;
  LS.err_id = id_of(2);
  bool err_open = is_open(LS.err_id);
  set_stderr_fd(err_open ? keep_high(2, STDERR_LOW) : -1);
  /* No number to keep a copy on (a small RLIMIT_NOFILE): fd 2 itself, while
   * it still is this file. */
  if (err_open && stderr_fd() < 0) LS.err_direct = true;
  const char *p = hci_opt_str(HCO_HEAPCHECK_LOG_PATH);
  if (p && *p && !hci_env_word_is(p, "stderr")) {
    if (strlen(p) < sizeof LS.log_path) {
      memcpy(LS.log_path, p, strlen(p) + 1);
      LS.log_var = NULL;
    }
    else hci_fdprintf(hci_log_stream_stderr(), "heapcheck: warning: HEAPCHECK_LOG_PATH is too long; reports go to stderr\n");
  }
  const char *c = hci_opt_str(HCO_HEAPCHECK_CHILD_REPORTS);
  LS.child_stderr = c && hci_env_word_is(c, "stderr");
  const char *tree = hci_opt_str(HCO_HEAPCHECK_TREE);
  if (tree && *tree && strlen(tree) < sizeof LS.tree_dir) {
    LS.in_tree = true;
    memcpy(LS.tree_dir, tree, strlen(tree) + 1);
    long long launcher = hci_opt_int(HCO_HEAPCHECK_TREE_PID);
    LS.tree_top = launcher > 0 && getppid() == (pid_t)launcher;
    open_records();
  }
  route();
}

void hci_log_stream_fork_child(void) {
  if (!LS.opened) return;
  LS.tree_top = false; /* a forked child is never the launched program */
  /* A copy of a piped stderr would keep the pipe open for as long as this
   * child lives (daemon() forks, then puts /dev/null on fd 2): the child
   * writes to its fd 2 instead, while that still is the pipe. */
  if (is_channel(LS.err_id) && stderr_fd() >= 0) {
    if (hci_diag_fd == stderr_fd()) hci_diag_fd = -1;
    close(stderr_fd());
    set_stderr_fd(-1);
    LS.err_direct = true;
  }
  if (LS.to_file || LS.in_tree) route();
}

/* Drops every kept copy of stderr (the program replaced its fd 2). */
static void drop_stderr(void) {
  if (stderr_fd() >= 0 && same_file(id_of(stderr_fd()), LS.err_id)) close(stderr_fd());
  if (hci_diag_fd == stderr_fd()) hci_diag_fd = -1;
  set_stderr_fd(-1);
  LS.err_dropped = true;
}

/* The original stderr now: the kept copy, fd 2 itself for a forked child
 * of a pipe, or a new copy after the program closed ours; -1 when fd 2 was
 * closed at start or now refers to another file. */
static int stderr_now(void) {
  if (LS.err_dropped || !is_open(LS.err_id)) return -1;
  file_id_t two = id_of(2);
  if (two.ok && !same_file(two, LS.err_id)) {
    /* fd 2 was pointed elsewhere (daemon(), a redirection): the caller's
     * pipe is released, and nothing goes to the new file.  Not when the
     * process is ending: the copy is released at its end anyway, a moment
     * later, and the final report still reaches the pipe, as it reaches a
     * file (tcsh puts /dev/null on fd 2 after each command: `tcsh s.csh
     * 2>&1 | less` lost the report). */
    if (is_channel(LS.err_id) && !LS.ending) drop_stderr();
    else if (LS.err_direct) return -1;
  }
  if (LS.err_dropped) return -1;
  if (LS.err_direct) return is_open(two) ? 2 : -1;
  if (stderr_fd() >= 0 && same_file(id_of(stderr_fd()), LS.err_id)) return stderr_fd();
  /* Our copy was closed (close_range(3, ~0U)) or replaced: make another
   * from fd 2 when it still is the original stderr (never close the old
   * number: it may be the program's now). */
  set_stderr_fd(same_file(two, LS.err_id) ? keep_high(2, STDERR_LOW) : -1);
  if (stderr_fd() < 0 && same_file(two, LS.err_id)) { /* no number for a copy: fd 2 itself */
    LS.err_direct = true;
    return 2;
  }
  return stderr_fd();
}

/* Set for good once the program sandboxed itself (checker/seccomp_watch.c):
 * reaching a stream takes system calls (fstat, dup, open) its filter may
 * answer by killing the process, so nothing is written any more. */
void hci_log_stream_mute(void) { atomic_store(&muted, true); }
bool hci_log_stream_muted(void) { return atomic_load(&muted); }

int hci_log_stream_fd(void) {
  if (atomic_load(&muted)) return -1;
  if (!LS.opened) return 2;
  if (!LS.to_file) {
    int fd = stderr_now();
    hci_diag_fd = fd;
    return fd;
  }
  if (hci_diag_fd >= 0 && same_file(id_of(hci_diag_fd), LS.diag_id)) return hci_diag_fd;
  /* The log file's descriptor was closed by the program: open the file
   * again (it must still be the same file), never create another. */
  errno = 0;
  hci_diag_fd = open_kept(LS.path, &LS.diag_id);
  if (hci_diag_fd >= 0) return hci_diag_fd;
  int why = errno;
  /* Not any more (the program dropped its privileges after closing every
   * descriptor, as varnishd's manager does; the file was removed): stderr,
   * as when the file could not be created, with one warning.  Before, the
   * report went nowhere and only the exit status told. */
  int e = stderr_now();
  if (!LS.reopen_warned) {
    LS.reopen_warned = true;
    hci_fdprintf(e, "heapcheck: warning: cannot open the log file %s again (%s); reports go to stderr\n", LS.path,
                 why == ENOENT ? "it was removed" : why ? err_text(why) : "another file has its name");
  }
  return e;
}

void hci_log_stream_ending(void) { LS.ending = true; }

bool hci_log_stream_to_file(void) { return LS.to_file; }
const char *hci_log_stream_path(void) { return LS.to_file ? LS.path : NULL; }
int hci_log_stream_stderr(void) { return atomic_load(&muted) ? -1 : LS.opened ? stderr_now() : 2; }
bool hci_log_stream_in_tree(void) { return LS.in_tree; }
const char *hci_log_stream_tree_dir(void) { return LS.in_tree ? LS.tree_dir : NULL; }
bool hci_log_stream_tree_top(void) { return LS.tree_top; }

/* The launcher, ending while processes of its tree still run, leaves
 * <dir>/ended (tools/launcher_tree.c).  Not its pid: a process in a pid
 * namespace of its own cannot see it and took a running launcher for an
 * ended one. */
bool hci_log_stream_tree_over(void) {
  char path[HCI_PATH_MAX];
  if (!LS.in_tree || hci_snprintf(path, sizeof path, "%s/ended", LS.tree_dir) >= (int)sizeof path) return false;
  return hci_raw6(SYS_faccessat, AT_FDCWD, (long)path, F_OK, 0, 0, 0) == 0;
}

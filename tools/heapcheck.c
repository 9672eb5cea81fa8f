/* heapcheck.c - the launcher: runs an unmodified, dynamically linked program
 * and every process it starts under the heap leak checker, valgrind-style.
 *
 * Usage: heapcheck [options] [--] program [args...]      (see --help)
 *
 * The launcher is the parent of the tree, not an exec: it preloads
 * libheapcheck.so into the program (LD_PRELOAD, inherited by every
 * descendant), runs it as its child, passes signals on to it, and at the
 * end prints one summary of the whole tree and exits with the program's own
 * status (or dies of the program's signal), or with the leak status when
 * the program succeeded and something in the tree leaked.
 *
 * What it tells the library (environment, inherited by all descendants):
 *   HEAPCHECK=<mode>, HEAPCHECK_SUPPRESSIONS, HEAPCHECK_VERBOSE,
 *   HEAPCHECK_NO_FOLLOW, HEAPCHECK_LOG_PATH (--log-file), HEAPCHECK_REPORT
 *   (--gen-suppressions adds suppressions:FILE);
 *   HEAPCHECK_KEEP_STATUS=1  a leak never changes a process's exit status
 *                            (a leaking compiler must not fail the build);
 *   HEAPCHECK_TREE=<dir>     a private directory (mkdtemp, 0700; 1733 as root,
 *                            for processes that run as another user): each
 *                            checked process appends its record to
 *                            <dir>/processes (tree.c in the library), and a
 *                            descendant's report goes to <dir>/report.<pid>
 *                            with one line on stderr naming it;
 *   HEAPCHECK_TREE_PID=<pid> the launcher's pid: the process whose parent
 *                            it is (the program) keeps its report on stderr;
 *   HEAPCHECK_TREE_PPID=<pid> the launcher's parent: where the program's
 *                            kill and sigqueue to its parent go;
 *   HEAPCHECK_TREE_STDERR=<dev>:<ino> the launcher's stderr: a leaking
 *                            descendant's one-line notice goes only there;
 *   HEAPCHECK_CHILD_REPORTS=stderr (--child-reports=stderr) full reports
 *                            of descendants on stderr instead.
 * Files of processes that did not leak are removed at the end, and the
 * directory too when nothing leaked.
 *
 * The launcher itself is not linked with libheapcheck and puts the library
 * only into the program's environment.  Written in C (not a shell script)
 * so waiting, signal forwarding and reading the records are exact.
 * Self-contained: libc only.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launcher_tree.h"

#ifndef HC_VERSION
#define HC_VERSION "unknown"
#endif
#ifndef HC_PREFIX
#define HC_PREFIX "/usr/local"
#endif
#ifndef HC_LIBDIR
#define HC_LIBDIR "lib"
#endif
#define HC_LIBNAME "libheapcheck.so"

extern char **environ;

static struct {
  const char *mode;
  const char *suppressions;
  int exit_code;             /* -1 = not given (1) */
  bool no_follow;
  bool verbose;
  const char *log_file;
  bool child_stderr;
  const char *gen_suppressions;
} opt = {.mode = "normal", .exit_code = -1};

static void vmsg(const char *fmt, va_list ap) {
  fputs("heapcheck: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

static void die(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmsg(fmt, ap);
  va_end(ap);
  exit(status);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  if (!opt.verbose) return;
  va_list ap;
  va_start(ap, fmt);
  vmsg(fmt, ap);
  va_end(ap);
}

static void usage(void) {
  fputs("Usage: heapcheck [OPTION]... [--] PROGRAM [ARG]...\n"
        "Run PROGRAM with libheapcheck preloaded and the heap leak checker on.\n"
        "PROGRAM must be dynamically linked (statically linked programs have to be\n"
        "linked with -lheapcheck instead).  Child processes are checked too; their\n"
        "leaks are reported but never change their exit status, and one summary of\n"
        "the whole process tree is printed at the end.\n"
        "\n"
        "Options:\n"
        "  --mode=MODE           normal (default), strict, draconian, minimal, as-is\n"
        "                        or local (sets HEAPCHECK=MODE)\n"
        "  --suppressions=FILE   leak suppressions, one 'leak:PATTERN' a line\n"
        "                        (sets HEAPCHECK_SUPPRESSIONS)\n"
        "  --gen-suppressions=FILE\n"
        "                        write a suppression ('leak:^function$') for every\n"
        "                        leak found to FILE (emptied first), so that a rerun\n"
        "                        with --suppressions=FILE fails only on new leaks\n"
        "                        (adds suppressions:FILE to HEAPCHECK_REPORT)\n"
        "  --exit-code=N         exit status when the program succeeded but leaks were\n"
        "                        found in the tree, 0..255, default 1\n"
        "  --log-file=PREFIX     every process's report into PREFIX.<pid> (or PREFIX\n"
        "                        with %p replaced by the pid), not stderr\n"
        "                        (sets HEAPCHECK_LOG_PATH)\n"
        "  --child-reports=WHERE 'file' (default): a leaking child's report goes to a\n"
        "                        file and one line to stderr; 'stderr': full reports\n"
        "  --no-follow-children  check PROGRAM only, not the programs it executes\n"
        "                        (sets HEAPCHECK_NO_FOLLOW=1)\n"
        "  --verbose             say which library and settings are used, and make\n"
        "                        the checker say more (sets HEAPCHECK_VERBOSE=1)\n"
        "  --help                show this help and exit\n"
        "  --version             show the version and exit\n"
        "\n"
        "Exit status: PROGRAM's own (or death by its signal); N (default 1) when\n"
        "PROGRAM exited 0 but leaks were found in it or any child; 126/127 when\n"
        "PROGRAM cannot be run, 2 on a usage error.\n"
        "\n"
        "Environment: HEAPCHECK_LIB=/path/to/libheapcheck.so overrides the library\n"
        "search.  Every HEAP_CHECK_* variable already set is passed on unchanged.\n",
        stdout);
}

// ---- ELF inspection ----

typedef struct elf_info {
  bool ok;          /* an ELF file we could read */
  int cls;          /* ELFCLASS32 / ELFCLASS64 */
  int machine;
  bool dynamic;     /* has PT_INTERP: the dynamic loader honours LD_PRELOAD */
} elf_info_t;

static uint64_t get_num(const unsigned char *p, int size, bool le) {
  uint64_t v = 0;
  for (int i = 0; i < size; i++) v = le ? v | (uint64_t)p[i] << (8 * i) : v << 8 | p[i];
  return v;
}

static elf_info_t elf_probe(const char *path) {
  elf_info_t e = {0};
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return e;
  unsigned char h[64];
  ssize_t n = pread(fd, h, sizeof h, 0);
  if (n < 52 || memcmp(h, ELFMAG, SELFMAG) != 0 || (h[EI_DATA] != ELFDATA2LSB && h[EI_DATA] != ELFDATA2MSB)) {
    close(fd);
    return e;
  }
  bool le = h[EI_DATA] == ELFDATA2LSB;
  e.cls = h[EI_CLASS];
  uint64_t phoff;
  unsigned phes, phn;
  if (e.cls == ELFCLASS64 && n >= 64) {
    phoff = get_num(h + 32, 8, le), phes = (unsigned)get_num(h + 54, 2, le), phn = (unsigned)get_num(h + 56, 2, le);
  } else if (e.cls == ELFCLASS32) {
    phoff = get_num(h + 28, 4, le), phes = (unsigned)get_num(h + 42, 2, le), phn = (unsigned)get_num(h + 44, 2, le);
  } else {
    close(fd);
    return e;
  }
  e.machine = (int)get_num(h + 18, 2, le);
  e.ok = true;
  for (unsigned i = 0; i < phn && i < 4096 && phes >= 4; i++) {
    unsigned char t[4];
    if (pread(fd, t, 4, (off_t)(phoff + (uint64_t)i * phes)) != 4) break;
    if (get_num(t, 4, le) == PT_INTERP) {
      e.dynamic = true;
      break;
    }
  }
  close(fd);
  return e;
}

// ---- finding libheapcheck.so ----

static bool is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The launcher's own directory, symlinks resolved (/proc/self/exe). */
static bool self_dir(char *buf, size_t size) {
  ssize_t n = readlink("/proc/self/exe", buf, size - 1);
  if (n <= 0) return false;
  buf[n] = 0;
  char *slash = strrchr(buf, '/');
  if (!slash) return false;
  *slash = 0;
  return true;
}

/* Order: $HEAPCHECK_LIB; the install layout next to the launcher
 * (<prefix>/bin/heapcheck -> <prefix>/<libdir>/libheapcheck.so, with the
 * multiarch and lib64 spellings); the configured install libdir; the build
 * tree (<builddir>/tools/heapcheck -> <builddir>/libheapcheck.so). */
static char *find_library(void) {
  const char *env = getenv("HEAPCHECK_LIB");
  if (env && *env) {
    if (!is_file(env)) die(127, "HEAPCHECK_LIB=%s: no such file", env);
    char *r = realpath(env, NULL);
    if (!r) die(127, "HEAPCHECK_LIB=%s: %s", env, strerror(errno));
    return r;
  }
  char here[PATH_MAX];
  if (!self_dir(here, sizeof here)) strcpy(here, ".");
  struct utsname u;
  const char *arch = uname(&u) == 0 ? u.machine : "";
  char c[8][PATH_MAX + 64];
  int k = 0;
  snprintf(c[k++], sizeof c[0], "%s/../%s/%s", here, HC_LIBDIR, HC_LIBNAME);
  snprintf(c[k++], sizeof c[0], "%s/../lib/%s-linux-gnu/%s", here, arch, HC_LIBNAME);
  snprintf(c[k++], sizeof c[0], "%s/../lib64/%s", here, HC_LIBNAME);
  snprintf(c[k++], sizeof c[0], "%s/../lib/%s", here, HC_LIBNAME);
  snprintf(c[k++], sizeof c[0], "%s/%s/%s", HC_PREFIX, HC_LIBDIR, HC_LIBNAME);
  snprintf(c[k++], sizeof c[0], "%s/%s", HC_LIBDIR, HC_LIBNAME);
  snprintf(c[k++], sizeof c[0], "%s/../%s", here, HC_LIBNAME);
  snprintf(c[k++], sizeof c[0], "%s/%s", here, HC_LIBNAME);
  for (int i = 0; i < k; i++)
    if (is_file(c[i])) return realpath(c[i], NULL);
  return NULL;
}

// ---- the program ----

/* The first executable file NAME in $PATH, as execvp would find it. */
static char *path_lookup(const char *name) {
  const char *path = getenv("PATH");
  if (!path) path = "/usr/local/bin:/usr/bin:/bin";
  for (const char *p = path;; p++) {
    const char *end = strchr(p, ':');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    char *cand;
    if (asprintf(&cand, "%.*s/%s", (int)len, len ? p : ".", name) < 0) return NULL;
    struct stat st;
    if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0) return cand;
    free(cand);
    if (!end) return NULL;
    p = end;
  }
}

static char *absolute(const char *p) {
  if (p[0] == '/') return strdup(p);
  char cwd[PATH_MAX];
  if (!getcwd(cwd, sizeof cwd)) die(2, "cannot get the current directory: %s", strerror(errno));
  char *r;
  if (asprintf(&r, "%s/%s", cwd, p) < 0) die(2, "out of memory");
  return r;
}

// ---- options ----

static bool take(const char *name, char **argv, int *i, int argc, const char **val) {
  size_t n = strlen(name);
  if (strncmp(argv[*i], name, n) != 0) return false;
  if (argv[*i][n] == '=') {
    *val = argv[*i] + n + 1;
    return true;
  }
  if (argv[*i][n] != 0) return false;
  if (*i + 1 >= argc) die(2, "option %s needs a value (try --help)", name);
  *val = argv[++*i];
  return true;
}

static int parse_options(int argc, char **argv) {
  int i = 1;
  for (; i < argc; i++) {
    const char *a = argv[i], *v;
    if (strcmp(a, "--") == 0) return i + 1;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) usage(), exit(0);
    if (strcmp(a, "--version") == 0) printf("heapcheck %s\n", HC_VERSION), exit(0);
    if (strcmp(a, "--print-libdir") == 0) printf("%s\n", HC_LIBDIR), exit(0); /* for tests and packagers */
    if (take("--mode", argv, &i, argc, &v)) opt.mode = v;
    else if (take("--suppressions", argv, &i, argc, &v)) opt.suppressions = v;
    else if (take("--log-file", argv, &i, argc, &v)) opt.log_file = v;
    else if (take("--gen-suppressions", argv, &i, argc, &v)) opt.gen_suppressions = v;
    else if (take("--child-reports", argv, &i, argc, &v)) {
      if (strcmp(v, "stderr") == 0) opt.child_stderr = true;
      else if (strcmp(v, "file") == 0) opt.child_stderr = false;
      else die(2, "--child-reports must be 'file' or 'stderr', not '%s'", v);
    } else if (take("--exit-code", argv, &i, argc, &v)) {
      char *end;
      errno = 0;
      long n = strtol(v, &end, 10);
      if (!*v || *end || errno || n < 0 || n > 255 || v[0] == '-' || v[0] == '+')
        die(2, "--exit-code needs a number from 0 to 255, not '%s'", v);
      opt.exit_code = (int)n;
    } else if (strcmp(a, "--no-follow-children") == 0) opt.no_follow = true;
    else if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) opt.verbose = true;
    else if (a[0] == '-') die(2, "unknown option '%s' (try --help)", a);
    else return i;
  }
  return i;
}

static void check_mode(void) {
  static const char *const modes[] = {"normal", "strict", "draconian", "minimal", "as-is", "local"};
  for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
    if (strcmp(opt.mode, modes[i]) == 0) return;
  die(2, "unknown mode '%s' (normal, strict, draconian, minimal, as-is, local)", opt.mode);
}

// ---- environment ----

static void set(const char *name, const char *value) {
  if (setenv(name, value, 1) != 0) die(2, "cannot set %s: %s", name, strerror(errno));
  say("%s=%s", name, value);
}

/* LD_PRELOAD separates its entries with ':' and ' ' and has no quoting, so
 * a library path holding either would be cut in pieces and the program run
 * unchecked.  Such a library is preloaded through a symbolic link in the
 * launcher's private directory (removed at the end); when that directory's
 * own path has them too (TMPDIR), a clear error says what to do. */
/* The status when a check in the tree could not complete and nothing leaked:
 * HEAP_CHECK_ERROR_EXIT_CODE as the library reads it (0-255), else its
 * default 125.  Each process keeps its own status under the launcher. */
static int error_exit_code(void) {
  const char *v = getenv("HEAP_CHECK_ERROR_EXIT_CODE");
  char *end;
  long n = v && *v ? strtol(v, &end, 10) : -1;
  return v && *v && !*end && n >= 0 && n <= 255 ? (int)n : 125;
}

static const char *preload_path(const char *lib, hc_tree_t *tree, char *link, size_t size) {
  if (!strpbrk(lib, ": ")) return lib;
  if (strpbrk(tree->dir, ": ") || snprintf(link, size, "%s/%s", tree->dir, HC_LIBNAME) >= (int)size) {
    hc_tree_remove(tree);
    die(127,
        "the library path '%s' contains ':' or ' ', which LD_PRELOAD cannot carry, and so does the private "
        "directory %s (TMPDIR); set HEAPCHECK_LIB to a copy or symbolic link of %s at a path without them",
        lib, tree->dir, HC_LIBNAME);
  }
  if (symlink(lib, link) != 0) {
    int e = errno;
    hc_tree_remove(tree);
    die(127, "the library path '%s' contains ':' or ' ', which LD_PRELOAD cannot carry, and the link %s "
             "cannot be made: %s; set HEAPCHECK_LIB to a path without them", lib, link, strerror(e));
  }
  say("the library path contains ':' or ' ' (LD_PRELOAD cannot carry them): preloading it as %s", link);
  return link;
}

/* Ours first (its malloc must win), then the user's own preloads, without
 * listing ours twice. */
static void set_preload(const char *lib) {
  const char *old = getenv("LD_PRELOAD");
  size_t cap = strlen(lib) + (old ? strlen(old) : 0) + 2;
  char *out = malloc(cap);
  if (!out) die(2, "out of memory");
  strcpy(out, lib);
  for (const char *p = old ? old : ""; *p;) {
    while (*p == ':' || *p == ' ') p++;
    size_t n = strcspn(p, ": ");
    if (n && !(n == strlen(lib) && strncmp(p, lib, n) == 0)) {
      strcat(out, ":");
      strncat(out, p, n);
    }
    p += n;
  }
  set("LD_PRELOAD", out);
  free(out);
}

// ---- running the program ----

static volatile sig_atomic_t child_pid;
/* Every signal a supervisor may send the process it started goes on to the
 * program: all but those the launcher needs or cannot catch (SIGKILL,
 * SIGSTOP, SIGCHLD), the terminal's stops (SIGTSTP, SIGTTIN, SIGTTOU: they
 * stop the launcher, whose wait sees the program's own stop), SIGPIPE and
 * SIGXFSZ (ignored: the summary on a closed stderr or past RLIMIT_FSIZE
 * must not kill it; the kernel sends the latter as if from the launcher
 * itself) and glibc's
 * two reserved real-time signals (sigaction refuses them).  The faults
 * (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS) are forwarded only when
 * a process sent them; the launcher's own fault kills it as before.  Only
 * nine were passed on before session 30: `docker stop`'s SIGRTMIN+3
 * (systemd images), SIGPWR, SIGIO, SIGXCPU, SIGVTALRM killed the launcher
 * and left the program running without it (adv30). */
static bool forwarded(int sig) {
  switch (sig) {
  case SIGKILL:
  case SIGSTOP:
  case SIGCHLD:
  case SIGTSTP:
  case SIGTTIN:
  case SIGTTOU:
  case SIGPIPE:
  case SIGXFSZ: return false;
  default: return sig < SIGRTMIN || sig > SIGRTMAX ? sig < 32 : true;
  }
}

static bool is_fault(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGTRAP || sig == SIGSYS;
}

/* A signal for the launcher is the program's.  Those the terminal sent to
 * the whole foreground process group (si_code SI_KERNEL) reached the
 * program already: passing them on would deliver them twice.  So did one
 * the program sent to its own group (kill(0, sig)): it is not passed on
 * either, back to the program (twice) or up.  What the program sends to
 * its parent, the library in it sends to the launcher's parent
 * (HEAPCHECK_TREE_PPID; checker/parent_signal.c): X servers tell the
 * process that started them they are ready with SIGUSR1 (xinit, startx,
 * xvfb-run), daemons their supervisor.  Passing on here every signal that
 * came from the program (adv30) also sent its group signals to the
 * launcher's parent: a harness running the job in a group of its own died
 * of a script's `trap 'kill 0' EXIT`. */
static void forward(int sig, siginfo_t *si, void *uc) {
  (void)uc;
  int saved = errno;
  if (si && si->si_code <= 0 && si->si_pid == getpid()) return; /* its own raise or abort */
  if (is_fault(sig) && !(si && si->si_code <= 0)) { /* the launcher's own fault */
    signal(sig, SIG_DFL);
    return; /* the instruction faults again, and the launcher dies of it */
  }
  bool from_program = si && si->si_code <= 0 && si->si_pid == (pid_t)child_pid;
  if (child_pid > 0 && !from_program && !(si && si->si_code == SI_KERNEL)) kill((pid_t)child_pid, sig);
  errno = saved;
}

/* The dispositions the launcher was started with, of every signal it
 * changes (the forwarded ones, SIGPIPE, SIGCHLD): SIG_DFL or SIG_IGN (exec
 * reset any handler).  The program gets them back before its exec, so it
 * starts as it would without the launcher: nohup's SIGHUP and a background
 * job's SIGINT and SIGQUIT stay ignored, SIGPIPE is not ignored (a writer
 * whose reader went away dies of it), SIGCHLD keeps an inherited SIG_IGN.
 * The launcher still catches every forwarded signal, ignored or not: one
 * sent to its pid goes on to the program, which may have a handler for it. */
static struct sigaction started_with[NSIG];

/* f(sig) for every signal whose disposition the launcher changes. */
static void each_changed(void (*f)(int)) {
  for (int sig = 1; sig < NSIG; sig++)
    if (forwarded(sig)) f(sig);
  f(SIGPIPE);
  f(SIGCHLD);
}

static void save_one(int sig) {
  struct sigaction *a = &started_with[sig];
  if (sigaction(sig, NULL, a) != 0 || (a->sa_handler != SIG_IGN && a->sa_handler != SIG_DFL)) {
    memset(a, 0, sizeof *a);
    a->sa_handler = SIG_DFL;
  }
}

static void restore_one(int sig) { sigaction(sig, &started_with[sig], NULL); }

static void save_dispositions(void) {
  each_changed(save_one);
  /* The launcher's own wait needs its child's status: a SIGCHLD it was
   * started with ignored would have the kernel reap the program. */
  signal(SIGCHLD, SIG_DFL);
}

static void install_forwarding(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = forward;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  for (int sig = 1; sig < NSIG; sig++)
    if (forwarded(sig)) sigaction(sig, &sa, NULL);
}

static pid_t start(char **argv, const char *path) {
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &old);
  pid_t pid = fork();
  if (pid == 0) {
    /* The program starts with the dispositions and mask the launcher had. */
    each_changed(restore_one);
    sigprocmask(SIG_SETMASK, &old, NULL);
    /* argv[0] as typed, found in PATH again (same file), as without the
     * launcher (the pprof hint in leak reports quotes argv[0]). */
    execvp(argv[0], argv);
    int e = errno;
    fprintf(stderr, "heapcheck: %s: %s\n", path, strerror(e));
    _exit(e == ENOENT ? 127 : 126);
  }
  if (pid > 0) child_pid = pid;
  /* The launcher's own writes past an inherited RLIMIT_FSIZE (its summary
   * to a stderr that is a file) fail with EFBIG instead of ending it with
   * SIGXFSZ (153); the program was forked with the disposition it had. */
  signal(SIGXFSZ, SIG_IGN);
  sigprocmask(SIG_SETMASK, &old, NULL);
  return pid;
}

/* The program stopped (a stop signal it sent itself, SIGSTOP from another
 * process, SIGTTIN/SIGTTOU in a background job): the launcher stops too, of
 * the same signal, so that the shell waiting for it sees the job stopped
 * and takes the terminal back ("Stopped", "Stopped (tty input)").  Only
 * the terminal's Ctrl-Z stopped both before: `heapcheck sh -c 'kill -TSTP
 * $$'` and an inner `bash -i`'s `suspend` left the shell waiting for good.
 * SIGCONT (the shell's fg or bg, to the whole group) resumes both; one sent
 * to the launcher alone is passed on (forwarded()). */
static void stop_as_program(int sig) {
  if (sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU) sig = SIGSTOP;
  raise(sig);
}

/* Dies of sig as the program did (no core of the launcher itself: the
 * program dumped its own). */
static void die_of_signal(int sig) {
  struct rlimit no_core = {0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  signal(sig, SIG_DFL);
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, sig);
  sigprocmask(SIG_UNBLOCK, &s, NULL);
  raise(sig);
  exit(128 + sig);
}

/* --gen-suppressions=FILE: empties FILE (0600, never through a symlink) and
 * adds suppressions:FILE to HEAPCHECK_REPORT; every checked process of the
 * tree appends its records' suppressions (checker/report_out.c). */
static void gen_suppressions(const char *supp) {
  const char *f = opt.gen_suppressions;
  if (!*f) die(2, "--gen-suppressions needs a file name");
  if (strchr(f, ',')) die(2, "--gen-suppressions: the file name may not contain a comma: '%s'", f);
  char *abs = absolute(f);
  struct stat st;
  if (lstat(abs, &st) == 0 && S_ISLNK(st.st_mode)) die(2, "--gen-suppressions: '%s' is a symbolic link", f);
  char *real = realpath(abs, NULL); /* exists already: compare with the input list */
  if (supp && real && strcmp(real, supp) == 0)
    die(2, "--gen-suppressions and --suppressions name the same file: write the new list elsewhere");
  free(real);
  /* Made here: 0600 whatever the umask (under umask 0777 it was 0000 and
   * the checked processes, not root, could not append to it).  A file that
   * was there keeps its mode. */
  int fd = open(abs, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) (void)fchmod(fd, 0600);
  else if (errno == EEXIST) {
    /* O_NONBLOCK: a FIFO nobody reads says ENXIO instead of a wait for good;
     * only a regular file will do (the checked processes append to it). */
    if (stat(abs, &st) == 0 && !S_ISREG(st.st_mode)) die(2, "--gen-suppressions: '%s' is not a regular file", f);
    fd = open(abs, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  }
  if (fd < 0) die(2, "--gen-suppressions: cannot create '%s': %s", f, strerror(errno));
  close(fd);
  const char *old = getenv("HEAPCHECK_REPORT");
  char *v;
  if (asprintf(&v, "%s%ssuppressions:%s", old && *old ? old : "", old && *old ? "," : "", abs) < 0)
    die(2, "out of memory");
  set("HEAPCHECK_REPORT", v);
  free(v);
  free(abs);
}

int main(int argc, char **argv) {
  int first = parse_options(argc, argv);
  if (first >= argc) die(2, "no program given (try --help)");
  check_mode();
  char *supp = NULL;
  if (opt.suppressions) {
    if (!is_file(opt.suppressions) || access(opt.suppressions, R_OK) != 0)
      die(2, "cannot read suppressions file '%s'", opt.suppressions);
    supp = realpath(opt.suppressions, NULL);
  }
  char **prog = argv + first;
  char *path = strchr(prog[0], '/') ? strdup(prog[0]) : path_lookup(prog[0]);
  struct stat st;
  if (!path || stat(path, &st) != 0) die(127, "%s: command not found", prog[0]);
  if (!S_ISREG(st.st_mode) || access(path, X_OK) != 0) die(126, "%s: not an executable file", prog[0]);
  char *lib = find_library();
  if (!lib) die(127, "cannot find %s; set HEAPCHECK_LIB=/path/to/%s", HC_LIBNAME, HC_LIBNAME);
  elf_info_t le = elf_probe(lib), pe = elf_probe(path);
  if (pe.ok) {
    if (!pe.dynamic)
      die(126, "%s is statically linked: LD_PRELOAD cannot put heapcheck's malloc into it; relink it with "
               "-lheapcheck (and run it with HEAPCHECK=%s) instead", prog[0], opt.mode);
    if (pe.cls != le.cls || pe.machine != le.machine)
      die(126, "%s is built for another architecture (ELF class %d, machine %d) than %s (class %d, machine %d)",
          prog[0], pe.cls, pe.machine, lib, le.cls, le.machine);
  } else {
    say("%s is not an ELF file; its interpreter will be checked", prog[0]);
  }

  say("library: %s", lib);
  set("HEAPCHECK", opt.mode);
  if (supp) set("HEAPCHECK_SUPPRESSIONS", supp);
  if (opt.verbose) set("HEAPCHECK_VERBOSE", "1");
  if (opt.no_follow) set("HEAPCHECK_NO_FOLLOW", "1");
  else unsetenv("HEAPCHECK_NO_FOLLOW");
  if (opt.log_file && !*opt.log_file) die(2, "--log-file needs a file name prefix");
  if (opt.log_file) {
    char *abs = absolute(opt.log_file); /* children may change directory */
    set("HEAPCHECK_LOG_PATH", abs);
    free(abs);
  }
  if (opt.gen_suppressions) gen_suppressions(supp);
  if (opt.child_stderr) set("HEAPCHECK_CHILD_REPORTS", "stderr");
  else unsetenv("HEAPCHECK_CHILD_REPORTS");
  hc_tree_t tree;
  if (hc_tree_create(&tree) != 0) die(2, "cannot create a private directory in %s: %s", hc_tree_tmpdir(), strerror(errno));
  set("HEAPCHECK_TREE", tree.dir);
  char num[24];
  snprintf(num, sizeof num, "%d", (int)getpid());
  set("HEAPCHECK_TREE_PID", num);
  snprintf(num, sizeof num, "%d", (int)getppid());
  set("HEAPCHECK_TREE_PPID", num);
  struct stat err;
  char id[48];
  if (fstat(2, &err) == 0) {
    snprintf(id, sizeof id, "%llu:%llu", (unsigned long long)err.st_dev, (unsigned long long)err.st_ino);
    set("HEAPCHECK_TREE_STDERR", id);
  } else {
    unsetenv("HEAPCHECK_TREE_STDERR");
  }
  set("HEAPCHECK_KEEP_STATUS", "1");
  char link[PATH_MAX];
  const char *preload = preload_path(lib, &tree, link, sizeof link);
  set_preload(preload);
  say("running %s", path);

  save_dispositions();
  install_forwarding();
  signal(SIGPIPE, SIG_IGN); /* the summary on a closed stderr must not kill us (the program's is restored) */
  fflush(NULL);
  pid_t pid = start(prog, path);
  if (pid < 0) {
    if (preload != lib) unlink(link);
    hc_tree_remove(&tree);
    die(126, "cannot start %s: %s", prog[0], strerror(errno));
  }
  int status;
  for (;;) {
    if (waitpid(pid, &status, WUNTRACED) < 0) {
      if (errno != EINTR) die(2, "waitpid: %s", strerror(errno));
    } else if (WIFSTOPPED(status)) {
      stop_as_program(WSTOPSIG(status));
    } else {
      break;
    }
  }
  child_pid = 0;

  hc_tree_summary_t sum;
  hc_tree_read(&tree, &sum);
  /* The program ended normally but never checked: it did not end through
   * exit or _exit (Go's runtime ends the process with its own exit_group
   * system call, and no exit handler runs), or it executed a program the
   * library cannot enter (setuid, static), or it brings its own allocator
   * (the library stands down: runtime/libc_redirect.c).  Its leaks are unknown: say so
   * rather than let "no leaks found" stand for it alone. */
  if (WIFEXITED(status) && strcmp(opt.mode, "local") != 0 && !hc_tree_has(&sum, pid))
    fprintf(stderr,
            "heapcheck: the program (pid %d) ended without its leak check: not through exit or _exit (Go's runtime "
            "ends with its own exit_group system call), it executed a program heapcheck cannot enter (setuid, "
            "static), or it has an allocator of its own; its leaks are unknown\n",
            (int)pid);
  hc_tree_print(&tree, &sum, stderr);
  if (preload != lib) unlink(link);
  hc_tree_cleanup(&tree, &sum);
  fflush(stderr);
  if (WIFSIGNALED(status)) die_of_signal(WTERMSIG(status));
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  if (code == 0 && sum.leaking > 0) code = opt.exit_code >= 0 ? opt.exit_code : 1;
  else if (code == 0 && sum.incomplete > 0) code = error_exit_code();
  return code;
}

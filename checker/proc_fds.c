/* proc_fds.c - the /proc files a leak check reads (/proc/self/task and
 * /proc/self/maps), with descriptors for them kept from start-up.
 *
 * A check must run when the program has used up its descriptors (EMFILE):
 * without the task list no thread could be stopped, without the maps no
 * stack could be bounded.  So the checker opens both once at start-up and
 * keeps them above the program's usual range (F_DUPFD_CLOEXEC from 100,
 * close-on-exec).  The same descriptors serve a program that has since lost
 * /proc from its view: a daemon that chroots into an empty directory (its
 * privilege separation), or /proc unmounted in its mount namespace; the check
 * of such a program with threads could not complete.  A check opens a fresh
 * descriptor first (so a kept number
 * the program has closed and reused is never touched) and uses a kept one
 * whenever that fails; a kept descriptor is used only while its device,
 * inode, close-on-exec flag and owning pid are still the ones recorded when
 * it was opened (after fork the child's kept ones describe the parent: they
 * are reopened in the child at fork, while it still has the parent's limits
 * and root; a privilege-separated child that then drops RLIMIT_NOFILE to 0
 * or chroots into an empty directory, as daemons' workers do, is checked
 * through them).  Reading from offset 0 again (lseek) gives a fresh
 * snapshot of either file.  /proc/self/status (is a tracer attached, how
 * many threads) is opened when asked: a check runs without it.  The starting
 * thread's status is kept too, read only with pread (checker/seccomp_probe.c:
 * its Seccomp lines are read before a check makes any other system call, and
 * an unseen seccomp filter may kill an open).  While that descriptor is
 * known to be ours and at offset 0 (opened, or rewound since its last read,
 * and not closed or replaced by the program as far as the library's close,
 * close_range, closefrom, dup2 and dup3 show: close_watch.c) it is read
 * with read(2) alone (hci_proc_status_bare): a filter the program installed
 * by an inline system call may allow little more than read and write, and
 * the checks made before a pread (getpid, fcntl, fstat) killed the process.
 * The count of filters in force when the process started (inherited: its
 * start-up, ours included, ran under them) is kept (hci_proc_start_filters).
 *
 * Locks: none; callers hold the checker lock (one check at a time).
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hc_checker.h"

#define KEEP_FROM 100

static struct {
  int fd[HCI_PROC_N];
  dev_t dev[HCI_PROC_N];
  ino_t ino[HCI_PROC_N];
  int pid;
} kept = {{-1, -1, -1}, {0, 0, 0}, {0, 0, 0}, 0};
HC_PRIVATE_STATE(kept);
/* The kept status descriptor is ours and at offset 0 (see above). */
static _Atomic bool status_fresh;
/* Seccomp_filters at the process's start; -2 not read yet, -1 unknown. */
static long start_filters = -2;
HC_PRIVATE_STATE(status_fresh);
HC_PRIVATE_STATE(start_filters);

/* The maps and status through the calling thread (hci_os_open_proc:
 * /proc/self/maps is empty once the main thread has called pthread_exit);
 * the task list is the process's. */
static int open_retry(int which) {
  if (which != HCI_PROC_TASK) return hci_os_open_proc(which == HCI_PROC_MAPS ? "maps" : "status", O_RDONLY);
  int fd;
  do fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  return fd;
}

static bool still_ours(int which) {
  int fd = kept.fd[which];
  if (fd < 0) return false;
  struct stat st;
  int fl = fcntl(fd, F_GETFD);
  return fl >= 0 && (fl & FD_CLOEXEC) && fstat(fd, &st) == 0 && st.st_dev == kept.dev[which] &&
         st.st_ino == kept.ino[which];
}

static void keep_one(int which) {
  int fd = open_retry(which);
  if (fd < 0) return;
  int high = fcntl(fd, F_DUPFD_CLOEXEC, KEEP_FROM);
  close(fd);
  struct stat st;
  if (high < 0 || fstat(high, &st) != 0) {
    if (high >= 0) close(high);
    return;
  }
  kept.fd[which] = high;
  kept.dev[which] = st.st_dev;
  kept.ino[which] = st.st_ino;
  if (which == HCI_PROC_STATUS) {
    if (start_filters == -2) { /* once per exec: a fork child keeps its parent's */
      char buf[4096];
      ssize_t n = pread(high, buf, sizeof buf - 1, 0);
      buf[n > 0 ? n : 0] = 0;
      start_filters = n > 0 ? hci_proc_status_value(buf, "Seccomp_filters") : -1;
    }
    atomic_store(&status_fresh, true);
  }
}

long hci_proc_start_filters(void) { return start_filters < 0 ? -1 : start_filters; }

void hci_proc_fds_gone(unsigned lo, unsigned hi) {
  int fd = kept.fd[HCI_PROC_STATUS];
  if (fd >= 0 && (unsigned)fd >= lo && (unsigned)fd <= hi) atomic_store(&status_fresh, false);
}

/* read(2) only; -1 when the descriptor is not known fresh.  It is not fresh
 * after the read until hci_proc_status_rewind. */
ssize_t hci_proc_status_bare(char *buf, size_t n) {
  if (!atomic_exchange(&status_fresh, false)) return -1;
  long r;
  while ((r = hci_raw6(SYS_read, kept.fd[HCI_PROC_STATUS], (long)buf, (long)n, 0, 0, 0)) == -EINTR) {
  }
  return r < 0 ? -1 : r;
}

void hci_proc_status_rewind(void) {
  if (hci_raw6(SYS_lseek, kept.fd[HCI_PROC_STATUS], 0, SEEK_SET, 0, 0, 0) == 0) atomic_store(&status_fresh, true);
}

void hci_proc_keep(void) {
  int saved = errno;
  int pid = getpid();
  if (kept.pid != pid) {
    /* Inherited through fork: they describe the parent.  Ours to close only
     * while they are still what we opened. */
    for (int i = 0; i < HCI_PROC_N; i++) {
      if (still_ours(i)) close(kept.fd[i]);
      kept.fd[i] = -1;
    }
    atomic_store(&status_fresh, false);
    kept.pid = pid;
  }
  for (int i = 0; i < HCI_PROC_N; i++)
    if (kept.fd[i] < 0) keep_one(i);
  errno = saved;
}

void hci_proc_fork_child(void) {
  if (hci_chk.active) hci_proc_keep();
}

int hci_proc_open(int which, bool *is_kept) {
  *is_kept = false;
  int fd = open_retry(which);
  if (fd >= 0) return fd;
  int saved = errno;
  if (kept.pid == getpid() && still_ours(which) && lseek(kept.fd[which], 0, SEEK_SET) == 0) {
    *is_kept = true;
    return kept.fd[which];
  }
  errno = saved;
  return -1;
}

ssize_t hci_proc_kept_pread(int which, char *buf, size_t n) {
  if (kept.pid != getpid() || !still_ours(which)) return -1;
  ssize_t r;
  do r = pread(kept.fd[which], buf, n, 0);
  while (r < 0 && errno == EINTR);
  return r;
}

void hci_proc_close(int fd, bool is_kept) {
  if (fd >= 0 && !is_kept) close(fd);
}

/* A number from /proc/self/status ("TracerPid", "Threads"), or -1. */
long hci_proc_status_field(const char *key) {
  char buf[4096];
  int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  return hci_proc_status_value(buf, key);
}

long hci_proc_status_value(const char *status, const char *key) {
  size_t k = strlen(key);
  for (const char *l = status; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
    if (strncmp(l, key, k) != 0 || l[k] != ':') continue;
    const char *p = l + k + 1;
    while (*p == ' ' || *p == '\t') p++;
    long v = 0;
    while (*p >= '0' && *p <= '9') v = v * 10 + (*p++ - '0');
    return v;
  }
  return -1;
}

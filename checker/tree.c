/* tree.c - what a process checked under the launcher leaves for it.
 *
 * The launcher (tools/heapcheck.c) runs the program as its child with
 * HEAPCHECK_TREE=<private dir>, HEAPCHECK_TREE_PID=<its pid> and
 * HEAPCHECK_KEEP_STATUS=1 in the environment every descendant inherits.
 * After its whole-program check at exit, each process appends one record to
 * <dir>/processes (the launcher created it; never created here):
 *     pid \t leaked bytes \t leaked allocations \t state \t report \t command line \n
 * where state is "ok", or "incomplete" when the check could not complete
 * (its totals are then what it found, not a verdict), or "pending": written
 * (0 and 0) when the process walls itself in - chroot, a seccomp filter that
 * may kill, a Landlock domain, closing the kept descriptor when the file
 * cannot be opened again (close_watch.c) - after which its record may never arrive
 * (sshd's sandboxed child closes every descriptor, the kept one too, and the
 * directory is out of view).  The launcher counts a pending record that no
 * later record of the same pid follows as a check that could not complete;
 * before, such a process was missing from the summary.  report is the log
 * file's path or "stderr", and the command line is
 * /proc/self/cmdline with spaces between arguments (tabs, newlines and other
 * control characters shown as '?', cut at 1 KiB).  The record is one
 * O_APPEND write shorter than PIPE_BUF, so records of processes exiting at
 * the same time do not interleave.  A leaking descendant, or one whose
 * check could not complete, whose report went to a file also prints one
 * line on the original stderr naming it, when that is the launcher's own
 * stderr (not one the tree redirected), unless the launcher has ended
 * (a daemon: the launcher left the directory and said so).
 *
 * Runs at exit with the world running; no malloc, no stdio.
 * Locks: none.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hc_checker.h"
#include "hc_options.h"

/* /proc/self/cmdline as one printable line; its length. */
static size_t read_cmdline(char *buf, size_t size) {
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  ssize_t n;
  do n = read(fd, buf, size - 1);
  while (n < 0 && errno == EINTR);
  close(fd);
  if (n <= 0) return 0;
  size_t len = (size_t)n;
  while (len > 0 && buf[len - 1] == 0) len--;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)buf[i];
    if (c == 0) buf[i] = ' ';
    else if (c < 0x20 || c == 0x7f) buf[i] = '?';
  }
  buf[len] = 0;
  return len;
}

/* False when the record could not be written. */
static bool append_record(ssize_t bytes, ssize_t objects, const char *state, const char *report) {
  /* Opened at start (log_stream.c): a process that dropped its privileges
   * since (nginx's workers) could not open the launcher's directory now. */
  int fd = hci_log_stream_records_fd();
  if (fd < 0) return false;
  char cmd[1024];
  if (read_cmdline(cmd, sizeof cmd) == 0) hci_snprintf(cmd, sizeof cmd, "?");
  char line[3072];
  int n = hci_snprintf(line, sizeof line, "%d\t%zd\t%zd\t%s\t%.1500s\t%s\n", (int)getpid(), bytes < 0 ? 0 : bytes,
                       objects < 0 ? 0 : objects, state, report, cmd);
  size_t len = n < 0 ? 0 : (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
  if (len && line[len - 1] != '\n') line[len - 1] = '\n';
  return hci_write_all(fd, line, len);
}

/* Whether fd (this process's original stderr) is the launcher's own
 * stderr (HEAPCHECK_TREE_STDERR, its device:inode; a launcher that did not
 * say: yes).  A descendant's stderr that the tree redirected (a test's
 * `2>&1` into the file it compares, a `$(...)` capture) gets no notice:
 * libtool's wrapper scripts run sed, whose leak notice landed in the
 * output jq's shtest compares (real30); the launcher's summary names every
 * leaking process anyway. */
static bool launcher_stderr(int fd) {
  if (fd < 0) return false;
  const char *want = hci_opt_str(HCO_HEAPCHECK_TREE_STDERR);
  if (!want || !*want) return true;
  struct stat st;
  if (fstat(fd, &st) != 0) return false;
  char have[48];
  hci_snprintf(have, sizeof have, "%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
  return strcmp(have, want) == 0;
}

bool hci_tree_note(ssize_t bytes, ssize_t objects, bool incomplete) {
  const char *dir = hci_log_stream_tree_dir();
  /* A sandboxed process writes nothing: its "pending" record, written
   * before its filter, stands for it (the launcher counts it). */
  if (!dir || hci_log_stream_muted()) return true;
  const char *file = hci_log_stream_path();
  bool told = append_record(bytes, objects, incomplete ? "incomplete" : "ok", file ? file : "stderr");
  if (bytes <= 0 && objects <= 0 && !incomplete) return told;
  /* No notice from a daemon that outlived the launcher: the launcher said
   * at its end where such reports go, and this stderr may be one the
   * daemon hands on (distccd relays its compilers' to each client). */
  if (!file || hci_log_stream_tree_top() || hci_log_stream_tree_over()) return told;
  int err = hci_log_stream_stderr();
  if (!launcher_stderr(err)) return told;
  if (incomplete) {
    hci_fdprintf(err, "heapcheck: %s (pid %d): its leak check could not complete; report: %s\n",
                 *hci_prog_short_name() ? hci_prog_short_name() : "?", (int)getpid(), file);
    return told;
  }
  hci_fdprintf(err, "heapcheck: %s (pid %d) leaked %zd bytes in %zd allocations; report: %s\n",
               *hci_prog_short_name() ? hci_prog_short_name() : "?", (int)getpid(), bytes,
               objects, file);
  return told;
}

/* Once per process (a fork child has its own pid): before the process walls
 * itself in, while the records file can still be written. */
static int pending_pid;
HC_PRIVATE_STATE(pending_pid);

void hci_tree_pending(void) {
  int pid = (int)getpid();
  if (!hci_log_stream_tree_dir() || pending_pid == pid) return;
  pending_pid = pid;
  const char *file = hci_log_stream_path();
  append_record(0, 0, "pending", file ? file : "stderr");
}

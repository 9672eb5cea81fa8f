/* adopter.c - whether the task that adopts our orphans will reap them.
 *
 * The ptrace helper is an orphan by default (stop_ptrace.c, "Whose child
 * it is"): the namespace's init, or the nearest child subreaper above us,
 * becomes its parent and must reap it.  A container whose first process
 * never reaps (`tail -f /dev/null` or `sleep infinity` as pid 1, the tests
 * run with `docker exec`) would keep one zombie a check for good, until a
 * pids cgroup limit breaks the program's own forks.  No interface says
 * whether a process reaps; its SIGCHLD disposition is the practical sign:
 * an init that reaps catches SIGCHLD (bash, process managers), blocks it to
 * take it with signalfd or sigwait (systemd, tini, catatonit, dumb-init) or
 * ignores it (the kernel then reaps for it).  One that does none of these
 * leaves SIGCHLD at its default, discarded, and never waits on purpose
 * (a shell that waits only for its own job may still reap an orphan by
 * chance while it waits: taken as "never", which costs only the old shape).
 * Read from the SigBlk, SigIgn and SigCgt lines of its status file, with
 * raw calls (the caller holds every allocator lock): one descriptor, opened
 * and closed here.
 *
 * A child subreaper between us and init cannot be asked beforehand (no
 * file shows the flag of another process): the helper says whose child it
 * became (getppid before it ends), and that adopter is judged the same way
 * for the next checks (one zombie at most, kept by a subreaper that never
 * reaps).  Where /proc is another pid namespace's (its pid 1 is not our
 * init) or cannot be read (chroot, hidepid, no descriptor left), the answer
 * is "unknown" and the caller keeps the old shape.
 *
 * Locks: none (raw system calls, a stack buffer).
 */
#include <fcntl.h>
#include <signal.h>
#include <string.h>

#include "hc_checker.h"

unsigned long long hci_status_mask(const char *buf, const char *key) {
  const char *p = strstr(buf, key);
  if (!p) return 0;
  p += strlen(key);
  while (*p == ' ' || *p == '\t') p++;
  unsigned long long v = 0;
  for (;; p++) {
    int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
    if (d < 0) break;
    v = v << 4 | (unsigned)d;
  }
  return v;
}

/* The number of entries on the NSpid line (one: /proc is our namespace's),
 * 1 when there is none (Linux < 4.1: no way to tell), 0 when unreadable. */
static int nspid_levels(void) {
  char buf[2048];
  if (hci_task_file(AT_FDCWD, "/proc", "self/status", buf, sizeof buf) <= 0) return 0;
  const char *l = strstr(buf, "\nNSpid:");
  if (!l) return 1;
  int n = 0;
  for (const char *c = l + 7; *c && *c != '\n'; c++)
    if (*c >= '0' && *c <= '9' && (c[-1] < '0' || c[-1] > '9')) n++;
  return n;
}

int hci_adopter_reaps(int pid) {
  if (pid <= 0) return -1;
  if (nspid_levels() != 1) return -1; /* another namespace's /proc: its pid 1 is not our init */
  char dir[24], buf[2048];
  hci_snprintf(dir, sizeof dir, "/proc/%d", pid);
  if (hci_task_file(AT_FDCWD, dir, "status", buf, sizeof buf) <= 0 || !strstr(buf, "\nSigCgt:")) return -1;
  unsigned long long chld = 1ull << (SIGCHLD - 1);
  return ((hci_status_mask(buf, "\nSigBlk:") | hci_status_mask(buf, "\nSigIgn:") | hci_status_mask(buf, "\nSigCgt:")) & chld) != 0;
}

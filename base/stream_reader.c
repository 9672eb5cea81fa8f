/* stream_reader.c - whether this process holds the reading end of the pipe,
 * FIFO or Unix socket it writes its report to.
 *
 * While a check keeps the other threads stopped, a report on a stream read
 * by one of them (a logging thread draining stderr) never drains: output.c
 * then bounds the wait.  A reader elsewhere (`| less` waiting for the user)
 * is waited for as a blocking write would.  Raw system calls only: no
 * malloc, no stdio, and the descriptors opened here are closed before
 * returning.  Unknown (no descriptor left, no /proc, no sock_diag) counts as
 * not ours. */
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>

#include "hc_base.h"

/* The inode of a connected Unix socket's peer, 0 if unknown.  SO_PEERCRED
 * names the process that made the pair, not the one reading it; the kernel's
 * sock_diag interface (what `ss -x` shows) names the peer socket itself. */
static unsigned long unix_peer_ino(unsigned long ino) {
  int s = (int)syscall(SYS_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (s < 0) return 0;
  struct {
    struct nlmsghdr nlh;
    struct unix_diag_req req;
  } q;
  memset(&q, 0, sizeof q);
  q.nlh.nlmsg_len = sizeof q;
  q.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  q.nlh.nlmsg_flags = NLM_F_REQUEST;
  q.req.sdiag_family = AF_UNIX;
  q.req.udiag_states = ~0u;
  q.req.udiag_ino = (unsigned)ino;
  q.req.udiag_show = UDIAG_SHOW_PEER;
  q.req.udiag_cookie[0] = q.req.udiag_cookie[1] = ~0u; /* INET_DIAG_NOCOOKIE: look up by inode alone */
  struct sockaddr_nl to;
  memset(&to, 0, sizeof to);
  to.nl_family = AF_NETLINK;
  unsigned long peer = 0;
  char b[1024] __attribute__((aligned(8)));
  /* The kernel answers inside sendto: MSG_DONTWAIT never waits for a reply that is not coming. */
  if (syscall(SYS_sendto, s, &q, sizeof q, 0, &to, sizeof to) == (long)sizeof q) {
    long n = syscall(SYS_recvfrom, s, b, sizeof b, MSG_DONTWAIT, NULL, NULL);
    const struct nlmsghdr *h = (const struct nlmsghdr *)b;
    if (n > 0 && NLMSG_OK(h, (unsigned long)n) && h->nlmsg_type == SOCK_DIAG_BY_FAMILY) {
      const struct unix_diag_msg *m = NLMSG_DATA(h);
      if (m->udiag_ino == (unsigned)ino) {
        int left = (int)h->nlmsg_len - (int)NLMSG_LENGTH(sizeof *m);
        for (const struct rtattr *a = (const struct rtattr *)(m + 1); RTA_OK(a, left); a = RTA_NEXT(a, left))
          if (a->rta_type == UNIX_DIAG_PEER && RTA_PAYLOAD(a) >= sizeof(unsigned))
            memcpy(&peer, RTA_DATA(a), sizeof(unsigned));
      }
    }
  }
  syscall(SYS_close, s);
  return peer;
}

/* What held_here looks for, and the directory it walks. */
struct held_want {
  int fd, dir;
  bool sock;
  dev_t dev;
  unsigned long ino;
};

/* 1 when descriptor `other` is the one held_here looks for. */
static int held_entry(void *arg, int other, const char *name) {
  (void)name;
  const struct held_want *w = arg;
  struct stat os;
  if (other == w->fd || other == w->dir || syscall(SYS_fstat, other, &os) != 0) return 0;
  if (w->sock) /* the peer socket: any descriptor of it reads (shutdown aside) */
    return S_ISSOCK(os.st_mode) && os.st_ino == w->ino;
  long fl = syscall(SYS_fcntl, other, F_GETFL, 0);
  return os.st_dev == w->dev && os.st_ino == w->ino && fl >= 0 && (fl & O_ACCMODE) != O_WRONLY;
}

/* Whether a descriptor of this process other than fd is (dev, ino) and can
 * read: a walk of /proc/thread-self/fd. */
static bool held_here(int fd, bool sock, dev_t dev, unsigned long ino) {
  int dir = hci_os_open_proc("fd", O_RDONLY | O_DIRECTORY);
  if (dir < 0) return false;
  struct held_want w = {fd, dir, sock, dev, ino};
  bool ours = hci_os_dir_numbers(dir, held_entry, &w) == 1;
  syscall(SYS_close, dir);
  return ours;
}

bool hci_stream_reader_is_ours(int fd, const struct stat *st) {
  if (S_ISFIFO(st->st_mode)) return held_here(fd, false, st->st_dev, st->st_ino);
  if (!S_ISSOCK(st->st_mode)) return false;
  unsigned long peer = unix_peer_ino(st->st_ino);
  return peer && held_here(fd, true, 0, peer);
}

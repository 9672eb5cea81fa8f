/* output.c - a printf subset that never allocates, and the message sinks.
 *
 * The allocator, signal handlers and the stopped-world phase of the checker
 * may not use stdio (it locks and allocates).  Everything they print is
 * formatted here into a caller's buffer and written with one write(2). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hc_base.h"

int hci_diag_fd = -1;

typedef struct sink {
  char *buf;
  size_t size;  /* capacity including the terminating NUL */
  size_t len;   /* characters produced so far (may exceed size) */
} sink_t;

static void put(sink_t *s, char c) {
  if (s->len + 1 < s->size) s->buf[s->len] = c;
  s->len++;
}

static void put_padded(sink_t *s, const char *str, size_t n, int width, bool left, char pad) {
  size_t w = width > 0 ? (size_t)width : 0;
  if (!left)
    for (size_t i = n; i < w; i++) put(s, pad);
  for (size_t i = 0; i < n; i++) put(s, str[i]);
  if (left)
    for (size_t i = n; i < w; i++) put(s, ' ');
}

static void put_number(sink_t *s, unsigned long long v, bool neg, unsigned base, bool upper, int width,
                       bool left, char pad, const char *prefix) {
  char tmp[72];
  const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
  size_t n = 0;
  do {
    tmp[sizeof tmp - 1 - n++] = digits[v % base];
    v /= base;
  } while (v);
  size_t plen = prefix ? strlen(prefix) : 0;
  if (neg) plen = 1;
  /* Zero padding goes between the sign/prefix and the digits. */
  if (pad == '0' && !left) {
    if (neg) put(s, '-');
    for (size_t i = 0; i < plen && !neg; i++) put(s, prefix[i]);
    int w = width - (int)plen;
    put_padded(s, tmp + sizeof tmp - n, n, w, false, '0');
    return;
  }
  char out[80];
  size_t o = 0;
  if (neg) out[o++] = '-';
  for (size_t i = 0; i < plen && !neg; i++) out[o++] = prefix[i];
  memcpy(out + o, tmp + sizeof tmp - n, n);
  put_padded(s, out, o + n, width, left, ' ');
}

int hci_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap) {
  sink_t s = {buf, size, 0};
  for (const char *f = fmt; *f; f++) {
    if (*f != '%') {
      put(&s, *f);
      continue;
    }
    f++;
    bool left = false;
    char pad = ' ';
    for (;; f++) {
      if (*f == '-') left = true;
      else if (*f == '0') pad = '0';
      else if (*f == ' ' || *f == '+' || *f == '#') continue;
      else break;
    }
    int width = 0;
    if (*f == '*') {
      width = va_arg(ap, int);
      if (width < 0) { left = true; width = -width; }
      f++;
    } else {
      while (*f >= '0' && *f <= '9') width = width * 10 + (*f++ - '0');
    }
    int prec = -1;
    if (*f == '.') {
      f++;
      prec = 0;
      if (*f == '*') {
        prec = va_arg(ap, int);
        f++;
      } else {
        while (*f >= '0' && *f <= '9') prec = prec * 10 + (*f++ - '0');
      }
    }
    int lng = 0; /* 0 int, 1 long, 2 long long, 3 size_t/ptrdiff/intmax */
    for (;; f++) {
      if (*f == 'l') lng = lng ? 2 : 1;
      else if (*f == 'z' || *f == 't' || *f == 'j') lng = 3;
      else if (*f == 'h') continue;
      else break;
    }
    switch (*f) {
      case 'd':
      case 'i': {
        long long v = lng == 0 ? va_arg(ap, int) : lng == 1 ? va_arg(ap, long)
                    : lng == 2 ? va_arg(ap, long long) : (long long)va_arg(ap, ssize_t);
        unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
        put_number(&s, u, v < 0, 10, false, width, left, pad, NULL);
        break;
      }
      case 'u':
      case 'x':
      case 'X': {
        unsigned long long v = lng == 0 ? va_arg(ap, unsigned) : lng == 1 ? va_arg(ap, unsigned long)
                             : lng == 2 ? va_arg(ap, unsigned long long) : (unsigned long long)va_arg(ap, size_t);
        put_number(&s, v, false, *f == 'u' ? 10 : 16, *f == 'X', width, left, pad, NULL);
        break;
      }
      case 'p': {
        uintptr_t v = (uintptr_t)va_arg(ap, void *);
        put_number(&s, v, false, 16, false, width, left, pad, "0x");
        break;
      }
      case 'c': {
        char c = (char)va_arg(ap, int);
        put_padded(&s, &c, 1, width, left, ' ');
        break;
      }
      case 's': {
        const char *str = va_arg(ap, const char *);
        if (!str) str = "(null)";
        size_t n = prec >= 0 ? strnlen(str, (size_t)prec) : strlen(str);
        put_padded(&s, str, n, width, left, ' ');
        break;
      }
      case '%':
        put(&s, '%');
        break;
      case '\0':
        f--;
        break;
      default:
        put(&s, '%');
        put(&s, *f);
    }
  }
  if (size) buf[s.len < size ? s.len : size - 1] = '\0';
  return (int)s.len;
}

int hci_snprintf(char *buf, size_t size, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = hci_vsnprintf(buf, size, fmt, ap);
  va_end(ap);
  return n;
}

/* SIGPIPE and SIGXFSZ are blocked around every write: a stream whose reader
 * went away (stderr piped into `head`) gives EPIPE, a file past the
 * program's RLIMIT_FSIZE gives EFBIG; neither kills the program (SIGXFSZ
 * would end it with a core dump, status 153, for a report it never wrote).
 * The signal that write raised is then taken back, unless one was already
 * pending (the program's), so the program's disposition, mask and pending
 * signals are as they were.  Raw system calls: write() and sigtimedwait()
 * are cancellation points, and a message (malloc_stats, a report) must not
 * become one.  SIGTTOU too: a background process writing to its terminal
 * under `stty tostop` stops its whole process group with it (a leaking
 * program run with `&` stopped at its start-up line or report, where it
 * writes nothing itself); with the signal blocked the kernel lets the write
 * through and sends nothing, so nothing is taken back. */
static void take_back(int sig) {
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  struct timespec zero = {0, 0};
  while (syscall(SYS_rt_sigtimedwait, &one, NULL, &zero, (size_t)(_NSIG / 8)) < 0 && errno == EINTR) {
  }
}

/* A non-blocking descriptor (node makes its stdio so, and the kept stderr
 * shares the program's file description) answers a full pipe with EAGAIN:
 * the report was dropped whole.  Wait until it takes more, as a blocking
 * write would, but give up after 5 s without progress (a reader that waits
 * for our exit before reading never drains it), and then for the rest of
 * the process: a report is many writes. */
static _Atomic bool write_stalled; /* no pointer: not private state */

static bool wait_writable(int fd, int *idle_ms) {
  if (atomic_load_explicit(&write_stalled, memory_order_relaxed)) return false;
  if (*idle_ms >= 5000) {
    atomic_store_explicit(&write_stalled, true, memory_order_relaxed);
    return false;
  }
  struct pollfd p = {.fd = fd, .events = POLLOUT};
  struct timespec slice = {0, 100 * 1000000L};
  long r = syscall(SYS_ppoll, &p, 1, &slice, NULL, (size_t)(_NSIG / 8));
  if (r < 0 && errno != EINTR) return false;
  *idle_ms += r > 0 ? 1 : 100; /* writable but refused again: still bounded */
  return true;
}

_Atomic unsigned hci_out_world_stopped;

/* While a check keeps the other threads stopped, a full pipe or Unix
 * socket whose reader is one of them never drains: a program whose stderr
 * is read by its own logging thread hung for good in a report longer than
 * the pipe or the socket's buffer holds.  There a write never blocks: to a
 * FIFO it goes in pieces of PIPE_BUF after POLLOUT (a piece that size never
 * blocks once the pipe has room), to a socket with MSG_DONTWAIT (a flag of
 * that call, not of the program's file); and when no room comes within 1 s
 * the rest of what is written in that stop is dropped, counted, and said
 * when the threads run again (hci_out_cut_notice).  A reader elsewhere
 * (`| less` waiting for the user) is waited for as before. */
static _Atomic unsigned stalled_in;
static _Atomic size_t dropped_bytes;
static bool room_while_stopped(int fd, const struct stat *st, unsigned stop, int *ours) {
  if (atomic_load(&stalled_in) == stop) return false;
  struct pollfd p = {.fd = fd, .events = POLLOUT};
  struct timespec zero = {0, 0}, second = {1, 0};
  if (syscall(SYS_ppoll, &p, 1, &zero, NULL, (size_t)(_NSIG / 8)) > 0) return true;
  if (*ours < 0) *ours = hci_stream_reader_is_ours(fd, st);
  if (!*ours) return true; /* a blocking write waits for that reader */
  long r;
  while ((r = syscall(SYS_ppoll, &p, 1, &second, NULL, (size_t)(_NSIG / 8))) < 0 && errno == EINTR) {
  }
  if (r > 0) return true;
  atomic_store(&stalled_in, stop);
  return false;
}

/* A socket while stopped: what fits now, or -1 with EAGAIN.  Once the reader
 * is known to be elsewhere, an ordinary (blocking) write. */
static ssize_t send_while_stopped(int fd, const char *buf, size_t len, int ours) {
  if (ours == 0) return syscall(SYS_write, fd, buf, len);
  return syscall(SYS_sendto, fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL, NULL, 0);
}

void hci_out_cut_notice(int fd) {
  size_t n = atomic_exchange(&dropped_bytes, 0);
  if (n)
    hci_fdprintf(fd, "heapcheck: %zu bytes of the report above were dropped: its stream did not drain while the "
                 "program's threads were stopped (a thread of the program reads it)\n", n);
}

int hci_write_err(int fd, const char *buf, size_t len) {
  if (fd < 0) return len ? EBADF : 0; /* no stream: no system call either */
  int saved = errno, err = 0;
  sigset_t raised, old, pending;
  sigemptyset(&raised);
  sigaddset(&raised, SIGPIPE);
  sigaddset(&raised, SIGXFSZ);
  sigaddset(&raised, SIGTTOU);
  bool blocked = pthread_sigmask(SIG_BLOCK, &raised, &old) == 0;
  bool got_pending = blocked && sigpending(&pending) == 0;
  int idle_ms = 0, eagain_ms = 0;
  unsigned stop = atomic_load(&hci_out_world_stopped);
  struct stat st;
  bool fifo = false, sock = false;
  if (stop && syscall(SYS_fstat, fd, &st) == 0) {
    fifo = S_ISFIFO(st.st_mode);
    sock = S_ISSOCK(st.st_mode);
  }
  int ours = -1; /* not asked yet */
  while (len && fd >= 0) {
    size_t piece = len;
    if (fifo || sock) {
      if (!room_while_stopped(fd, &st, stop, &ours)) {
        atomic_fetch_add(&dropped_bytes, len);
        err = EAGAIN;
        break;
      }
      if (fifo && piece > PIPE_BUF) piece = PIPE_BUF;
    }
    bool dontwait = sock && ours != 0;
    ssize_t n = sock ? send_while_stopped(fd, buf, piece, ours) : syscall(SYS_write, fd, buf, piece);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN && dontwait && ours < 0) ours = hci_stream_reader_is_ours(fd, &st);
    if (n < 0 && errno == EAGAIN && dontwait && ours == 0) continue; /* a reader elsewhere: a blocking write */
    if (n < 0 && errno == EAGAIN && dontwait) {
      /* POLLOUT said room, the send found none (a datagram peer's queue):
       * bounded as a stall, 10 ms a try. */
      struct timespec ten = {0, 10 * 1000000L};
      syscall(SYS_nanosleep, &ten, NULL);
      if ((eagain_ms += 10) < 1000) continue;
      atomic_store(&stalled_in, stop);
      atomic_fetch_add(&dropped_bytes, len);
      err = EAGAIN;
      break;
    }
    if (n < 0 && errno == EAGAIN && wait_writable(fd, &idle_ms)) continue;
    if (n < 0 && errno == ENOTSOCK) { /* not a socket after all: as any stream */
      sock = false;
      continue;
    }
    if (n <= 0) {
      err = n < 0 ? errno : ENOSPC; /* write(2) returns 0 only for len 0 or a full device */
      break;
    }
    buf += n;
    len -= (size_t)n;
    idle_ms = eagain_ms = 0;
  }
  if (got_pending && err == EPIPE && !sigismember(&pending, SIGPIPE)) take_back(SIGPIPE);
  if (got_pending && err == EFBIG && !sigismember(&pending, SIGXFSZ)) take_back(SIGXFSZ);
  if (blocked) pthread_sigmask(SIG_SETMASK, &old, NULL);
  errno = saved;
  return fd < 0 && len ? EBADF : err;
}

bool hci_write_all(int fd, const char *buf, size_t len) { return hci_write_err(fd, buf, len) == 0; }

static void vfdprintf(int fd, const char *prefix, const char *fmt, va_list ap) {
  char buf[1024];
  size_t p = prefix ? strlen(prefix) : 0;
  if (p) memcpy(buf, prefix, p);
  int n = hci_vsnprintf(buf + p, sizeof buf - p, fmt, ap);
  size_t len = p + ((size_t)n < sizeof buf - p ? (size_t)n : sizeof buf - p - 1);
  hci_write_all(fd, buf, len);
}

const char *hci_errno_text(int e) {
  switch (e) {
    case 0: return "no error";
    case EACCES: return "permission denied";
    case ENOENT: return "no such file or directory";
    case ENOTDIR: return "a path component is not a directory";
    case EISDIR: return "it is a directory";
    case EEXIST: return "the file exists";
    case ELOOP: return "too many symbolic links, or a symbolic link where none is followed";
    case EROFS: return "read-only file system";
    case ENOSPC: return "no space left on device";
    case EDQUOT: return "disk quota exceeded";
    case EFBIG: return "file too large";
    case EIO: return "input/output error";
    case ENAMETOOLONG: return "name too long";
    case EMFILE: return "too many open files in this process";
    case ENFILE: return "too many open files in the system";
    case ENOMEM: return "out of memory";
    case EPIPE: return "broken pipe";
    case EBADF: return "bad file descriptor";
    case EINVAL: return "invalid argument";
    case EPERM: return "operation not permitted";
    case ENXIO: return "no such device or address";
    case ENODEV: return "no such device";
    case ETXTBSY: return "text file busy";
    case EAGAIN: return "resource temporarily unavailable";
    default: return "error";
  }
}

/* The report stream (log_stream.c), -1 when it has none (then nothing is written). */
static int diag_fd(void) { return hci_log_stream_fd(); }

bool hci_diag_write(const char *buf, size_t len) {
  int fd = diag_fd();
  return fd >= 0 && hci_write_all(fd, buf, len);
}

void hci_fdprintf(int fd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfdprintf(fd, NULL, fmt, ap);
  va_end(ap);
}

void hci_printf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfdprintf(diag_fd(), NULL, fmt, ap);
  va_end(ap);
}

/* One diagnostic line: "heapcheck: <prefix><message>". */
static void diag_line(const char *prefix, const char *fmt, va_list ap) {
  char line[1024];
  hci_vsnprintf(line, sizeof line - 1, fmt, ap);
  hci_fdprintf(diag_fd(), "heapcheck: %s%s\n", prefix, line);
}

void hci_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_line("warning: ", fmt, ap);
  va_end(ap);
}

void hci_fatal(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_line("", fmt, ap);
  va_end(ap);
  abort();
}

// ---- level-gated messages ----

int hci_log_verbose;

/* Read at every message: the program may change it (hc_set_verbosity). */
bool hci_log_on(int level) { return __atomic_load_n(&hci_log_verbose, __ATOMIC_RELAXED) >= level; }

void hci_log(int level, const char *fmt, ...) {
  if (!hci_log_on(level)) return;
  char buf[2048];
  va_list ap;
  va_start(ap, fmt);
  int n = hci_vsnprintf(buf, sizeof buf - 1, fmt, ap);
  va_end(ap);
  size_t len = n < 0 ? 0 : (size_t)n < sizeof buf - 1 ? (size_t)n : sizeof buf - 2;
  if (len == 0 || buf[len - 1] != '\n') buf[len++] = '\n';
  hci_diag_write(buf, len);
}

// EXPECT: bytes=77 objects=1
/* io_uring_workers.c - io_uring's kernel workers alive at exit: an SQPOLL
 * ring's poller (iou-sqp-N) and an io-wq worker (iou-wrk-N) blocked in a
 * forced-async read of a pipe nobody writes, beside root_thread_syscall's
 * thread, whose stack holds the only pointer to a 640-byte object.  The
 * workers are threads of the process (in /proc/self/task) that never run
 * user code: ptrace stopped them with every register zero and the check
 * failed ("the stack of thread N could not be found (sp 0x0 ...)", libuv's
 * io_uring tests).  Control: 77.  Where io_uring is refused (seccomp, the
 * io_uring_disabled sysctl) only the thread and the control remain.
 * The program is root_thread_syscall.c with start_io_workers run first. */
#include <linux/io_uring.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static void start_io_workers(void);
#define SC_BEFORE_THREAD start_io_workers
#include "root_thread_syscall.c"

static int ring_setup(unsigned flags, struct io_uring_params *p) {
  memset(p, 0, sizeof *p);
  p->flags = flags;
  p->sq_thread_idle = 60000; /* the poller stays awake through the check */
  return (int)syscall(__NR_io_uring_setup, 4, p);
}

/* One read of the pipe, forced onto an io-wq worker (IOSQE_ASYNC), where
 * it blocks: the worker lives until exit. */
static void async_read(void) {
  static char buf[8];
  struct io_uring_params p;
  int fd = ring_setup(0, &p);
  if (fd < 0) return;
  size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
  char *sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQ_RING);
  struct io_uring_sqe *sqes = mmap(NULL, p.sq_entries * sizeof *sqes, PROT_READ | PROT_WRITE,
                                   MAP_SHARED | MAP_POPULATE, fd, IORING_OFF_SQES);
  if (sq == MAP_FAILED || sqes == MAP_FAILED) return;
  unsigned *tail = (unsigned *)(sq + p.sq_off.tail), *mask = (unsigned *)(sq + p.sq_off.ring_mask);
  unsigned *array = (unsigned *)(sq + p.sq_off.array);
  unsigned t = *tail, i = t & *mask;
  memset(&sqes[i], 0, sizeof sqes[i]);
  sqes[i].opcode = IORING_OP_READ;
  sqes[i].flags = IOSQE_ASYNC;
  sqes[i].fd = fds[0];
  sqes[i].addr = (uintptr_t)buf;
  sqes[i].len = sizeof buf;
  array[i] = i;
  __atomic_store_n(tail, t + 1, __ATOMIC_RELEASE);
  syscall(__NR_io_uring_enter, fd, 1, 0, 0, NULL, 0);
}

static void start_io_workers(void) {
  struct io_uring_params p;
  (void)ring_setup(IORING_SETUP_SQPOLL, &p); /* kept open: its poller runs until exit */
  async_read();
  usleep(50 * 1000); /* the workers start */
}

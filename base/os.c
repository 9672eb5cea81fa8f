/* os.c - the OS layer: anonymous mappings, releasing pages, time, thread id,
 * taking a free signal for a handler.
 * Every wrapper preserves errno, because free() must not change it and
 * malloc() may only set it to ENOMEM. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "hc_base.h"

/* Every mapping hci_os_map made and not yet unmapped (metadata chunks,
 * checker and symbolizer buffers; heap mappings are in the pagemap): the
 * checker scans the program's own anonymous mappings as roots and must skip
 * these, which hold span starts and copies of heap addresses.  Lock-free (the
 * checker maps buffers while threads that may be inside hci_os_map are
 * stopped): a slot is claimed by CAS on lo, hi is published after it; an
 * entry with hi == 0 is empty. */
#define OS_SLOTS 8192
static struct {
  _Atomic int top;     /* slots [0, top) were used at some time */
  _Atomic int lost;    /* a mapping could not be remembered */
  /* After the counters: the first slots and top share a page (start-up writes both) */
  struct {
    _Atomic uintptr_t lo, hi;
  } slot[OS_SLOTS];
} os_reg;
HC_PRIVATE_STATE(os_reg);

static void remember(uintptr_t lo, uintptr_t hi) {
  int top = atomic_load_explicit(&os_reg.top, memory_order_acquire);
  for (int i = 0; i < OS_SLOTS; i++) {
    uintptr_t zero = 0;
    if (atomic_load_explicit(&os_reg.slot[i].lo, memory_order_relaxed) != 0) continue;
    if (!atomic_compare_exchange_strong(&os_reg.slot[i].lo, &zero, lo)) continue;
    atomic_store_explicit(&os_reg.slot[i].hi, hi, memory_order_release);
    while (top <= i && !atomic_compare_exchange_weak(&os_reg.top, &top, i + 1)) {
    }
    return;
  }
  atomic_store(&os_reg.lost, 1);
}

static void forget(uintptr_t lo, uintptr_t hi) {
  int top = atomic_load_explicit(&os_reg.top, memory_order_acquire);
  for (int i = 0; i < top; i++) {
    if (atomic_load_explicit(&os_reg.slot[i].lo, memory_order_relaxed) != lo) continue;
    if (atomic_load_explicit(&os_reg.slot[i].hi, memory_order_relaxed) != hi) {
      /* A partial unmap (not done by our callers): keep the tail remembered. */
      atomic_store_explicit(&os_reg.slot[i].lo, hi, memory_order_release);
      return;
    }
    atomic_store_explicit(&os_reg.slot[i].hi, 0, memory_order_release);
    atomic_store_explicit(&os_reg.slot[i].lo, 0, memory_order_release);
    return;
  }
}

bool hci_os_owned_next(uintptr_t addr, uintptr_t *lo, uintptr_t *hi) {
  int top = atomic_load_explicit(&os_reg.top, memory_order_acquire);
  bool found = false;
  for (int i = 0; i < top; i++) {
    uintptr_t h = atomic_load_explicit(&os_reg.slot[i].hi, memory_order_acquire);
    uintptr_t l = atomic_load_explicit(&os_reg.slot[i].lo, memory_order_relaxed);
    if (!h || !l || h <= addr) continue;
    if (!found || l < *lo) {
      *lo = l;
      *hi = h;
      found = true;
    }
  }
  return found;
}

bool hci_os_owned_complete(void) { return !atomic_load(&os_reg.lost); }

/* The system calls themselves, not the mmap/munmap symbols: the library
 * exports those to run gperftools' mmap hooks (runtime/malloc_hooks.c),
 * and a program's hook must never run under an allocator lock. */
void *hci_os_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off) {
  return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

int hci_os_munmap(void *p, size_t len) { return (int)syscall(SYS_munmap, p, len); }

static void *raw_map(size_t size) {
  int saved = errno;
  void *p = hci_os_mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  errno = saved;
  return p == MAP_FAILED ? NULL : p;
}

static void raw_unmap(void *p, size_t size) {
  int saved = errno;
  hci_os_munmap(p, size);
  errno = saved;
}

void *hci_os_map(size_t size) {
  void *p = raw_map(size);
  if (p) remember((uintptr_t)p, (uintptr_t)p + ((size + 4095) & ~(size_t)4095));
  return p;
}

/* The kernel places mappings top-down, each right below the previous one.
 * An aligned mapping keeps the *highest* aligned start of an over-sized
 * mapping, so it ends where the previous heap mapping begins and the page
 * heap can merge free runs across mappings (trimming the top would leave a
 * hole between every two of them). */
/* For the heap only (its pages are in the pagemap, not in the registry). */
void *hci_os_map_aligned(size_t size, size_t align) { return hci_os_map_near(size, align, 0); }

/* hint: where the mapping should start (the page heap's: right below its
 * lowest mapping), or 0.  The kernel places a mapping without MAP_FIXED at
 * a free hint and ignores one that is taken, so this never replaces
 * anything.  Without the hint a growth lands in the highest hole that fits
 * it, which may be one above the heap (between the libraries, ASLR's): a
 * free run there never merges with the heap's.  bench_large's 1.6 MB
 * growth landed in such a hole in some runs and not in others, and the
 * rest of the run's placements followed (docs/performance.md, "Memory,
 * eighth pass"). */
void *hci_os_map_near(size_t size, size_t align, uintptr_t hint) {
  if (hint && (hint & (align - 1)) == 0) {
    int saved = errno;
    void *p = hci_os_mmap((void *)hint, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    errno = saved;
    if (p != MAP_FAILED) {
      if (((uintptr_t)p & (align - 1)) == 0) return p; /* the hint, or an aligned place elsewhere */
      raw_unmap(p, size);
    }
  }
  if (align <= 4096) return raw_map(size);
  if (size + align < size) return NULL;
  uint8_t *p = raw_map(size);
  if (!p) return NULL;
  if (((uintptr_t)p & (align - 1)) == 0) return p;
  raw_unmap(p, size);
  p = raw_map(size + align);
  if (!p) return NULL;
  uintptr_t start = ((uintptr_t)p + align) & ~(uintptr_t)(align - 1);
  size_t head = start - (uintptr_t)p;
  size_t tail = align - head;
  if (head) raw_unmap(p, head);
  if (tail) raw_unmap((void *)(start + size), tail);
  return (void *)start;
}

/* Address space without memory: the metadata arena reserves one range at
 * its first use and commits it a chunk at a time (meta.c), so its mappings
 * do not fall between the heap's (the kernel places mappings top-down,
 * each below the last: a metadata mapping between two heap mappings keeps
 * their free runs from merging).  PROT_NONE, so the kernel's commit
 * accounting counts only what is committed (an address-space limit,
 * RLIMIT_AS, counts all of it; when it refuses, the arena maps as before);
 * remembered whole (the checker skips it as allocator memory). */
/* An anonymous mapping of size bytes with prot, not counted by the
 * kernel's commit accounting, remembered whole; NULL when refused. */
static void *map_remembered(size_t size, int prot) {
  int saved = errno;
  void *p = hci_os_mmap(NULL, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  errno = saved;
  if (p == MAP_FAILED) return NULL;
  remember((uintptr_t)p, (uintptr_t)p + ((size + 4095) & ~(size_t)4095));
  return p;
}

void *hci_os_reserve(size_t size) { return map_remembered(size, PROT_NONE); }

static bool protect(void *p, size_t size, int prot) {
  int saved = errno;
  long r = syscall(SYS_mprotect, p, size, prot);
  errno = saved;
  return r == 0;
}

bool hci_os_commit(void *p, size_t size) { return protect(p, size, PROT_READ | PROT_WRITE); }

/* Read-only: reads see zeros (the shared zero page), writes fault.  A
 * data limit (RLIMIT_DATA, `ulimit -d`) counts private writable mappings
 * only, so memory that is mostly never written (the pagemap's leaves) is
 * mapped read-only and made writable a part at a time (hci_os_commit). */
bool hci_os_commit_ro(void *p, size_t size) { return protect(p, size, PROT_READ); }

void *hci_os_map_ro(size_t size) { return map_remembered(size, PROT_READ); }

void hci_os_unreserve(void *p, size_t keep, size_t size) {
  uintptr_t lo = (uintptr_t)p, hi = lo + size, cut = lo + keep;
  if (!keep) forget(lo, hi);
  else { /* the registry's entry keeps its start: its end moves down */
    int top = atomic_load_explicit(&os_reg.top, memory_order_acquire);
    for (int i = 0; i < top; i++)
      if (atomic_load_explicit(&os_reg.slot[i].lo, memory_order_relaxed) == lo &&
          atomic_load_explicit(&os_reg.slot[i].hi, memory_order_relaxed) == hi) {
        atomic_store_explicit(&os_reg.slot[i].hi, cut, memory_order_release);
        break;
      }
  }
  raw_unmap((void *)cut, hi - cut);
}

void hci_os_unmap(void *p, size_t size) {
  forget((uintptr_t)p, (uintptr_t)p + ((size + 4095) & ~(size_t)4095));
  raw_unmap(p, size);
}

/* Released memory reads as zeros (the page heap hands it out as zeroed:
 * calloc skips its memset).  Locked pages (mlock, mlockall) refuse
 * MADV_DONTNEED (EINVAL), the range given back in part or not at all:
 * then it is zeroed by hand (hci_os_zero: locked pages are resident, and
 * written; the others given back).  Before, calloc handed out the old
 * bytes of a block freed under mlockall (254 of 256 calloc(1 MiB) after a
 * 256 MiB peak), or around one mlock()ed page of a freed buffer. */
void hci_os_release(void *p, size_t size) {
  int saved = errno;
  if (madvise(p, size, MADV_DONTNEED) != 0) hci_os_zero(p, size);
  errno = saved;
}

/* True when the 4 KiB page at p reads as zeros: stops at the first 64
 * bytes that do not (a page of data: in its first line, mostly). */
static bool page_is_zero(const void *p) {
  const uint64_t *w = p;
  for (size_t i = 0; i < 4096 / 8; i += 8)
    if (w[i] | w[i + 1] | w[i + 2] | w[i + 3] | w[i + 4] | w[i + 5] | w[i + 6] | w[i + 7]) return false;
  return true;
}

/* Zeroes [p, p + size) (4 KiB aligned) page by page the cheaper way: a
 * resident page is written (a page given back costs a page fault when it
 * is used again: 12-18 us of CPU each in this project's virtual machines,
 * against 0.3 us for the stores of 4 KiB; docs/performance.md, "session
 * 12"), a page that is not resident is given back (MADV_DONTNEED; never
 * touched, nothing to write; swapped out, its contents go too: writing it
 * would read it back in).  When mincore fails, everything is given back.
 * A resident page that reads as zeros is not written: mincore counts a
 * page the program only read (mapped to the kernel's shared zero page) as
 * resident, and writing it would make it the process's own (checker mode:
 * a 64 MiB block touched sparsely and copied by realloc, 64 MiB more RSS
 * after its free; test_sparse_rss). */
void hci_os_zero(void *p, size_t size) {
  unsigned char vec[256]; /* 1 MiB of pages per mincore */
  uintptr_t a = (uintptr_t)p, end = a + size;
  int saved = errno;
  while (a < end) {
    size_t pages = (end - a + 4095) >> 12;
    if (pages > sizeof vec) pages = sizeof vec;
    size_t len = pages << 12 < end - a ? pages << 12 : end - a;
    if (mincore((void *)a, len, vec) != 0) {
      if (madvise((void *)a, end - a, MADV_DONTNEED) != 0) memset((void *)a, 0, end - a); /* locked */
      break;
    }
    for (size_t i = 0, j; i < pages; i = j) {
      bool in = vec[i] & 1;
      for (j = i + 1; j < pages && (vec[j] & 1) == in; j++) {
      }
      uintptr_t lo = a + (i << 12), hi = a + (j << 12) < a + len ? a + (j << 12) : a + len;
      if (!in) {
        /* Not resident and locked (MCL_ONFAULT): never touched, zeros. */
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
        continue;
      }
      for (uintptr_t q = lo; q < hi; q += 4096)
        if (!page_is_zero((const void *)q)) memset((void *)q, 0, hi - q < 4096 ? hi - q : 4096);
    }
    a += len;
  }
  errno = saved;
}

/* Makes [p, p + size) resident and writable in one system call
 * (MADV_POPULATE_WRITE, Linux 5.14): for memory about to be written
 * through, which would otherwise take a page fault per page.  A kernel
 * without it leaves the faults to come. */
void hci_os_populate(void *p, size_t size) {
  int saved = errno;
#ifdef MADV_POPULATE_WRITE
  madvise(p, size, MADV_POPULATE_WRITE);
#else
  madvise(p, size, 23); /* MADV_POPULATE_WRITE: older headers, same kernel interface */
#endif
  errno = saved;
}

/* The id from /proc/thread-self ("PID/task/TID"), 0 when it cannot be
 * read.  Raw calls: no errno, safe in a signal handler. */
static __attribute__((noinline)) int tid_from_proc(void) { /* its buffer off the handler's stack: tight stacks */
  char buf[64];
  long n = hci_raw6(SYS_readlinkat, AT_FDCWD, (long)"/proc/thread-self", (long)buf, sizeof buf - 1, 0, 0);
  if (n <= 0) return 0;
  buf[n] = 0;
  const char *t = NULL;
  for (long i = 0; i + 5 <= n; i++)
    if (!memcmp(buf + i, "task/", 5)) t = buf + i + 5;
  int tid = 0;
  for (; t && *t >= '0' && *t <= '9' && tid < 100000000; t++) tid = tid * 10 + (*t - '0');
  return t && !*t ? tid : 0;
}

/* gettid, or where a seccomp filter refuses it (EPERM: every threaded exit
 * check hung, the stop's helper taking -1 for the checking thread and
 * stopping its own parent; docs/validation.md, "Session 28: adversarial
 * shapes"), /proc/thread-self; 0 when neither answers (the stop then
 * refuses: hci_world_stop).  Raw calls only. */
int hci_os_tid(void) {
  long t = hci_raw6(SYS_gettid, 0, 0, 0, 0, 0, 0);
  return t > 0 ? (int)t : tid_from_proc();
}

/* The process whose address space this is: set at start-up and in every fork
 * child (the one fork handler).  A vfork child (posix_spawn's, or an old
 * program's vfork whose exec failed and which then calls exit) runs in its
 * parent's memory with the parent's value; so does a child of a raw clone or
 * of _Fork, which run no fork handler (they are treated alike: the safe
 * side).  The kernel's pid is asked each time, never a cached one. */
static long memory_pid;
void hci_os_memory_mine(void) { memory_pid = syscall(SYS_getpid); }
bool hci_os_memory_borrowed(void) {
  if (!memory_pid || hci_os_walled) return false;
  /* getpid refused (a seccomp filter's EPERM): not known to be another
   * process - taken for one, the exit check was skipped and a leak went
   * unsaid, status 0. */
  long pid = syscall(SYS_getpid);
  return pid > 0 && pid != memory_pid;
}

/* Set once a seccomp filter that may kill is known to be in force
 * (checker/seccomp_watch.c, seccomp_probe.c): from then on the library's
 * exit path asks the kernel nothing it can do without (a filter listing
 * only read, write, exit, brk, mmap, munmap and futex killed the process
 * at the getpid above).  A vfork child of such a process is then taken
 * for its parent. */
_Atomic bool hci_os_walled;

/* glibc >= 2.35 registers a struct rseq per thread at the thread pointer
 * plus __rseq_offset; the kernel keeps its cpu_id (offset 4) current, -1
 * while unregistered.  Weak: other libcs (or an older glibc) give 0. */
extern const ptrdiff_t __rseq_offset __attribute__((weak));
extern const unsigned int __rseq_size __attribute__((weak));

unsigned hci_os_cpu(void) {
  if (!&__rseq_size || !&__rseq_offset || __rseq_size < 8) return 0;
  const volatile int32_t *id = (const volatile int32_t *)((char *)__builtin_thread_pointer() + __rseq_offset + 4);
  int32_t c = *id;
  return c >= 0 ? (unsigned)c + 1 : 0;
}

void hci_os_exit_now(int status) {
  for (;;) syscall(SYS_exit_group, status);
}

uint64_t hci_os_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* For sample timestamps (ages in reports): no TSC read, a few ns. */
uint64_t hci_os_now_coarse_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void hci_os_backoff(unsigned *round) {
  unsigned r = (*round)++;
  if (r < 128) {
    hci_raw6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
    return;
  }
  long ns = r - 128 < 10 ? 1000l << (r - 128) : 1000000l; /* 1 us doubling, up to 1 ms */
  struct timespec ts = {0, ns};
  hci_raw6(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
}

/* ---- fault-proof reads of memory we do not own ---- */

/* True when the 8 bytes at addr can be read.  rt_sigprocmask copies the new
 * set from user memory before it looks at `how`: with an invalid how it
 * fails with EFAULT on unreadable memory and EINVAL otherwise, changing
 * nothing.  Any other answer (a seccomp filter) counts as unreadable. */
bool hci_os_probe(uintptr_t addr) {
  if (addr < 4096) return false;
  int saved = errno;
  long r = syscall(SYS_rt_sigprocmask, ~0L, (void *)addr, (void *)0, (size_t)8);
  bool ok = r == -1 && errno == EINVAL;
  errno = saved;
  return ok;
}

int hci_os_open_proc(const char *name, int flags) {
  char path[64];
  int saved = errno, fd = -1;
  for (int i = 0; i < 2; i++) {
    if (hci_snprintf(path, sizeof path, "%s/%s", i ? "/proc/self" : "/proc/thread-self", name) >= (int)sizeof path)
      break;
    do fd = (int)syscall(SYS_openat, AT_FDCWD, path, flags | O_CLOEXEC, 0);
    while (fd < 0 && errno == EINTR);
    if (fd >= 0 || errno != ENOENT) break; /* ENOENT: no /proc/thread-self (Linux < 3.17) */
  }
  errno = saved;
  return fd < 0 ? -1 : fd;
}

/* getdents64's record (the kernel's layout; glibc's struct dirent64 is
 * the same, but this file uses no libc to read it). */
struct dirent64_raw {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

int hci_os_dir_numbers(int fd, int (*fn)(void *ctx, int number, const char *name), void *ctx) {
  if (hci_raw6(SYS_lseek, fd, 0, SEEK_SET, 0, 0, 0) < 0) return -1;
  char buf[4096] __attribute__((aligned(8)));
  for (;;) {
    long n = hci_raw6(SYS_getdents64, fd, (long)buf, sizeof buf, 0, 0, 0);
    if (n == -EINTR) continue;
    if (n < 0) return -1;
    if (n == 0) return 0;
    for (long off = 0; off < n;) {
      const struct dirent64_raw *d = (const struct dirent64_raw *)(buf + off);
      off += d->d_reclen;
      int number = 0;
      const char *c = d->d_name;
      if (*c < '0' || *c > '9') continue;
      while (*c >= '0' && *c <= '9') number = number * 10 + (*c++ - '0');
      if (*c) continue;
      int r = fn(ctx, number, d->d_name);
      if (r) return r;
    }
  }
}

/* 0 unknown, 1 process_vm_readv works, -1 refused (seccomp, old kernel). */
static _Atomic int vm_readv_ok;
void hci_os_read_no_vm_readv(void) { atomic_store(&vm_readv_ok, -1); }

size_t hci_os_read(void *dst, uintptr_t src, size_t n) {
  if (n == 0) return 0;
  if (src < 4096 || src + n < src) return 0;
  int saved = errno;
  size_t done = 0;
  if (atomic_load_explicit(&vm_readv_ok, memory_order_relaxed) >= 0) {
    /* The calling thread's id, not the process's: process_vm_readv looks
     * the task up by id and reads through its mm, and once the main thread
     * has called pthread_exit the group leader (getpid) has none: every
     * read failed with ESRCH, a module's headers read that way counted as
     * unusable and the stacks through it ended at their first frame
     * (docs/validation.md, "Session 20: the pexit flake"). */
    pid_t pid = (pid_t)hci_os_tid();
    while (done < n) {
      struct iovec l = {(char *)dst + done, n - done}, r = {(void *)(src + done), n - done};
      ssize_t got = process_vm_readv(pid, &l, 1, &r, 1, 0);
      if (got > 0) {
        atomic_store_explicit(&vm_readv_ok, 1, memory_order_relaxed);
        done += (size_t)got;
        continue;
      }
      if (got < 0 && (errno == ENOSYS || errno == EPERM) &&
          atomic_load_explicit(&vm_readv_ok, memory_order_relaxed) == 0) {
        atomic_store_explicit(&vm_readv_ok, -1, memory_order_relaxed);
        break; /* fall back to probing below */
      }
      errno = saved;
      return done; /* the page at src + done is not readable */
    }
    if (done == n) {
      errno = saved;
      return n;
    }
  }
  /* Probe each page, then copy it: a mapping change between the two by a
   * thread that runs meanwhile can still fault; nothing better is left. */
  while (done < n) {
    uintptr_t a = src + done;
    size_t chunk = (size_t)(((a | 4095) + 1) - a);
    if (chunk > n - done) chunk = n - done;
    if (!hci_os_probe(a & ~(uintptr_t)4095)) break;
    memcpy((char *)dst + done, (const void *)a, chunk);
    done += chunk;
  }
  errno = saved;
  return done;
}

/* Signals a thread holds back while it may hold allocator locks a handler
 * of its own would wait for (alloc.c, a sampled allocation or free):
 * every signal but those that cannot wait (SIGKILL, SIGSTOP, the faults,
 * which the kernel delivers even blocked, by killing), glibc's two
 * internal ones (cancellation, setxid: their handlers allocate nothing)
 * and the checker's stop signal (hci_os_hold_not, its handler allocates
 * nothing and a thread waiting for a lock the checker holds must take it).
 * Bit n - 1 of a kernel signal set is signal n. */
static _Atomic uint64_t not_held = (1ull << (SIGKILL - 1)) | (1ull << (SIGSTOP - 1)) | (1ull << (SIGSEGV - 1)) |
                                   (1ull << (SIGBUS - 1)) | (1ull << (SIGFPE - 1)) | (1ull << (SIGILL - 1)) |
                                   (1ull << (SIGTRAP - 1)) | (1ull << (SIGSYS - 1)) | (1ull << 31) | (1ull << 32);

void hci_os_hold_not(int sig) {
  if (sig > 0 && sig <= 64) atomic_fetch_or(&not_held, 1ull << (sig - 1));
}

uint64_t hci_os_hold_signals(void) {
  uint64_t set = ~atomic_load_explicit(&not_held, memory_order_relaxed), old = 0;
  hci_raw6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&set, (long)&old, 8, 0, 0);
  return old;
}

void hci_os_release_signals(uint64_t old) { hci_raw6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8, 0, 0); }

bool hci_os_claim_signal(int sig, void (*handler)(int)) {
  struct sigaction old, sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(sig, NULL, &old) != 0 || (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)) return false;
  sigaction(sig, &sa, NULL);
  return true;
}

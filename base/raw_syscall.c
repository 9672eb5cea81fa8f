/* raw_syscall.c - system calls without libc: the instruction itself, the
 * kernel's result as it is (-errno on failure), errno untouched.  The
 * stop-the-world helper task runs on another thread's TLS and may use
 * nothing else (checker/stop_ptrace.c); the libc interposers return
 * through hci_raw_libc_result.  The one architecture-specific file of the
 * system-call layer. */
#include <errno.h>

#include "hc_base.h"

long hci_raw6(long n, long a, long b, long c, long d, long e, long f) {
#if defined(__x86_64__)
  long ret;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  register long r9 __asm__("r9") = f;
  __asm__ __volatile__("syscall"
                       : "=a"(ret)
                       : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                       : "rcx", "r11", "memory");
  return ret;
#elif defined(__aarch64__)
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  register long x5 __asm__("x5") = f;
  __asm__ __volatile__("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory", "cc");
  return x0;
#else
#error "raw_syscall.c: system calls of this architecture"
#endif
}
long hci_raw_libc_result(long r) {
  if (r < 0 && r > -4096) {
    errno = (int)-r;
    return -1;
  }
  return r;
}


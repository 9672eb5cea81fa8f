/* test_chain_links.c - a link overwritten in a chain that goes back to its
 * spans is caught (issue 11, "Hardening"; allocator/free_list.h).
 *
 * return_chain (central.c) follows a link into the same span with one
 * range-and-alignment test instead of hc_fl_next's check; every other
 * value must still end the run and be checked.  Each case, in a child:
 * 40 objects of one class taken from central and linked into a chain, the
 * link of the sixth one overwritten, the chain inserted and central
 * drained (every chain back to its spans).  The child must die of SIGABRT
 * with the "corrupted free list" message; the clean case must not.
 * Cases: a global's address; zero; a value made with the key that decodes
 * into the same span but not to an object start (8 bytes into the next
 * object: only the alignment part of the test catches it).  In a
 * -Dhardening=disabled build (a measurement switch) there is nothing to
 * catch: exit 77 (SKIP). */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc_inline.h"
#include "hc_check.h"

static long global_target[4];

/* The child: returns only for the clean case. */
static void run_case(int mode) {
  unsigned cls = 5;
  void *v[64];
  uint32_t n = 0;
  while (n < 40) {
    hc_chain_t ch;
    if (!hci_central_remove(cls, 40 - n, &ch, NULL)) _exit(3);
    for (void *p = ch.head; p && n < 64; p = hc_fl_next(p, 0)) v[n++] = p;
  }
  for (uint32_t i = 0; i < n; i++) hc_fl_link(v[i], i + 1 < n ? v[i + 1] : NULL);
  uintptr_t *link = (uintptr_t *)v[5];
  switch (mode) {
    case 1: *link = (uintptr_t)&global_target; break;
    case 2: *link = 0; break;
    case 3: *link = ((uintptr_t)v[5] + hci_classes[cls].size + 8) ^ hci_fl.key; break;
  }
  hc_chain_t ch = {v[0], v[n - 1], n};
  hci_central_insert(cls, &ch);
  hci_central_drain();
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  if (!HC_HARDEN_LINKS) {
    printf("SKIP: built with plain links (-Dhardening=disabled or -Dhardening_parts=marks)\n");
    return 77;
  }
  hci_ensure_init();
  static const char *const names[] = {"clean", "a global's address", "zero", "in the span, not an object start"};
  for (int mode = 0; mode < 4; mode++) {
    int pfd[2];
    CHECK(pipe(pfd) == 0, "pipe");
    pid_t pid = fork();
    if (pid == 0) {
      dup2(pfd[1], 2);
      run_case(mode);
      _exit(0);
    }
    close(pfd[1]);
    char buf[1024];
    size_t len = 0;
    ssize_t r;
    while (len < sizeof buf - 1 && (r = read(pfd[0], buf + len, sizeof buf - 1 - len)) > 0) len += (size_t)r;
    buf[len] = 0;
    close(pfd[0]);
    int st;
    waitpid(pid, &st, 0);
    if (mode == 0) {
      CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "clean: status %d, stderr: %s", st, buf);
    } else {
      CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "%s: not caught (status %d)", names[mode], st);
      CHECK(strstr(buf, "corrupted free list") != NULL, "%s: message: %s", names[mode], buf);
    }
    printf("%s: %s", names[mode], mode ? buf : "ok\n");
  }
  return failures != 0;
}

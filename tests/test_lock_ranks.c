/* test_lock_ranks.c - the lock order is asserted (built with
 * -Dlock_ranks=enabled): a unit test of base/ alone.  Locks taken in rank
 * order, central lists nested in any number, a trylock against the order
 * and a reset after "fork" pass; taking a lower rank while holding a higher
 * one ends the process with the message naming both locks, which the
 * parent reads from the child's stderr. */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hc_base.h"
#include "hc_check.h"

static hci_lock_t checker = HCI_LOCK_INIT(HC_RANK_CHECKER);
static hci_lock_t symbolizer = HCI_LOCK_INIT(HC_RANK_SYMBOLIZER);
static hci_lock_t page_heap = HCI_LOCK_INIT(HC_RANK_PAGE_HEAP);
static hci_lock_t central[3] = {HCI_LOCK_INIT(HC_RANK_CENTRAL), HCI_LOCK_INIT(HC_RANK_CENTRAL),
                                HCI_LOCK_INIT(HC_RANK_CENTRAL)};
static hci_lock_t meta = HCI_LOCK_INIT(HC_RANK_META);
static hci_lock_t unranked;

/* Runs fn in a child; returns its stderr (static buffer) and its status. */
static const char *in_child(void (*fn)(void), int *status) {
  static char buf[4096];
  int p[2];
  if (pipe(p) != 0) return "";
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[1], 2);
    fn();
    _exit(0);
  }
  close(p[1]);
  size_t n = 0;
  ssize_t r;
  while (n < sizeof buf - 1 && (r = read(p[0], buf + n, sizeof buf - 1 - n)) > 0) n += (size_t)r;
  buf[n] = 0;
  close(p[0]);
  waitpid(pid, status, 0);
  return buf;
}

/* Whether err contains the message fmt formats. */
static bool has(const char *err, const char *fmt, int a, int b) {
  char want[256];
  snprintf(want, sizeof want, fmt, a, b);
  return strstr(err, want) != NULL;
}

static void in_order(void) {
  hci_lock(&checker);
  hci_lock(&symbolizer);
  hci_lock(&unranked);
  hci_lock(&page_heap);
  for (int i = 0; i < 3; i++) hci_lock(&central[i]);
  hci_lock(&meta);
  hci_unlock(&meta);
  for (int i = 3; i-- > 0;) hci_unlock(&central[i]);
  hci_unlock(&page_heap);
  hci_unlock(&unranked);
  /* Released out of order: what is still held is what counts. */
  hci_unlock(&checker);
  hci_lock(&page_heap);
  hci_unlock(&page_heap);
  hci_unlock(&symbolizer);
  /* A trylock against the order is not judged (it cannot deadlock). */
  hci_lock(&meta);
  if (hci_trylock(&checker)) hci_unlock(&checker);
  hci_unlock(&meta);
  /* A fork child resets what the prepare handler took. */
  hci_lock(&meta);
  hci_lock_reset(&meta);
  hci_lock(&checker);
  hci_unlock(&checker);
}

static void against_order(void) {
  hci_lock(&page_heap);
  hci_lock(&symbolizer);
}

static void same_rank_twice(void) {
  hci_lock(&symbolizer);
  hci_lock(&symbolizer); /* would deadlock: a rank other than central may not nest */
}

static void central_then_page_heap(void) {
  hci_lock(&central[0]);
  hci_lock(&central[1]);
  hci_unlock(&central[1]);
  hci_lock(&page_heap); /* central[0] is still held */
}

int main(void) {
  int st;
  const char *err = in_child(in_order, &st);
  CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && !*err, "locks in rank order: status %#x, stderr %s", st, err);

  err = in_child(against_order, &st);
  CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT, "page heap then symbolizer: status %#x", st);
  CHECK(has(err, "lock order violated: taking the symbolizer lock (rank %d) while holding the page heap lock (rank %d)",
            HC_RANK_SYMBOLIZER, HC_RANK_PAGE_HEAP), "message: %s", err);

  err = in_child(same_rank_twice, &st);
  CHECK(WIFSIGNALED(st) && has(err, "taking the symbolizer lock (rank %d) while holding the symbolizer lock (rank %d)",
                                HC_RANK_SYMBOLIZER, HC_RANK_SYMBOLIZER),
        "symbolizer twice: status %#x, %s", st, err);

  err = in_child(central_then_page_heap, &st);
  CHECK(WIFSIGNALED(st) && has(err, "taking the page heap lock (rank %d) while holding the central list lock (rank %d)",
                                HC_RANK_PAGE_HEAP, HC_RANK_CENTRAL),
        "central then page heap: status %#x, %s", st, err);
  return failures != 0;
}

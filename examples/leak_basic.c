/* leak_basic.c - the smallest whole-program leak check.
 *
 * Three objects stay allocated at exit:
 *   - a config string a global points to: reachable, not a leak;
 *   - the head of a two-node list whose last pointer was dropped: a DIRECT
 *     leak (nothing points to it any more);
 *   - the list's second node: only the leaked head points to it, so it is
 *     an INDIRECT leak (it goes away when the head's leak is fixed).
 *
 * Build:  cc -g -fno-omit-frame-pointer leak_basic.c -o leak_basic -lheapcheck
 * Run:    HEAPCHECK=normal ./leak_basic      (or: heapcheck ./leak_basic)
 * The report names both leaks with their allocation stacks, and the exit
 * status is 1.  Without HEAPCHECK the program runs normally and exits 0.
 */
#include <heapcheck.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node {
  struct node *next;
  char name[56];
};

/* Reachable from a global: never reported.  (Not static: a static that only
 * main uses may be optimised into a local, and then it is a real leak.) */
char *config;

/* A volatile sink stops the compiler from removing allocations it could
 * prove are never used (it may do so for malloc). */
static void *volatile sink;

static struct node *new_node(const char *name) {
  struct node *n = calloc(1, sizeof *n);
  if (n) snprintf(n->name, sizeof n->name, "%s", name);
  return n;
}

__attribute__((noinline)) static void build_and_forget_list(void) {
  struct node *head = new_node("head");      /* direct leak: 64 bytes */
  if (head) head->next = new_node("tail");   /* indirect leak: 64 bytes */
  sink = head;
  sink = NULL;                               /* the last pointer to the list is gone */
}

/* The checker is conservative: a stale copy of a pointer left in dead stack
 * memory (a returned function's frame, later the uninitialised slot of some
 * frame that is live at exit) keeps its object alive.  Real programs rarely
 * leak right before they exit; this small one overwrites that memory. */
__attribute__((noinline)) static void scrub_stack(void) {
  volatile char buf[8192];
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = 0;
}

int main(void) {
  config = strdup("verbose=1 color=auto");
  build_and_forget_list();
  scrub_stack();
  printf("leak_basic: checker %s; config \"%s\"\n", hc_is_active() ? "on" : "off", config);
  return 0;
}

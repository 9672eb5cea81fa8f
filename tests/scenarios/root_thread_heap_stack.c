// EXPECT: bytes=77 objects=1
/* root_thread_heap_stack.c - a thread whose stack is a malloc'ed block (a
 * global keeps it) holds the only pointer to a 640-byte object on that
 * stack while blocked at exit.  Control: 77. */
#include "sc_thread.h"

#define STACK_BYTES (256 * 1024)

void *thread_stack; /* external: the stack block itself is reachable */

static SC_NOINLINE void alloc_into(void *volatile *slot) { *slot = malloc(640); }

static void *worker(void *arg) {
  (void)arg;
  void *volatile keep = NULL;
  alloc_into(&keep);
  sc_signal_ready();
  sc_block_forever();
  return keep;
}

int main(void) {
  thread_stack = calloc(1, STACK_BYTES);
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstack(&a, thread_stack, STACK_BYTES);
  pthread_t t;
  if (pthread_create(&t, &a, worker, NULL) != 0) return 2;
  sc_wait_ready(1);
  sc_leak(77);
  sc_end();
  return 0;
}

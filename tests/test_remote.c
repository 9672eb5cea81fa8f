/* test_remote.c - remote frees (allocator/remote.c): an object of a small
 * class (<= HC_REMOTE_SIZE_MAX) freed by a thread other than its span's
 * owner goes back to the owner, not into the freeing thread's cache.
 *
 *  - owner: objects main allocated, freed by another thread, are not
 *    handed out again to that thread (its next mallocs of the class come
 *    from its own spans), sit in its batch, reach main's inbox when the
 *    batch is flushed, and main's next refills give every one of them
 *    back to main;
 *  - stress: threads swap objects of mixed sizes into a shared table with
 *    an atomic exchange and free what they take out, so remote frees
 *    arrive one by one from every thread; each object carries a stamp
 *    over its whole body, checked when it is taken out (a block handed
 *    out twice or a link written into a live block breaks it);
 *    afterwards every object is back (conservation: objects of the small
 *    classes outside central are what they were before);
 *  - exit: a thread whose objects sit in another thread's batch exits;
 *    the batch is pushed after the exit and ends in central, not in the
 *    dead cache's inbox (which stays empty), and nothing is lost;
 *  - fork: children forked while threads free each other's objects
 *    allocate, free and trim, and exit 0;
 *  - count: the length a take reads from the inbox word (no walk) is the
 *    chain's length, for a few batches and for an inbox full to
 *    HC_REMOTE_INBOX_MAX, whose 65 536 objects of 16 bytes do not fit the
 *    word's 16 bits (the length saturates and the take counts by walking);
 *    the rest of such a flood goes to central, and nothing is lost.
 * In checker mode (HEAPCHECK=normal: test_remote_checker) every free is
 * slow and stays with the freeing thread: the test checks that no inbox
 * or batch ever holds an object, and the stress and fork parts run as
 * they are.
 * Double frees of objects sitting in a batch or an inbox: the
 * remote-batch and remote-inbox cases of test_hardening.sh. */
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "free_list.h"
#include "hc_internal.h"
#include "heapcheck.h"

#include "hc_check.h"

static bool checker;

/* Objects of the remote classes outside central: in caches, batches,
 * inboxes or in use. */
static size_t outside_central(void) {
  size_t n = 0;
  for (unsigned c = 1; c < HC_NUM_CLASSES && hci_classes[c].size <= HC_REMOTE_SIZE_MAX; c++)
    n += hci_central[c].nspans * hci_classes[c].objs - hci_central_free_objects(c);
  return n;
}

/* Everything this thread's cache and every inbox hold back to central. */
static void settle(void) {
  hc_tcache_t *tc = hci_tc;
  if (tc->is_real) hci_tc_flush(tc);
  hci_tc_drain_remote();
  /* Transfer chains back to their spans: a refill then carves from spans,
   * which makes the refilling cache their owner (chains keep the owner
   * of the spans they came from, maybe none). */
  hci_central_drain();
}

// ---- owner ----

#define NOWN 64
static void *own[NOWN];
static hc_tcache_t *main_tc;

static bool is_own(const void *p) {
  for (int i = 0; i < NOWN; i++)
    if (own[i] == p) return true;
  return false;
}

static void *freer(void *arg) {
  (void)arg;
  free(malloc(16)); /* a cache of its own */
  unsigned cls = hci_size_class(16);
  for (int i = 0; i < NOWN / 2; i++) free(own[i]);
  hc_tcache_t *tc = hci_tc;
  if (!checker)
    CHECK(tc->remote.batch[cls].n + hci_remote_objects(main_tc, cls) == NOWN / 2,
          "%u in this thread's batch, %zu in main's inbox, want %d together", tc->remote.batch[cls].n,
          hci_remote_objects(main_tc, cls), NOWN / 2);
  /* The freed objects are not this thread's to hand out. */
  void *mine[NOWN];
  int reused = 0;
  for (int i = 0; i < NOWN; i++) reused += is_own(mine[i] = malloc(16));
  if (!checker) CHECK(reused == 0, "%d of main's objects handed out again to the thread that freed them", reused);
  for (int i = NOWN / 2; i < NOWN; i++) free(own[i]);
  for (int i = 0; i < NOWN; i++) free(mine[i]);
  hci_remote_flush(tc); /* the batch to main's inbox */
  if (checker) {
    CHECK(hci_remote_bytes(tc) == 0 && hci_remote_bytes(main_tc) == 0,
          "checker mode: %zu bytes in this thread's batches, %zu in main's inboxes", hci_remote_bytes(tc),
          hci_remote_bytes(main_tc));
  } else {
    CHECK(tc->remote.batch[cls].n == 0 && hci_remote_objects(main_tc, cls) == NOWN,
          "after the flush: batch %u, main's inbox %zu, want 0 and %d", tc->remote.batch[cls].n,
          hci_remote_objects(main_tc, cls), NOWN);
  }
  return NULL;
}

static void test_owner(void) {
  free(malloc(16));
  settle();
  main_tc = hci_tc;
  for (int i = 0; i < NOWN; i++) own[i] = malloc(16);
  pthread_t t;
  pthread_create(&t, NULL, freer, NULL);
  pthread_join(t, NULL);
  if (checker) return;
  /* main gets every one of them back when its list runs dry */
  unsigned cls = hci_size_class(16);
  static void *got[8192];
  int back = 0, n = 0;
  while (n < 8192 && back < NOWN) back += is_own(got[n++] = malloc(16));
  CHECK(back == NOWN && hci_remote_objects(main_tc, cls) == 0,
        "main got %d of its %d objects back in %d mallocs; %zu still in its inbox", back, NOWN, n,
        hci_remote_objects(main_tc, cls));
  for (int i = 0; i < n; i++) free(got[i]);
  printf("owner: %d objects freed by another thread came back to main in %d mallocs\n", back, n);
}

// ---- tags ----

/* The free fast path's owner test is one AND of the page's tag with ~ours
 * (alloc_inline.h): right only if no tag has its bits inside another's,
 * which words of exactly 8 bits set of 16 give (hci_owner_tag). */
static void test_tags(void) {
  CHECK(hci_owner_tag(NULL) == 0, "the tag of no owner is %#x, want 0", hci_owner_tag(NULL));
  static uint16_t seen[1u << 16];
  int distinct = 0;
  for (uintptr_t i = 1; i <= 40000; i++) {
    uint16_t t = hci_owner_tag((void *)(i * 4096 + 0x7f0000000000u));
    if (__builtin_popcount(t) != 8) {
      CHECK(0, "owner %#lx: tag %#x has %d bits set, want 8", (unsigned long)i, t, __builtin_popcount(t));
      return;
    }
    distinct += seen[t]++ == 0;
  }
  /* 40000 owners over 12870 words: nearly every word is used */
  CHECK(distinct > 12000, "40000 owners got %d distinct tags of 12870", distinct);
  CHECK(hci_tc_free(main_tc)->otag == hci_owner_tag(main_tc) && hci_tc_free(main_tc)->notag == (uint16_t)~hci_owner_tag(main_tc),
        "main's cache: otag %#x notag %#lx", hci_tc_free(main_tc)->otag, (unsigned long)hci_tc_free(main_tc)->notag);
  printf("tags: 40000 owners, %d distinct tags, each of 8 bits\n", distinct);
}

// ---- stress ----

#define SLOTS 2048
#define STEPS 150000
static _Atomic(uint64_t *) table[SLOTS];
static atomic_int stop_stress;

/* An object of n bytes (n >= 8) stamped with v in every word. */
static uint64_t *stamped(size_t n, uint64_t v) {
  uint64_t *p = malloc(n);
  if (!p) return NULL;
  p[0] = n;
  for (size_t i = 1; i < n / 8; i++) p[i] = v;
  return p;
}

static bool stamp_ok(const uint64_t *p) {
  size_t n = p[0];
  if (n < 8 || n > 512) return false;
  for (size_t i = 2; i < n / 8; i++)
    if (p[i] != p[1]) return false;
  return true;
}

static atomic_int bad_stamps;

static void *stress_thread(void *arg) {
  uint64_t rng = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 7;
  long steps = (long)(uintptr_t)arg < 0 ? 0 : STEPS;
  for (long i = 0; i < steps || (steps == 0 && !atomic_load(&stop_stress)); i++) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    /* mostly the remote classes, some bigger ones (transfer chains) */
    size_t n = (rng >> 8) % 4 ? 8 + (rng >> 16) % HC_REMOTE_SIZE_MAX : 64 + (rng >> 16) % 449;
    n &= ~(size_t)7;
    uint64_t *p = stamped(n, rng);
    if (!p) {
      atomic_fetch_add(&bad_stamps, 1);
      break;
    }
    uint64_t *old = atomic_exchange(&table[(rng >> 40) % SLOTS], p);
    if (old) {
      if (!stamp_ok(old)) atomic_fetch_add(&bad_stamps, 1);
      free(old);
    }
  }
  return NULL;
}

static void clear_table(void) {
  for (int i = 0; i < SLOTS; i++) {
    uint64_t *p = atomic_exchange(&table[i], NULL);
    if (p) {
      if (!stamp_ok(p)) atomic_fetch_add(&bad_stamps, 1);
      free(p);
    }
  }
}

static void test_stress(void) {
  settle();
  size_t before = outside_central();
  enum { T = 4 };
  pthread_t t[T];
  for (int i = 0; i < T; i++) pthread_create(&t[i], NULL, stress_thread, (void *)(uintptr_t)(i + 1));
  for (int i = 0; i < T; i++) pthread_join(t[i], NULL);
  clear_table();
  settle();
  size_t after = outside_central();
  CHECK(atomic_load(&bad_stamps) == 0, "%d objects found overwritten or handed out twice", atomic_load(&bad_stamps));
  CHECK(after == before, "objects of the remote classes outside central: %zu before, %zu after (lost or doubled)",
        before, after);
  printf("stress: %d threads x %d swaps, %zu small objects outside central before and after\n", T, STEPS, after);
}

// ---- exit with remote frees pending ----

#define NEXIT 20
static void *exit_objs[NEXIT];
static hc_tcache_t *exited_tc;

static atomic_int may_exit;

static void *short_lived(void *arg) {
  (void)arg;
  for (int i = 0; i < NEXIT; i++) exit_objs[i] = malloc(32);
  __atomic_store_n(&exited_tc, hci_tc, __ATOMIC_RELEASE);
  while (!atomic_load(&may_exit)) sched_yield(); /* alive until the first frees are done */
  return NULL;
}

static void *pending_freer(void *arg) {
  pthread_t *owner = arg;
  unsigned cls = hci_size_class(32);
  free(malloc(32));
  hc_tcache_t *tc = hci_tc;
  /* the owner is alive: the first objects wait in this thread's batch */
  for (int i = 0; i < NEXIT / 2; i++) free(exit_objs[i]);
  if (!checker)
    CHECK(tc->remote.batch[cls].n == NEXIT / 2, "%u objects in the batch for the live owner, want %d",
          tc->remote.batch[cls].n, NEXIT / 2);
  atomic_store(&may_exit, 1);
  pthread_join(*owner, NULL); /* now it exits */
  hci_remote_flush(tc); /* pushed to a dead owner: to central */
  for (int i = NEXIT / 2; i < NEXIT; i++) free(exit_objs[i]); /* dead owner: stay here */
  CHECK(hci_remote_objects(exited_tc, cls) == 0 && tc->remote.batch[cls].n == 0,
        "%zu objects in the exited thread's inbox, %u in the batch", hci_remote_objects(exited_tc, cls),
        tc->remote.batch[cls].n);
  return NULL;
}

static pthread_barrier_t go;
static void *gated(void *arg) {
  pthread_barrier_wait(&go);
  return short_lived(arg);
}

static void test_exit(void) {
  settle();
  size_t before = outside_central();
  pthread_barrier_init(&go, NULL, 2);
  pthread_t owner, f;
  pthread_create(&owner, NULL, gated, NULL);
  pthread_barrier_wait(&go);
  /* wait for its objects without joining it (pending_freer joins) */
  while (!__atomic_load_n(&exited_tc, __ATOMIC_ACQUIRE)) sched_yield();
  pthread_create(&f, NULL, pending_freer, &owner);
  pthread_join(f, NULL);
  settle();
  CHECK(outside_central() == before, "after an owner exited with remote frees pending: %zu objects outside central, %zu before",
        outside_central(), before);
  printf("exit: %d objects of an exited owner, none left in its inbox\n", NEXIT);
}

// ---- fork while remote frees are in flight ----

static void test_fork(void) {
  atomic_store(&stop_stress, 0);
  enum { T = 2, FORKS = 40 };
  pthread_t t[T];
  for (int i = 0; i < T; i++) pthread_create(&t[i], NULL, stress_thread, (void *)(intptr_t)-1 - i);
  int bad = 0;
  for (int k = 0; k < FORKS; k++) {
    usleep(2000);
    pid_t pid = fork();
    if (pid == 0) {
      void *v[512];
      for (int r = 0; r < 20; r++) {
        for (int i = 0; i < 512; i++) v[i] = malloc(8 + (size_t)(i * 7) % 600);
        for (int i = 0; i < 512; i++) free(v[i]);
      }
      malloc_trim(0);
      _exit(0);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0) bad++;
  }
  atomic_store(&stop_stress, 1);
  for (int i = 0; i < T; i++) pthread_join(t[i], NULL);
  clear_table();
  CHECK(bad == 0, "%d of %d children forked during remote frees failed", bad, FORKS);
  CHECK(atomic_load(&bad_stamps) == 0, "%d objects found overwritten after the forks", atomic_load(&bad_stamps));
  printf("fork: %d children forked while 2 threads freed each other's objects\n", FORKS);
}

// ---- count ----

static void **flood;
static size_t nflood;

static void *flood_freer(void *arg) {
  (void)arg;
  free(malloc(16));
  for (size_t i = 0; i < nflood; i++) free(flood[i]);
  hci_remote_flush(hci_tc);
  return NULL;
}

/* Main allocates n objects of 16 bytes, another thread frees them all;
 * main then takes its inbox and counts the chain. */
static void count_case(size_t n) {
  unsigned cls = hci_size_class(16);
  settle();
  size_t before = outside_central();
  flood = malloc(n * sizeof *flood);
  nflood = n;
  for (size_t i = 0; i < n; i++) flood[i] = malloc(16);
  pthread_t t;
  pthread_create(&t, NULL, flood_freer, NULL);
  pthread_join(t, NULL);
  size_t pending = hci_remote_objects(hci_tc, cls);
  hc_chain_t ch;
  bool took = hci_remote_collect(hci_tc, cls, &ch);
  size_t walked = 0;
  for (void *p = took ? ch.head : NULL; p && walked <= n; p = hc_fl_next(p, 0)) walked++;
  CHECK(took && ch.n == walked && ch.n == pending && walked <= n && walked >= n / 2,
        "%zu freed: the take says %u, the chain holds %zu, the inbox counted %zu", n, took ? ch.n : 0, walked,
        pending);
  if (took) hci_central_insert(cls, &ch);
  free(flood);
  settle();
  CHECK(outside_central() == before, "after %zu remote frees: %zu objects outside central, want %zu", n,
        outside_central(), before);
  printf("count: %zu remote frees, %zu taken from the inbox by its word\n", n, walked);
}

static void test_count(void) {
  if (checker) return;
  count_case(1000);
  count_case((HC_REMOTE_INBOX_MAX / 16) + 5000);
}

int main(void) {
  free(malloc(1));
  /* No sampled objects: a sampled one has a span of its own, with no
   * owner, so its free never goes to a batch or an inbox, and the counts
   * below missed it (test_exit: 9 in the batch instead of 10, 1 run in
   * some hundreds; every run with HEAPCHECK_SAMPLE_PARAMETER=1). */
  hc_set_sample_interval(0);
  checker = hci_alloc_recording();
  printf("mode: %s\n", checker ? "checker (every free slow, no remote frees)" : "plain");
  test_owner();
  test_tags();
  test_stress();
  test_exit();
  test_fork();
  test_count();
  if (failures) return 1;
  printf("PASS (%d checks)\n", checks);
  return 0;
}

/* items.c - the small items of issue 9 point 9, each a mode (argv[1]) of a
 * program preloaded with libheapcheck; each prints "<mode>: ok" on stdout
 * and exits 0 when the item holds, else a "FAIL:" line and exit 1.
 *
 *   stats-cancel    malloc_stats() in a thread with a cancellation request
 *                   pending is not a cancellation point (glibc's is not)
 *   malloc-info     malloc_info is ours (XML with a <heapcheck> element; a
 *                   nonzero option is EINVAL) and so are __libc_mallinfo and
 *                   __libc_mallopt
 *   bad-handle      hc_check_end and friends on a wild pointer, a heap
 *                   block, NULL and a freed handle: an error, no crash
 *   profile DIR     hc_heap_profile_start(DIR/p) + dump: the file is 0600
 *   profile-fail    hc_heap_profile_start(/nonexistent/dir/p) + dump fails
 *                   with its reason, and no file is left
 *   realloc-freed   realloc of a freed block: aborts with realloc's message
 */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures;
#define FAIL(...) (failures++, printf("FAIL: " __VA_ARGS__), putchar('\n'))

static void *sym(const char *name) {
  void *p = dlsym(RTLD_DEFAULT, name);
  if (!p) {
    printf("FAIL: %s not found (is libheapcheck preloaded?)\n", name);
    exit(1);
  }
  return p;
}

static bool ours(const char *name) {
  Dl_info di;
  void *p = dlsym(RTLD_DEFAULT, name);
  return p && dladdr(p, &di) && di.dli_fname && strstr(di.dli_fname, "libheapcheck");
}

// ---- stats-cancel ----
static volatile int after_stats;
static pthread_barrier_t barrier;
static void *stats_thread(void *arg) {
  (void)arg;
  pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
  pthread_barrier_wait(&barrier); /* main cancels us now */
  pthread_barrier_wait(&barrier);
  pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL); /* deferred: acted on at a cancellation point */
  malloc_stats();
  after_stats = 1;
  pthread_testcancel();
  return NULL;
}
static void stats_cancel(void) {
  pthread_t t;
  pthread_barrier_init(&barrier, NULL, 2);
  pthread_create(&t, NULL, stats_thread, NULL);
  pthread_barrier_wait(&barrier);
  pthread_cancel(t);
  pthread_barrier_wait(&barrier);
  void *r;
  pthread_join(t, &r);
  if (r != PTHREAD_CANCELED) FAIL("the thread was not cancelled at all");
  if (!after_stats) FAIL("malloc_stats() acted on the pending cancellation (it is a cancellation point)");
}

// ---- malloc-info ----
static void info(void) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  void *keep = malloc(100);
  if (malloc_info(0, f) != 0) FAIL("malloc_info(0) failed");
  fclose(f);
  if (!strstr(buf, "<malloc version=\"1\">") || !strstr(buf, "<heapcheck in_use=\"") || !strstr(buf, "</malloc>"))
    FAIL("malloc_info wrote something else: %.300s", buf);
  free(buf);
  if (malloc_info(1, stdout) != EINVAL) FAIL("malloc_info(1) is not EINVAL");
  const char *names[] = {"malloc_info", "__libc_mallinfo", "__libc_mallopt", "mallinfo", "mallopt"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (!ours(names[i])) FAIL("%s is not libheapcheck's", names[i]);
  struct mallinfo (*li)(void) = (struct mallinfo (*)(void))sym("__libc_mallinfo");
  if (li().uordblks <= 0) FAIL("__libc_mallinfo: no bytes in use");
  int (*lo)(int, int) = (int (*)(int, int))sym("__libc_mallopt");
  if (lo(M_TRIM_THRESHOLD, 1 << 20) != 1) FAIL("__libc_mallopt did not accept");
  free(keep);
}

// ---- bad-handle ----
typedef void *(*begin_fn)(const char *);
typedef int (*end_fn)(void *, int);
typedef long (*bytes_fn)(const void *);
typedef const char *(*name_fn)(const void *);
typedef void (*free_fn)(void *);
static void bad_handle(void) {
  begin_fn begin = (begin_fn)sym("hc_check_begin");
  end_fn end = (end_fn)sym("hc_check_end");
  bytes_fn bytes = (bytes_fn)sym("hc_check_bytes_leaked");
  name_fn name = (name_fn)sym("hc_check_name");
  free_fn cfree_ = (free_fn)sym("hc_check_free");
  void *heap = malloc(64);
  memset(heap, 0xff, 64);
  void *freed = begin("freed");
  cfree_(freed);
  void *wild[] = {(void *)0x10, (void *)0x7ff0deadbee8, heap, NULL, freed, (char *)heap + 3};
  for (size_t i = 0; i < sizeof wild / sizeof wild[0]; i++) {
    int r = end(wild[i], 3);
    if (r != 1) FAIL("hc_check_end(%p) = %d", wild[i], r);
    if (bytes(wild[i]) != -1) FAIL("hc_check_bytes_leaked(%p) != -1", wild[i]);
    if (strcmp(name(wild[i]), "") != 0) FAIL("hc_check_name(%p) is not empty", wild[i]);
    cfree_(wild[i]);
  }
  free(heap);
  void *good = begin("good");
  if (end(good, 0) != 1) FAIL("a real check leaked");
  cfree_(good);
}

// ---- profile ----
static void profile(const char *dir, bool fail) {
  int (*start)(const char *) = (int (*)(const char *))sym("hc_heap_profile_start");
  int (*dump)(const char *) = (int (*)(const char *))sym("hc_heap_profile_dump");
  void (*stop)(void) = (void (*)(void))sym("hc_heap_profile_stop");
  char prefix[4096], file[4200];
  snprintf(prefix, sizeof prefix, "%s/p", dir);
  if (start(prefix) != 0) FAIL("hc_heap_profile_start(%s) failed", prefix);
  int rc = dump("test");
  snprintf(file, sizeof file, "%s.%d.0001.heap", prefix, (int)getpid());
  struct stat st;
  if (fail) {
    if (rc == 0) FAIL("the dump into %s succeeded", dir);
    if (stat(file, &st) == 0) FAIL("%s exists", file);
  } else {
    if (rc != 0) FAIL("the dump failed");
    if (stat(file, &st) != 0) FAIL("no %s", file);
    else if ((st.st_mode & 07777) != 0600) FAIL("%s has mode %04o, want 0600", file, (unsigned)(st.st_mode & 07777));
  }
  stop();
}

static void realloc_freed(void) {
  char *p = malloc(40);
  free(p);
  fflush(stdout);
  void *volatile q = realloc(p, 64);
  (void)q;
  FAIL("realloc of a freed block returned");
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  const char *m = argc > 1 ? argv[1] : "";
  if (strcmp(m, "stats-cancel") == 0) stats_cancel();
  else if (strcmp(m, "malloc-info") == 0) info();
  else if (strcmp(m, "bad-handle") == 0) bad_handle();
  else if (strcmp(m, "profile") == 0) profile(argc > 2 ? argv[2] : ".", false);
  else if (strcmp(m, "profile-fail") == 0) profile("/nonexistent/dir", true);
  else if (strcmp(m, "realloc-freed") == 0) realloc_freed();
  else return 2;
  printf("%s: %s\n", m, failures ? "FAILED" : "ok");
  return failures ? 1 : 0;
}

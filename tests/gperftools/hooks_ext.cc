// hooks_ext.cc - a gperftools user's program for the parts of the API that
// reach into the allocator: MallocHook (new/delete hooks from every entry
// point, the mmap/mremap/munmap/sbrk hooks, slots, the singular Set*Hook),
// nallocx, the writable properties (thread-cache budget, aggressive
// decommit, heap limit), ReleaseToSystem's accounting, Ranges and
// SetSystemAllocator.  Compiled against include/ only, linked with
// -lheapcheck alone.  Exits 0 when every check holds.
#include <gperftools/heap-checker.h>
#include <gperftools/malloc_extension.h>
#include <gperftools/stacktrace.h>
#include <gperftools/malloc_hook.h>
#include <gperftools/malloc_hook_c.h>
#include <gperftools/nallocx.h>
#include <gperftools/tcmalloc.h>
#include <google/malloc_hook.h>
#include <google/malloc_hook_c.h>
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <new>
#include <string>

#include "../hc_check.h"
#define EXPECT(c) CHECK((c), "expected")

static const int MB = 1 << 20;
static void *volatile sink;
/* malloc and free, kept (a compiler may drop a plain free(malloc(n))) */
static void churn(size_t n) {
  sink = malloc(n);
  free(sink);
}
static volatile int news, deletes, mmaps, munmaps, mremaps, sbrks, premmaps;
static const void *volatile last_new;
static volatile size_t last_size;
static void on_new(const void *p, size_t n) {
  news++;
  last_new = p;
  last_size = n;
}
static void on_delete(const void *) { deletes++; }
static void on_new2(const void *, size_t) { news += 100; }
static void on_premmap(const void *, size_t, int, int, int, off_t) { premmaps++; }
static void on_mmap(const void *, const void *, size_t, int, int, int, off_t) { mmaps++; }
static void on_munmap(const void *, size_t) { munmaps++; }
static void on_mremap(const void *, const void *, size_t, size_t, int, const void *) { mremaps++; }
static void on_sbrk(const void *, ptrdiff_t) { sbrks++; }

// Each allocation function runs the new hook once with its size, each
// free the delete hook once.
#define ONE_NEW(expr, n)                                   \
  do {                                                     \
    int before = news;                                     \
    void *p_ = (expr);                                     \
    EXPECT(news == before + 1 && last_new == p_);          \
    EXPECT(last_size == (size_t)(n));                      \
    (void)p_;                                              \
  } while (0)

static void *thread_alloc(void *) {
  int before = news;
  churn(24);
  return (void *)(intptr_t)(news - before);
}

static void test_hooks() {
  EXPECT(!MallocHook::AddNewHook(NULL));
  EXPECT(MallocHook::AddNewHook(&on_new));
  EXPECT(MallocHook::AddDeleteHook(&on_delete));
  void *p;
  ONE_NEW(p = malloc(10), 10);
  int d = deletes;
  free(p);
  EXPECT(deletes == d + 1);
  ONE_NEW(p = calloc(3, 7), 21);
  ONE_NEW(p = realloc(p, 30000), 30000); /* moves: new hook, then delete of the old block */
  free(p);
  ONE_NEW(p = memalign(64, 50), 50);
  free(p);
  EXPECT(posix_memalign(&p, 32, 40) == 0);
  free(p);
  ONE_NEW(p = valloc(60), 60);
  free(p);
  ONE_NEW(p = tc_malloc(70), 70);
  tc_free(p);
  ONE_NEW(p = new char[100], 100);
  d = deletes;
  delete[] static_cast<char *>(p);
  EXPECT(deletes == d + 1);
  ONE_NEW(p = new (std::nothrow) char, 1);
  delete static_cast<char *>(p);
  ONE_NEW(p = malloc(3 * MB), 3 * MB); /* a large object too */
  free(p);
  // Another thread sees the hooks at once (its cache was made after).
  pthread_t t;
  void *r = NULL;
  pthread_create(&t, NULL, thread_alloc, NULL);
  pthread_join(t, &r);
  EXPECT((intptr_t)r == 1);
  // A second hook runs next to the first; the singular one too.
  EXPECT(MallocHook::AddNewHook(&on_new2));
  int before = news;
  churn(5);
  EXPECT(news == before + 101);
  EXPECT(MallocHook::RemoveNewHook(&on_new2));
  EXPECT(!MallocHook::RemoveNewHook(&on_new2));
  EXPECT(MallocHook::SetNewHook(&on_new2) == NULL);
  EXPECT(MallocHook::GetNewHook() == &on_new2);
  before = news;
  churn(5);
  EXPECT(news == before + 101);
  EXPECT(MallocHook_SetNewHook(NULL) == &on_new2);
  // Seven slots, as gperftools.
  int added = 0;
  while (added < 10 && MallocHook::AddNewHook(&on_new2)) added++;
  EXPECT(added == 6); /* on_new holds the seventh */
  for (int i = 0; i < added; i++) EXPECT(MallocHook::RemoveNewHook(&on_new2));
  EXPECT(MallocHook::RemoveNewHook(&on_new));
  EXPECT(MallocHook::RemoveDeleteHook(&on_delete));
  before = news;
  d = deletes;
  churn(10);
  EXPECT(news == before && deletes == d);
  // The memory calls.
  EXPECT(MallocHook::AddPreMmapHook(&on_premmap));
  EXPECT(MallocHook::AddMmapHook(&on_mmap));
  EXPECT(MallocHook::AddMunmapHook(&on_munmap));
  EXPECT(MallocHook::AddMremapHook(&on_mremap));
  EXPECT(MallocHook::AddSbrkHook(&on_sbrk));
  void *m = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT(m != MAP_FAILED && mmaps == 1 && premmaps == 1);
  m = mremap(m, 4 * 4096, 2 * 4096, 0);
  EXPECT(m != MAP_FAILED && mremaps == 1);
  EXPECT(munmap(m, 2 * 4096) == 0 && munmaps == 1);
  EXPECT(mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 1) == MAP_FAILED); /* unaligned offset */
  int mm = mmaps;
  churn(64 * MB); /* heapcheck's own mappings run no hook */
  EXPECT(mmaps == mm);
  void *b = sbrk(4096);
  EXPECT(b != (void *)-1 && sbrks == 1);
  sbrk(-4096);
  sbrk(0);
  EXPECT(sbrks == 2); /* no hook for a query */
  MallocHook::RemovePreMmapHook(&on_premmap);
  MallocHook::RemoveMmapHook(&on_mmap);
  MallocHook::RemoveMunmapHook(&on_munmap);
  MallocHook::RemoveMremapHook(&on_mremap);
  MallocHook::RemoveSbrkHook(&on_sbrk);
}

static void test_nallocx() {
  /* tcmalloc's contract, checker mode included (gperftools'
   * tcmalloc_unittest under HEAPCHECK=normal): nallocx is the usable size
   * GetAllocatedSize then gives, a multiple of the alignment.  In checker
   * mode a block takes a byte more than asked, so nallocx(n) > n. */
  const char *hc = getenv("HEAPCHECK");
  bool checker = hc && *hc;
  EXPECT(nallocx(99, 0) > 99);
  for (size_t size = 0; size <= (2 << 20); size += 4093) {
    void *p = malloc(size);
    EXPECT(nallocx(size, 0) >= size + checker && nallocx(size, 0) == MallocExtension::instance()->GetAllocatedSize(p));
    free(p);
    for (int lg = 0; lg < 14; lg += 3) {
      p = tc_memalign((size_t)1 << lg, size);
      size_t n = tc_nallocx(size, MALLOCX_LG_ALIGN(lg));
      EXPECT(n >= size + checker && n % ((size_t)1 << lg) == 0 && n == MallocExtension::instance()->GetAllocatedSize(p));
      free(p);
    }
  }
}

/* The bytes GetAllocatedSize and tc_malloc_size give are the block's, in
 * checker mode too: a pointer kept in the last word of them keeps its
 * target alive, and realloc copies it.  (Before they are asked for,
 * malloc_usable_size gives the requested size in checker mode, glibc's
 * MALLOC_CHECK_ and LeakSanitizer's answer: test_sizes.) */
static void *volatile tail_holders[5];
static size_t tail_offsets[5];
static void test_usable_tail() {
  const char *hc = getenv("HEAPCHECK");
  bool checker = hc && *hc;
  static const size_t sizes[5] = {1, 99, 4096, 20000, 300000};
  for (int i = 0; i < 5; i++) {
    char *p = (char *)malloc(sizes[i]);
    size_t n = i % 2 ? tc_malloc_size(p) : MallocExtension::instance()->GetAllocatedSize(p);
    EXPECT(n == nallocx(sizes[i], 0) && n == MallocExtension::instance()->GetAllocatedSize(p) && n == tc_malloc_size(p));
    EXPECT(malloc_usable_size(p) == n); /* the block is that size now */
    size_t last = tail_offsets[i] = (n - sizeof(void *)) & ~(sizeof(void *) - 1);
    void *child = malloc(24);
    *(void **)(p + last) = child;
    if (i == 3) {
      p = (char *)realloc(p, n + 5000);
      EXPECT(*(void **)(p + last) == child);
    }
    tail_holders[i] = p;
  }
  if (checker) EXPECT(HeapLeakChecker::NoGlobalLeaks());
  for (int i = 0; i < 5; i++) {
    char *p = (char *)tail_holders[i];
    free(*(void **)(p + tail_offsets[i]));
    free(p);
  }
}

static size_t prop(const char *name) {
  size_t v = 0;
  EXPECT(MallocExtension::instance()->GetNumericProperty(name, &v));
  return v;
}

struct RangeFind {
  uintptr_t p;
  base::MallocRange::Type type;
  size_t len;
  int found;
};
static void on_range(void *arg, const base::MallocRange *r) {
  RangeFind *f = static_cast<RangeFind *>(arg);
  if (f->p >= r->address && f->p < r->address + r->length) {
    f->found++;
    f->type = r->type;
    f->len = r->length;
  }
}
static base::MallocRange::Type range_of(uintptr_t p, size_t *len) {
  RangeFind f = {p, base::MallocRange::UNKNOWN, 0, 0};
  MallocExtension::instance()->Ranges(&f, on_range);
  EXPECT(f.found == 1);
  *len = f.len;
  return f.type;
}

static void test_release_and_ranges() {
  MallocExtension *ext = MallocExtension::instance();
  /* volatile: the compiler may not drop a malloc/free pair */
  void *volatile a = malloc(MB), *volatile b = malloc(MB);
  uintptr_t a_addr = reinterpret_cast<uintptr_t>(a); /* looked up after the free */
  size_t len = 0;
  EXPECT(range_of(a_addr, &len) == base::MallocRange::INUSE && len >= (size_t)MB);
  /* The span: MB, and a page more in checker mode, where a block takes one
   * byte more than asked (allocator/alloc.c, room_for). */
  size_t span = len;
  ext->ReleaseFreeMemory();
  size_t start = prop("tcmalloc.pageheap_unmapped_bytes");
  ext->ReleaseToSystem(MB);
  EXPECT(prop("tcmalloc.pageheap_unmapped_bytes") == start);
  free(a);
  EXPECT(range_of(a_addr, &len) == base::MallocRange::FREE);
  ext->ReleaseToSystem(MB / 2); /* the whole span goes: MB/2 more than asked */
  EXPECT(prop("tcmalloc.pageheap_unmapped_bytes") == start + span);
  EXPECT(range_of(a_addr, &len) == base::MallocRange::UNMAPPED);
  ext->ReleaseToSystem(MB / 4); /* paid for by the last call */
  EXPECT(prop("tcmalloc.pageheap_unmapped_bytes") == start + span);
  // Aggressive decommit: a freed span goes back at once.
  size_t old = 9;
  EXPECT(ext->GetNumericProperty("tcmalloc.aggressive_memory_decommit", &old) && old == 0);
  EXPECT(ext->SetNumericProperty("tcmalloc.aggressive_memory_decommit", 1));
  EXPECT(prop("tcmalloc.aggressive_memory_decommit") == 1);
  free(b);
  size_t unmapped = prop("tcmalloc.pageheap_unmapped_bytes");
  CHECK(unmapped == start + 2 * span, "unmapped %zu, expected %zu", unmapped, start + 2 * span);
  EXPECT(prop("tcmalloc.pageheap_free_bytes") == 0);
  EXPECT(ext->SetNumericProperty("tcmalloc.aggressive_memory_decommit", 0));
  // The heap limit: growth fails past it, and works again when lifted.
  EXPECT(prop("tcmalloc.heap_limit_mb") == 0);
  EXPECT(ext->SetNumericProperty("tcmalloc.heap_limit_mb", 256));
  void *volatile big = malloc(512u * MB);
  EXPECT(big == NULL);
  EXPECT(ext->SetNumericProperty("tcmalloc.heap_limit_mb", 0));
  big = malloc(512u * MB);
  EXPECT(big != NULL);
  free(big);
}

// SetSystemAllocator: the heap grows from the program's allocator.
struct CountingSysAlloc : public SysAllocator {
  SysAllocator *child;
  int calls;
  bool fail;
  void *Alloc(size_t size, size_t *actual, size_t align) {
    calls++;
    return fail ? NULL : child->Alloc(size, actual, align);
  }
};
static CountingSysAlloc sys;

static void test_sys_alloc() {
  MallocExtension *ext = MallocExtension::instance();
  SysAllocator *def = ext->GetSystemAllocator();
  EXPECT(def != NULL);
  sys.child = def;
  ext->SetSystemAllocator(&sys);
  EXPECT(ext->GetSystemAllocator() == &sys);
  void *volatile p = malloc(700u * MB); /* more than any free run: the heap grows */
  EXPECT(p != NULL && sys.calls >= 1);
  free(p);
  sys.fail = true;
  EXPECT((sink = malloc((size_t)4 << 30)) == NULL); /* more than all the free runs */
  sys.fail = false;
  ext->SetSystemAllocator(def);
}

// Verify*Memory, VerifyAllMemory, MallocMemoryStats.
static void test_verify() {
  MallocExtension *ext = MallocExtension::instance();
  char *small = static_cast<char *>(malloc(40));
  char *volatile large = static_cast<char *>(malloc(3 * MB));
  char *obj = new char[24];
  EXPECT(ext->VerifyMallocMemory(small) && ext->VerifyMallocMemory(large) && ext->VerifyNewMemory(NULL));
  EXPECT(ext->VerifyArrayNewMemory(obj));
  EXPECT(!ext->VerifyMallocMemory(small + 8));  /* interior */
  EXPECT(!ext->VerifyMallocMemory(large + 16));
  static char global[64];
  EXPECT(!ext->VerifyMallocMemory(global)); /* not ours */
  EXPECT(ext->VerifyAllMemory());
  // The census counts what is allocated: three more blocks of known sizes.
  int blocks0 = 0, hist0[kMallocHistogramSize], blocks1 = 0, hist1[kMallocHistogramSize];
  size_t total0 = 0, total1 = 0;
  EXPECT(ext->MallocMemoryStats(&blocks0, &total0, hist0));
  void *volatile more[3] = {malloc(5000), malloc(5000), malloc(2 * MB)};
  EXPECT(ext->MallocMemoryStats(&blocks1, &total1, hist1));
  CHECK(blocks1 == blocks0 + 3, "blocks %d -> %d", blocks0, blocks1);
  CHECK(total1 >= total0 + 2 * MB + 10000 && total1 <= total0 + 2 * MB + 2 * 8192, "total %zu -> %zu", total0, total1);
  EXPECT(hist1[22] == hist0[22] + 1); /* 2 MiB has bit length 22 */
  for (int i = 0; i < 3; i++) free(more[i]);
  // A freed block is no longer one; the heap is still consistent.
  void *volatile gone = malloc(40);
  free(gone);
  EXPECT(!ext->VerifyMallocMemory(gone));
  free(large);
  EXPECT(!ext->VerifyMallocMemory(large));
  free(small);
  delete[] obj;
  // A write after free into a free list entry: VerifyAllMemory sees it.
  // Unsampled blocks (a sampled one is on no free list).
  size_t interval = prop("heapcheck.sample_interval");
  EXPECT(ext->SetNumericProperty("heapcheck.sample_interval", 0));
  void *volatile p1 = malloc(48), *volatile p2 = malloc(48);
  EXPECT(ext->SetNumericProperty("heapcheck.sample_interval", interval));
  free(p1);
  free(p2); /* p2's first word now links to p1 in this thread's cache */
  void *saved = *(void *volatile *)p2;
  *(uintptr_t *)p2 = (uintptr_t)global; /* corrupt the link */
  EXPECT(!ext->VerifyAllMemory());
  *(void *volatile *)p2 = saved;
  EXPECT(ext->VerifyAllMemory());
}

// GetStackFrames: each size is the distance between successive frames.
#define ESCAPE(buf) __asm__ volatile("" ::"r"(buf) : "memory") /* the array must exist in the frame */
static __attribute__((noinline)) int frames_leaf(void **pcs, int *sizes) {
  char pad[200];
  ESCAPE(pad);
  int n = GetStackFrames(pcs, sizes, 8, 0);
  ESCAPE(pad);
  return n;
}
static __attribute__((noinline)) int frames_mid(void **pcs, int *sizes) {
  char pad[1000];
  ESCAPE(pad);
  int n = frames_leaf(pcs, sizes);
  ESCAPE(pad);
  return n;
}
static void test_frames() {
  void *pcs[8];
  int sizes[8];
  int n = frames_mid(pcs, sizes);
  EXPECT(n >= 3);
  /* sizes[0] is frames_leaf's frame (> its 200-byte pad), sizes[1] frames_mid's (> 1000) */
  CHECK(sizes[0] >= 200 && sizes[0] < 1000 && sizes[1] >= 1000 && sizes[1] < 4096, "sizes %d %d", sizes[0], sizes[1]);
}

// HeapLeakChecker::GetAllocCaller (for gperftools' unit test, its friend).
void VerifyHeapProfileTableStackGet();
static __attribute__((noinline)) void *allocating_function() {
  void *volatile p = malloc(77); /* not a tail call: the return address is in here */
  return p;
}
void VerifyHeapProfileTableStackGet() {
  /* Sampling off: without the checker a sampled object has a recorded
   * stack too (hc_alloc_caller), and HEAPCHECK_SAMPLE_PARAMETER=64 in the
   * environment sampled the 77 bytes (1 in ~6800 at the default interval). */
  MallocExtension *ext = MallocExtension::instance();
  size_t old = prop("heapcheck.sample_interval");
  EXPECT(ext->SetNumericProperty("heapcheck.sample_interval", 0));
  void *volatile p = allocating_function();
  EXPECT(ext->SetNumericProperty("heapcheck.sample_interval", old));
  uintptr_t caller = reinterpret_cast<uintptr_t>(HeapLeakChecker::GetAllocCaller(p));
  uintptr_t f = reinterpret_cast<uintptr_t>(&allocating_function);
  if (HeapLeakChecker::IsActive()) CHECK(caller > f && caller < f + 128, "caller %#lx, function %#lx", (unsigned long)caller, (unsigned long)f);
  else EXPECT(caller == 0);
  free(p);
}

// tc_set_new_mode(1): a failing malloc runs the new-handler.
static volatile int handler_runs;
static void on_no_memory() {
  handler_runs++;
  std::set_new_handler(NULL); /* the retry fails again: then NULL */
}
static void test_new_mode() {
  const size_t huge = (size_t)1 << 50;
  EXPECT(tc_set_new_mode(1) == 0);
  std::set_new_handler(on_no_memory);
  errno = 0;
  /* through a pointer: clang assumes malloc leaves errno alone (LLVM marks
   * it inaccessiblememonly) and would read back the 0 stored above */
  void *(*volatile mallocp)(size_t) = malloc;
  sink = mallocp(huge);
  int err = errno;
  CHECK(sink == NULL && handler_runs == 1 && err == ENOMEM, "%p runs %d errno %d", sink, handler_runs, err);
  std::set_new_handler(on_no_memory);
  EXPECT((sink = calloc(1, huge)) == NULL && handler_runs == 2);
  std::set_new_handler(on_no_memory);
  EXPECT((sink = memalign(64, huge)) == NULL && handler_runs == 3);
  std::set_new_handler(on_no_memory);
  EXPECT((sink = tc_malloc_skip_new_handler(huge)) == NULL && handler_runs == 3);
  EXPECT(tc_set_new_mode(0) == 1);
  EXPECT((sink = malloc(huge)) == NULL && handler_runs == 3); /* glibc's rule again */
  std::set_new_handler(NULL);
}

// Heap-growth stacks: a growth made here is listed first, with this stack.
static __attribute__((noinline)) void *grow_here(size_t n) {
  void *volatile p = malloc(n);
  return p;
}
static void test_growth() {
  MallocExtension *ext = MallocExtension::instance();
  size_t n = prop("generic.heap_size") + 64u * MB; /* more than the heap holds: it grows */
  void *volatile big = grow_here(n);
  EXPECT(big != NULL);
  void **e = ext->ReadHeapGrowthStackTraces();
  EXPECT(e && e[0] == (void *)1 && (uintptr_t)e[1] >= n && (uintptr_t)e[2] >= 1);
  uintptr_t f = reinterpret_cast<uintptr_t>(&grow_here);
  bool here = false;
  for (uintptr_t i = 0; e && i < (uintptr_t)e[2]; i++)
    here = here || ((uintptr_t)e[3 + i] > f && (uintptr_t)e[3 + i] < f + 128);
  EXPECT(here);
  delete[] e;
  MallocExtensionWriter w;
  ext->GetHeapGrowthStacks(&w);
  EXPECT(w.compare(0, 14, "heap profile: ") == 0 && w.find(" growth\n") != std::string::npos &&
         w.find("\nMAPPED_LIBRARIES:\n") != std::string::npos);
  free(big);
}

// ReadStackTraces: a sampled object is listed with its size and stack.
static __attribute__((noinline)) void *sample_here(size_t n) {
  void *volatile p = malloc(n);
  return p;
}
static void test_sample_traces() {
  MallocExtension *ext = MallocExtension::instance();
  if (HeapLeakChecker::IsActive()) return; /* no sampling in checker mode */
  size_t old = prop("heapcheck.sample_interval");
  EXPECT(ext->SetNumericProperty("heapcheck.sample_interval", 1)); /* every allocation */
  void *volatile p = sample_here(12345);
  EXPECT(ext->SetNumericProperty("heapcheck.sample_interval", old));
  int period = 0;
  void **e = ext->ReadStackTraces(&period);
  bool found = false;
  uintptr_t f = reinterpret_cast<uintptr_t>(&sample_here);
  for (void **x = e; x && x[0]; x += 3 + (uintptr_t)x[2]) {
    if ((uintptr_t)x[1] != 12345) continue;
    for (uintptr_t i = 0; i < (uintptr_t)x[2]; i++)
      found = found || ((uintptr_t)x[3 + i] > f && (uintptr_t)x[3 + i] < f + 128);
  }
  EXPECT(found && period == (int)old);
  delete[] e;
  free(p);
}

int main() {
  test_sample_traces();
  test_new_mode();
  test_growth();
  test_verify();
  test_frames();
  VerifyHeapProfileTableStackGet();
  test_hooks();
  test_nallocx();
  test_usable_tail();
  test_release_and_ranges();
  test_sys_alloc();
  return failures != 0;
}

/* gperftools/heap-checker.h - gperftools' C++ heap leak checker API
 * (HeapLeakChecker, HiddenPointer, HeapCleaner, REGISTER_HEAPCHECK_CLEANUP)
 * on top of heapcheck's C API <heapcheck.h>.
 *
 * Header only: every member is an inline function calling hc_*(), so
 * libheapcheck stays a pure C library with no C++ runtime dependency, and a
 * program written for gperftools builds unchanged and only swaps the link
 * flag (-ltcmalloc -> -lheapcheck).  Written from gperftools 2.10's
 * documented behaviour (docs/leak-checking.md, "The C++ API", lists where we
 * differ); no gperftools code is used.
 *
 * Invariants:
 *  - the include guard is gperftools' own, so a translation unit that sees
 *    both this header and gperftools' gets one definition;
 *  - sizeof(HeapLeakChecker) is gperftools' (7 pointer-sized members, 56
 *    bytes on LP64), because users put checkers on the stack;
 *  - all state of a check lives in the C library (an hc_check_t); the object
 *    only caches the totals of its last check.  GlobalChecker() objects are
 *    views of the library's whole-program checker, one per program (or per
 *    shared object when built with hidden visibility: harmless, they hold no
 *    state of their own).
 * Locks: none here; the static members are thread-safe because the C API is.
 */
#ifndef BASE_HEAP_CHECKER_H_
#define BASE_HEAP_CHECKER_H_

#include <sys/types.h>  /* ssize_t */
#include <stdint.h>     /* uintptr_t */
#include <stdarg.h>     /* included by gperftools' header: kept for users relying on it */
#include <stdio.h>      /* the checker's own messages */
#include <stdlib.h>     /* abort */
#include <new>          /* placement new for the global checker */
#include <vector>       /* included by gperftools' header: kept for users relying on it */

#include "../heapcheck.h"

/* NULL spelled so that -Wzero-as-null-pointer-constant stays quiet in
 * user code built with C++11 or later.  #undef'd at the end. */
#if __cplusplus >= 201103L
# define HC_CXX_NULL_ nullptr
#else
# define HC_CXX_NULL_ NULL
#endif

#ifndef PERFTOOLS_DLL_DECL
# ifdef _WIN32
#   define PERFTOOLS_DLL_DECL  __declspec(dllimport)
# else
#   define PERFTOOLS_DLL_DECL
# endif
#endif

class PERFTOOLS_DLL_DECL HeapLeakChecker {
 public:
  /* ---- whole-program checking ---- */

  /* True when heap checking is on for this run (HEAPCHECK set to a mode,
   * "local" included). */
  static bool IsActive() { return hc_is_active() != 0; }

  /* The whole-program checker ("_main_"), or NULL when there is none:
   * checker off, or HEAPCHECK=local.  Always the same object. */
  static HeapLeakChecker* GlobalChecker() {
    if (!HasGlobalCheck()) return HC_CXX_NULL_;
    /* Built in static storage, never destroyed: a function-local static
     * object would register a destructor with atexit and a heap object would
     * show up as a leak in draconian mode. */
    static union { char bytes[sizeof(HeapLeakChecker)]; void* align_p; ssize_t align_s; } storage;
    static HeapLeakChecker* const main_checker = new (storage.bytes) HeapLeakChecker(MainTag());
    return main_checker;
  }

  /* Runs the whole-program check now and prints a report when it finds
   * leaks; the program goes on.  False only when active and leaks were
   * found; afterwards GlobalChecker()->BytesLeaked()/ObjectsLeaked() hold
   * the totals.  May be called any number of times. */
  static bool NoGlobalLeaks() {
    bool ok = hc_no_global_leaks() != 0;
    HeapLeakChecker* main_checker = GlobalChecker();
    if (main_checker) main_checker->RecordGlobalTotals();
    return ok;
  }

  /* No whole-program check at exit (so no leak exit status either). */
  static void CancelGlobalCheck() { hc_cancel_global_check(); }

  /* ---- scoped checking ---- */

  /* Starts a check named `name` (a simple name: it becomes part of the
   * profile file name; "_main_" is the whole-program checker's).  Objects
   * allocated from now on that are unreachable at NoLeaks() are leaks. */
  explicit HeapLeakChecker(const char* name)
      : check_(HC_CXX_NULL_), name_(HC_CXX_NULL_), reserved_(HC_CXX_NULL_), has_checked_(false),
        inuse_bytes_increase_(0), inuse_allocs_increase_(0), is_main_(false) {
    /* When the checker is off, hc_check_begin prints gperftools' two lines
     * ("Heap checker is not active, hence checker ... will do nothing!")
     * and the object stays inert. */
    hc_check_t* check = hc_check_begin(name);
    if (!IsActive()) {
      hc_check_free(check);
      return;
    }
    check_ = check;
    name_ = hc_check_name(check);
  }

  /* A checker that was active when built must have run one of the
   * NoLeaks-style methods; otherwise the program aborts (as gperftools). */
  ~HeapLeakChecker() {
    if (!check_) return;  /* inactive, or the global checker */
    if (!has_checked_)
      Fatal("Some *NoLeaks|SameHeap method must be called on any created HeapLeakChecker");
    hc_check_free(check_);
  }

  /* True when no object allocated since construction is unreachable now.
   * Prints a report (with symbolized stacks) when leaks are found.  Always
   * true, and nothing is recorded, when the checker was inactive at
   * construction. */
  bool NoLeaks() { return DoNoLeaks(); }
  /* gperftools' older names; all identical to NoLeaks(). */
  bool QuickNoLeaks() { return NoLeaks(); }
  bool BriefNoLeaks() { return NoLeaks(); }
  bool SameHeap() { return NoLeaks(); }
  bool QuickSameHeap() { return NoLeaks(); }
  bool BriefSameHeap() { return NoLeaks(); }

  /* Totals of the last *NoLeaks: bytes and objects found leaked (>= 0).
   * Abort when no check ran on this object. */
  ssize_t BytesLeaked() const {
    if (is_main_) {
      ssize_t live = hc_global_bytes_leaked();  /* also sees checks run through the C API */
      if (live >= 0) return live;
    }
    if (!has_checked_) Fatal("*NoLeaks|SameHeap must execute before this call");
    return inuse_bytes_increase_;
  }
  ssize_t ObjectsLeaked() const {
    if (is_main_) {
      ssize_t live = hc_global_objects_leaked();
      if (live >= 0) return live;
    }
    if (!has_checked_) Fatal("*NoLeaks|SameHeap must execute before this call");
    return inuse_allocs_increase_;
  }

  /* ---- known leaks ---- */

  /* While one exists on a thread, objects that thread allocates (and what
   * they point to) are never reported.  Destroy it on the same thread. */
  class Disabler {
   public:
    Disabler() { hc_disable_begin(); }
    ~Disabler() { hc_disable_end(); }
   private:
    Disabler(const Disabler&);
    void operator=(const Disabler&);
  };

  /* Makes the live heap object at (or containing) ptr a root: it and what it
   * points to are never leaks.  Returns ptr.  No-op when inactive; a message
   * when ptr is not in a live heap object. */
  template <typename T>
  static T* IgnoreObject(T* ptr) {
    hc_ignore_object(static_cast<const void*>(const_cast<const T*>(ptr)));
    return ptr;
  }
  /* Undoes IgnoreObject.  Aborts (as gperftools) when ptr is not a live,
   * ignored heap object. */
  static void UnIgnoreObject(const void* ptr) {
    if (hc_unignore_object(ptr) != 0 && IsActive()) abort();
  }

 private:
  /* The first frame of ptr's recorded allocation stack (checker mode; NULL
   * otherwise): a return address in the function that allocated it.  For
   * gperftools' unit test, which is its friend. */
  static const void* GetAllocCaller(void* ptr) { return hc_alloc_caller(ptr); }
  friend void VerifyHeapProfileTableStackGet();

  struct MainTag {};
  /* The whole-program checker: a view of the library's "_main_" check. */
  explicit HeapLeakChecker(MainTag)
      : check_(HC_CXX_NULL_), name_("_main_"), reserved_(HC_CXX_NULL_), has_checked_(false),
        inuse_bytes_increase_(0), inuse_allocs_increase_(0), is_main_(true) {}

  /* Whether the library runs a whole-program check: active and not local. */
  static bool HasGlobalCheck() { return hc_has_global_check() != 0; }

  bool DoNoLeaks() {
    if (is_main_) {
      bool ok = hc_no_global_leaks() != 0;
      RecordGlobalTotals();
      return ok;
    }
    if (!check_) return true;  /* inactive at construction */
    bool ok = hc_check_end(check_, HC_CHECK_REPORT | HC_CHECK_SYMBOLIZE) != 0;
    ssize_t bytes = hc_check_bytes_leaked(check_);
    ssize_t objects = hc_check_objects_leaked(check_);
    inuse_bytes_increase_ = bytes > 0 ? bytes : 0;
    inuse_allocs_increase_ = objects > 0 ? objects : 0;
    has_checked_ = true;
    return ok;
  }

  void RecordGlobalTotals() {
    ssize_t bytes = hc_global_bytes_leaked();
    ssize_t objects = hc_global_objects_leaked();
    inuse_bytes_increase_ = bytes > 0 ? bytes : 0;
    inuse_allocs_increase_ = objects > 0 ? objects : 0;
    has_checked_ = true;
  }

  /* gperftools' FATAL: the message alone on stderr, then abort. */
  static void Fatal(const char* msg) {
    fprintf(stderr, "%s\n", msg);
    abort();
  }

  /* The same seven pointer-sized members as gperftools' class (so the same
   * size and alignment); the library holds the real state. */
  hc_check_t* check_;              /* the C check; NULL when inactive or for _main_ */
  const char* name_;               /* the check's name (owned by the library); NULL when inactive */
  void* reserved_;                 /* gperftools' start_snapshot_: unused */
  bool has_checked_;               /* some *NoLeaks ran: the totals below are valid */
  ssize_t inuse_bytes_increase_;   /* bytes leaked at the last check */
  ssize_t inuse_allocs_increase_;  /* objects leaked at the last check */
  bool is_main_;                   /* this is GlobalChecker() (gperftools' keep_profiles_ slot) */

  HeapLeakChecker(const HeapLeakChecker&);
  void operator=(const HeapLeakChecker&);
};

/* A pointer kept XOR-masked so a conservative scan cannot see it: what is
 * only reachable through HiddenPointers is a leak.  Same mask as gperftools,
 * so values are interchangeable. */
template <class T>
class HiddenPointer {
 public:
  explicit HiddenPointer(T* t) : masked_t_(reinterpret_cast<uintptr_t>(t) ^ kHideMask) {}
  T* get() const { return reinterpret_cast<T*>(masked_t_ ^ kHideMask); }

 private:
#if defined(__LP64__) || defined(_LP64)
  static const uintptr_t kHideMask = 0xF03A5F7BF03A5F7BUL;
#else
  static const uintptr_t kHideMask = 0xF03A5F7BUL;  /* the same, truncated */
#endif
  uintptr_t masked_t_;
};

/* Registers a function the library runs at exit right before the
 * whole-program check, in registration order: only in whole-program modes
 * (not when inactive, not in local mode); like gperftools, also after
 * CancelGlobalCheck() skipped the check itself. */
class PERFTOOLS_DLL_DECL HeapCleaner {
 public:
  typedef void (*void_function)(void);
  HeapCleaner(void_function f) { hc_register_cleanup(f); }
  /* gperftools lets the program run the cleanups itself; here the library
   * runs them right before its whole-program check, so this does nothing. */
  static void RunHeapCleanups() {}
};

/* REGISTER_HEAPCHECK_CLEANUP(name, body): `body` runs before the
 * whole-program leak check, e.g. to free what global objects keep so that
 * strict/draconian runs do not report it.  Use at namespace scope. */
#define REGISTER_HEAPCHECK_CLEANUP(name, body)                                  \
  namespace {                                                                   \
  void heapcheck_cleanup_##name() { body; }                                     \
  static HeapCleaner heapcheck_cleaner_##name(&heapcheck_cleanup_##name);      \
  }

#undef HC_CXX_NULL_

#endif  /* BASE_HEAP_CHECKER_H_ */

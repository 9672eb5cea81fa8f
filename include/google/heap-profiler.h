/* google/heap-profiler.h - gperftools' old include path; see gperftools/heap-profiler.h. */
#include "../gperftools/heap-profiler.h"

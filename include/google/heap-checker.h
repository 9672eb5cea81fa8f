/* google/heap-checker.h - gperftools' old include path; see gperftools/heap-checker.h. */
#include "../gperftools/heap-checker.h"

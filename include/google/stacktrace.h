/* google/stacktrace.h - gperftools' old include path; see gperftools/stacktrace.h. */
#include "../gperftools/stacktrace.h"

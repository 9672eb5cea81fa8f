/* google/tcmalloc.h - gperftools' old include path; see gperftools/tcmalloc.h. */
#include "../gperftools/tcmalloc.h"

/* google/malloc_extension.h - gperftools' old include path; see gperftools/malloc_extension.h. */
#include "../gperftools/malloc_extension.h"

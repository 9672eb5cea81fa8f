/* google/malloc_extension_c.h - gperftools' old include path; see gperftools/malloc_extension_c.h. */
#include "../gperftools/malloc_extension_c.h"

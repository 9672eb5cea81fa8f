/* google/malloc_hook_c.h - gperftools' old include path; see gperftools/malloc_hook_c.h. */
#include "../gperftools/malloc_hook_c.h"

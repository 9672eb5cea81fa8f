/* google/malloc_hook.h - gperftools' old include path; see gperftools/malloc_hook.h. */
#include "../gperftools/malloc_hook.h"

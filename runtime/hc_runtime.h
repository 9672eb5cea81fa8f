/* hc_runtime.h - the runtime layer (runtime/): process start-up order, the
 * library constructor, the fork handlers, and the exported malloc family
 * (override.c).  The top layer: it may use every layer below and no layer
 * may use it (no other folder's include path names runtime/). */
#ifndef HC_RUNTIME_H
#define HC_RUNTIME_H

/* Initialises every layer in order (init.c); the allocator runs it once,
 * through the HC_STARTUP record in override.c. */
void hci_runtime_start(void);

/* Makes libc's own malloc family jump to ours (libc_redirect.c: why, and
 * when it writes nothing).  Once, from the constructor. */
void hci_redirect_libc(void);
/* When the program brings its own allocator, our definitions it did not
 * replace jump to the next ones (libc_redirect.c).  Once, from the
 * constructor, before hci_redirect_libc. */
void hci_step_aside(void);

#endif

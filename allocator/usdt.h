/* usdt.h - USDT (SystemTap SDT v3) probe points without <sys/sdt.h>.
 *
 * A probe is a single `nop` at the probe site plus an ELF note in the
 * non-allocated section .note.stapsdt that tells tracers (bpftrace, perf,
 * systemtap, bcc) where the nop is, the provider and probe names, and how to
 * find each argument ("8@%rdi": an 8-byte value in rdi).  Tracers patch the
 * nop into a breakpoint when they attach; with nobody attached the cost is
 * the nop and getting the arguments into registers.
 *
 * Note layout (type 3, owner "stapsdt"), per probe:
 *     8 bytes  address of the nop          (link-time address)
 *     8 bytes  address of _.stapsdt.base   (lets tracers undo prelinking)
 *     8 bytes  semaphore address           (0: we have none, always armed)
 *     provider\0 name\0 argument-format\0
 * _.stapsdt.base is one byte in the allocated section .stapsdt.base, emitted
 * once per object file (.ifndef) and merged across files (comdat group).
 *
 * Probes in libheapcheck (provider "heapcheck"), fired only on slow paths,
 * so the allocator's fast paths carry none:
 *     sample_alloc(ptr, size, stack_id)   after a sampled object is recorded
 *     sample_free(ptr, size, stack_id)    when a sampled object is freed
 *     glibc's memory_* probes             see the list at the end
 *
 * Arguments are passed as 64-bit values in registers ("r"), which every SDT
 * consumer understands.  Other architectures get empty macros.
 */
#ifndef HC_USDT_H
#define HC_USDT_H

#include <stdint.h>

#if defined(__x86_64__) || defined(__aarch64__)

#define HC_USDT_STR_(x) #x
#define HC_USDT_STR(x) HC_USDT_STR_(x)

/* The probe site and its note; args is the argument format ("8@%0 -8@%1":
 * size, '-' for signed, the operand).  Numeric local labels keep every
 * expansion (inlined or duplicated copies included) self-contained. */
#define HC_USDT_ASM(provider, name, args)                                                           \
  "990: nop\n"                                                                                      \
  ".pushsection .note.stapsdt,\"?\",\"note\"\n"                                                    \
  ".balign 4\n"                                                                                     \
  ".4byte 992f-991f, 994f-993f, 3\n"                                                                \
  "991: .asciz \"stapsdt\"\n"                                                                       \
  "992: .balign 4\n"                                                                                \
  "993: .8byte 990b\n"                                                                              \
  ".8byte _.stapsdt.base\n"                                                                         \
  ".8byte 0\n"                                                                                      \
  ".asciz \"" HC_USDT_STR(provider) "\"\n"                                                          \
  ".asciz \"" HC_USDT_STR(name) "\"\n"                                                              \
  ".asciz \"" args "\"\n"                                                                           \
  "994: .balign 4\n"                                                                                \
  ".popsection\n"                                                                                   \
  ".ifndef _.stapsdt.base\n"                                                                        \
  ".pushsection .stapsdt.base,\"aG\",\"progbits\",.stapsdt.base,comdat\n"                           \
  ".weak _.stapsdt.base\n"                                                                          \
  ".hidden _.stapsdt.base\n"                                                                        \
  "_.stapsdt.base: .space 1\n"                                                                      \
  ".size _.stapsdt.base, 1\n"                                                                       \
  ".popsection\n"                                                                                   \
  ".endif\n"

#define HC_USDT1F(provider, name, args, a1) \
  __asm__ __volatile__(HC_USDT_ASM(provider, name, args) : : "r"((int64_t)(a1)))
#define HC_USDT2F(provider, name, args, a1, a2) \
  __asm__ __volatile__(HC_USDT_ASM(provider, name, args) : : "r"((int64_t)(a1)), "r"((int64_t)(a2)))
#define HC_USDT3F(provider, name, args, a1, a2, a3)                                                  \
  __asm__ __volatile__(HC_USDT_ASM(provider, name, args)                                            \
                       :                                                                           \
                       : "r"((int64_t)(a1)), "r"((int64_t)(a2)), "r"((int64_t)(a3)))
#define HC_USDT3(provider, name, a1, a2, a3) HC_USDT3F(provider, name, "8@%0 8@%1 8@%2", a1, a2, a3)

#else
#define HC_USDT1F(provider, name, args, a1) ((void)(a1))
#define HC_USDT2F(provider, name, args, a1, a2) ((void)(a1), (void)(a2))
#define HC_USDT3F(provider, name, args, a1, a2, a3) ((void)(a1), (void)(a2), (void)(a3))
#define HC_USDT3(provider, name, a1, a2, a3) ((void)(a1), (void)(a2), (void)(a3))
#endif

#define HC_USDT_SAMPLE_ALLOC(ptr, size, stack_id) HC_USDT3(heapcheck, sample_alloc, ptr, size, stack_id)
#define HC_USDT_SAMPLE_FREE(ptr, size, stack_id) HC_USDT3(heapcheck, sample_free, ptr, size, stack_id)

/* glibc's malloc probes (provider libc in glibc; the glibc manual, "Internal
 * probes"), same names and argument order, provider heapcheck, where
 * heapcheck has the event (docs/profiling.md has the table).  Pointers and
 * sizes are unsigned 8-byte arguments, glibc's int arguments signed 8-byte
 * ones.  Every site is on a slow path: the fast paths carry no probe. */
#define HC_USDT_P2(name, a1, a2) HC_USDT2F(heapcheck, name, "8@%0 8@%1", a1, a2)
#define HC_USDT_I2(name, a1, a2) HC_USDT2F(heapcheck, name, "-8@%0 -8@%1", a1, a2)
#define HC_USDT_I3(name, a1, a2, a3) HC_USDT3F(heapcheck, name, "-8@%0 -8@%1 -8@%2", a1, a2, a3)
#define HC_USDT_MEMORY_HEAP_NEW(base, size) HC_USDT_P2(memory_heap_new, base, size)
#define HC_USDT_MEMORY_HEAP_LESS(base, size) HC_USDT_P2(memory_heap_less, base, size)
#define HC_USDT_MEMORY_ARENA_NEW(cache, size) HC_USDT_P2(memory_arena_new, cache, size)
#define HC_USDT_MEMORY_MALLOC_RETRY(bytes) HC_USDT1F(heapcheck, memory_malloc_retry, "8@%0", bytes)
#define HC_USDT_MEMORY_CALLOC_RETRY(bytes) HC_USDT1F(heapcheck, memory_calloc_retry, "8@%0", bytes)
#define HC_USDT_MEMORY_MEMALIGN_RETRY(bytes, align) HC_USDT_P2(memory_memalign_retry, bytes, align)
#define HC_USDT_MEMORY_REALLOC_RETRY(bytes, old) HC_USDT_P2(memory_realloc_retry, bytes, old)
#define HC_USDT_MEMORY_TCACHE_DOUBLE_FREE(ptr, idx) HC_USDT2F(heapcheck, memory_tcache_double_free, "8@%0 -8@%1", ptr, idx)

#endif

/* fuzz_elf.c - libFuzzer harness for the symbolizer's ELF and DWARF parser.
 *
 * Every input goes through hci_elf_probe_buffer: ELF header and section
 * table, notes (build-id), .gnu_debuglink, .symtab and .dynsym tables with
 * lookups, and the .debug_line index with lookups.  Build and run: see
 * README.md beside this file.  Not part of the meson build (needs clang). */
#include <stddef.h>
#include <stdint.h>

#include "hc_symbolize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hci_elf_probe_buffer(data, size);
  return 0;
}

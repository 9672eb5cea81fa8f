/* dl_module.c - a shared module test_symbolize dlopens (built several times,
 * with different -gdwarf-N, to cover DWARF 2, 4 and 5 line programs).
 * symtest_module_function calls back into the test, which records the return
 * address (inside this function) and the line of the call. */
int symtest_call_line;

__attribute__((noinline)) int symtest_module_function(void (*cb)(void)) {
  symtest_call_line = __LINE__; cb(); /* the call and its line are on one line */
  __asm__ volatile("" ::: "memory"); /* no tail call: the return address stays here */
  return symtest_call_line;
}

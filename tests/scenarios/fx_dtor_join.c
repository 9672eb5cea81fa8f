/* fx_dtor_join.c - a shared object's destructor (fx_dtor_join_lib.c) joins a
 * thread that calls exit(5) once it runs.  That destructor runs after the
 * library's, where HEAPCHECK=strict and draconian check (after destructors):
 * the thread's exit, made once the check was taken, waited for good and the
 * join with it for ever.  glibc 2.36 alone ends with 5 (test_no_disturb). */
void fx_dtor_join_start(void);

int main(void) {
  fx_dtor_join_start();
  return 0;
}

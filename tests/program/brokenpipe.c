/* brokenpipe.c - runs a program whose stderr is a pipe nobody reads any
 * more (its read end is closed before the exec): every write to fd 2 fails
 * with EPIPE and raises SIGPIPE.  Usage: brokenpipe PROGRAM [ARG...]; exits
 * with the program's status (128 + signal when a signal killed it). */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  int p[2];
  if (pipe(p) != 0) return 2;
  close(p[0]);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[1], 2);
    close(p[1]);
    execvp(argv[1], argv + 1);
    _exit(127);
  }
  close(p[1]);
  int st;
  if (waitpid(pid, &st, 0) < 0) return 2;
  if (WIFSIGNALED(st)) {
    printf("brokenpipe: killed by signal %d\n", WTERMSIG(st));
    return 128 + WTERMSIG(st);
  }
  return WEXITSTATUS(st);
}

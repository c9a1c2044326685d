// Runs a command and prints its peak resident memory in KiB (wait4's ru_maxrss) on stderr,
// as "maxrss_kib=N", passing its exit status through. Used by scripts/bench.sh.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const pid_t pid = fork();
  if (pid == 0) {
    execvp(argv[1], argv + 1);
    _exit(127);
  }
  int st = 0;
  rusage ru{};
  wait4(pid, &st, 0, &ru);
  std::fprintf(stderr, "maxrss_kib=%ld\n", ru.ru_maxrss);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

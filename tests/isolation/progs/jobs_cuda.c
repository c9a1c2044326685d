// A small CUDA job for the jobs tests (jobs_test.cpp), on the simulated GPU.
//   jobs_cuda work MS     a few recorded calls, then MS ms more of the job's life; prints "done"
//   jobs_cuda parent N    the calls, then N children of its own `work 0` started as Python's
//                         multiprocessing "spawn" starts workers (fork + exec), waited for
#include <cuda_runtime_api.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char** environ;

static int Work(void) {
  void *dev = NULL, *host = NULL;
  if (cudaMalloc(&dev, 4096) != cudaSuccess || cudaMallocHost(&host, 4096) != cudaSuccess) return 3;
  for (int i = 0; i < 10; ++i) cudaMemcpy(dev, host, 64, cudaMemcpyHostToDevice);
  cudaDeviceSynchronize();
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const long n = atol(argv[2]);
  if (Work() != 0) return 3;
  if (!strcmp(argv[1], "work")) {
    const struct timespec ts = {n / 1000, (n % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    printf("done\n");
    return 0;
  }
  if (strcmp(argv[1], "parent") != 0) return 2;
  char work[] = "work", zero[] = "0";
  char* child_argv[] = {argv[0], work, zero, NULL};
  int failed = 0;
  pid_t pids[64];
  for (long i = 0; i < n && i < 64; ++i)
    if (posix_spawn(&pids[i], "/proc/self/exe", NULL, NULL, child_argv, environ) != 0) return 4;
  for (long i = 0; i < n && i < 64; ++i) {
    int status = 0;
    waitpid(pids[i], &status, 0);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  printf("parent: %ld children, %d failed\n", n, failed);
  return failed ? 5 : 0;
}

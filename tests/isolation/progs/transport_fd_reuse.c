/* A daemon-like CUDA program: after its first CUDA calls it closes every descriptor above
 * stderr, then opens files and sockets (which get the closed numbers back) and writes to
 * them while it keeps calling CUDA. Its files must hold exactly its bytes, its sockets must
 * carry exactly its bytes, and every write must succeed, as without gpuwatch.
 *   transport_fd_reuse sockets|files
 * "sockets" opens its socket pairs first (the lowest numbers are sockets), "files" its files
 * first. With ISO_NOTE=PATH (the watched run only) it first waits, up to 5 s, for a
 * descriptor above stderr to exist (gpuwatch's connection or spool), and writes to PATH how
 * many descriptors it closed, so the test knows there was one to take over. */
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { kPairs = 4, kFiles = 4, kRounds = 20 };

static void SleepMs(int ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static int OpenAbove2(void) {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (!d) return 0;
  const int own = dirfd(d);
  struct dirent* e;
  while ((e = readdir(d)))
    if (atoi(e->d_name) > 2 && atoi(e->d_name) != own) ++n;
  closedir(d);
  return n;
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const int sockets_first = strcmp(argv[1], "sockets") == 0;
  void* dev = NULL;
  static char host[4096];
  if (cudaMalloc(&dev, sizeof host) != cudaSuccess) return 3;
  cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice);
  const char* note = getenv("ISO_NOTE");
  for (int waited = 0; note && waited < 5000 && OpenAbove2() == 0; waited += 10) SleepMs(10);
  SleepMs(100);  /* gpuwatch has sent a batch or two by now */

  int closed = 0;
  for (int fd = 3; fd < 1024; ++fd) closed += close(fd) == 0;
  if (note) {
    FILE* f = fopen(note, "w");
    if (f) {
      fprintf(f, "%d\n", closed);
      fclose(f);
    }
  }

  int pair[kPairs][2], file[kFiles];
  for (int step = 0; step < 2; ++step) {
    if ((step == 0) == sockets_first) {
      for (int i = 0; i < kPairs; ++i)
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, pair[i]) != 0) return 4;
    } else {
      for (int i = 0; i < kFiles; ++i) {
        char name[32];
        snprintf(name, sizeof name, "own-%d.txt", i);
        if ((file[i] = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0) return 5;
      }
    }
  }

  int failed = 0;
  for (int round = 0; round < kRounds; ++round) {
    cudaMemcpy(dev, host, sizeof host, cudaMemcpyHostToDevice);
    char line[64];
    const int n = snprintf(line, sizeof line, "round %d\n", round);
    for (int i = 0; i < kFiles; ++i)
      if (write(file[i], line, n) != n) {
        printf("write to file %d failed: %s\n", i, strerror(errno));
        ++failed;
      }
    for (int i = 0; i < kPairs; ++i)
      if (write(pair[i][0], line, n) != n) {
        printf("write to socket %d failed: %s\n", i, strerror(errno));
        ++failed;
      }
    SleepMs(25);
  }
  for (int i = 0; i < kFiles; ++i)
    if (close(file[i]) != 0) {
      printf("close of file %d failed: %s\n", i, strerror(errno));
      ++failed;
    }

  /* What each socket carried: exactly the lines written, nothing else. */
  for (int i = 0; i < kPairs; ++i) {
    shutdown(pair[i][0], SHUT_WR);
    static char got[1 << 20];
    size_t total = 0;
    ssize_t r;
    while (total < sizeof got && (r = read(pair[i][1], got + total, sizeof got - total)) > 0) total += (size_t)r;
    size_t expected = 0;
    int same = 1;
    for (int round = 0; round < kRounds; ++round) {
      char line[64];
      const int n = snprintf(line, sizeof line, "round %d\n", round);
      if (expected + n > total || memcmp(got + expected, line, n) != 0) same = 0;
      expected += n;
    }
    printf("socket %d: %zu bytes, expected %zu, %s\n", i, total, expected,
           same && total == expected ? "its own" : "NOT its own");
  }
  printf("%d failed writes, %d copies\n", failed, kRounds + 1);
  return 0;
}

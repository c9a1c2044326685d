/* Calls every CUDA, NCCL and CUPTI entry point libgpuwatch.so exports (the names in
 * argv[2], one per line of a version script), with null arguments, in a process where no
 * CUDA library is loaded: each must return its library's "not available" code, none may
 * jump to address 0. argv[1]: the library's path (preloaded). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef long (*AnyFn)(long, long, long, long, long, long, long, long);

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  void* self = dlopen(argv[1], RTLD_NOW | RTLD_NOLOAD);
  if (!self) {
    printf("not preloaded\n");
    return 0;
  }
  FILE* f = fopen(argv[2], "r");
  if (!f) return 2;
  char line[256];
  int called = 0;
  while (fgets(line, sizeof line, f)) {
    char name[200];
    if (sscanf(line, " %199[A-Za-z0-9_];", name) != 1 || strchr(line, ':') || strchr(line, '*')) continue;
    if (strncmp(name, "cu", 2) != 0 && strncmp(name, "__cu", 4) != 0 && strncmp(name, "nccl", 4) != 0) continue;
    AnyFn fn = (AnyFn)dlsym(self, name);
    if (!fn) {
      printf("%s: not exported\n", name);
      return 1;
    }
    fn(0, 0, 0, 0, 0, 0, 0, 0);
    ++called;
  }
  fclose(f);
  printf("called %d wrappers, none jumped to 0\n", called);
  return 0;
}

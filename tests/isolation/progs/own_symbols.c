/* Calls its own library's EventId and NowNs: gpuwatch must not take their place. */
#include <stdio.h>
int EventId(int x);
long NowNs(void);
int main(void) {
  printf("EventId(7) = %d, NowNs() = %ld\n", EventId(7), NowNs());
  return 0;
}

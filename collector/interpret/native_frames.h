// How a native stack (a thread without Python: a C++ job, issue 16) is classified, as
// python_frames.h does for Python stacks: the system's libraries (libc, libstdc++, the
// loader, CUDA's and gpuwatch's own) are skipped to the user's code, and what the thread was
// blocked in names the cause: a read is input, a futex wait is waiting for a producer.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace gpuwatch::collector {

// A frame ("function (library)" or "library+0xOFF", as the library names them) of the C or
// C++ runtime, the loader, the vDSO, CUDA, NCCL or gpuwatch.
bool IsSystemFrame(std::string_view frame);

// The innermost frame outside the system's libraries; the innermost when all are; empty for
// an empty stack.
std::string UserNativeFrame(const std::vector<std::string>& stack);

// What a thread blocked in `syscall` waits for: "input" (read, pread64, readv, recvmsg, ...:
// storage or the network), "producer" (futex: a queue or condition another thread fills),
// or "" (anything else, and running).
std::string_view BlockedCause(std::string_view syscall);

}  // namespace gpuwatch::collector

// See native_frames.h.
#include "interpret/native_frames.h"

#include <array>

namespace gpuwatch::collector {
namespace {

// The library of "function (library)" or "library+0xOFF".
std::string_view LibraryOf(std::string_view frame) {
  if (!frame.empty() && frame.back() == ')') {
    const size_t open = frame.rfind(" (");
    if (open != std::string_view::npos) return frame.substr(open + 2, frame.size() - open - 3);
  }
  const size_t plus = frame.rfind("+0x");
  return plus == std::string_view::npos ? frame : frame.substr(0, plus);
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace

bool IsSystemFrame(std::string_view frame) {
  const std::string_view lib = LibraryOf(frame);
  static constexpr std::array kSystem = {"libc.so",   "libc-",       "libpthread", "libstdc++", "libm.so",
                                         "libgcc_s",  "ld-linux",    "ld64.so",    "linux-vdso", "linux-gate",
                                         "libdl.so",  "librt.so",    "libcuda.so", "libcudart",  "libnccl",
                                         "libgpuwatch", "libcupti",  "libnvidia-"};
  for (std::string_view s : kSystem)
    if (StartsWith(lib, s)) return true;
  return StartsWith(frame, "0x");  // outside every library: not the user's code we can name
}

std::string UserNativeFrame(const std::vector<std::string>& stack) {
  for (const std::string& f : stack)
    if (!IsSystemFrame(f)) return f;
  return stack.empty() ? std::string() : stack.front();
}

std::string_view BlockedCause(std::string_view syscall) {
  static constexpr std::array kInput = {"read",     "pread64",  "readv",       "preadv",         "preadv2",
                                        "recvfrom", "recvmsg",  "io_getevents", "io_uring_enter", "poll",
                                        "ppoll",    "select",   "pselect6",    "epoll_wait",     "epoll_pwait"};
  for (std::string_view s : kInput)
    if (syscall == s) return "input";
  if (syscall == "futex") return "producer";
  return "";
}

}  // namespace gpuwatch::collector

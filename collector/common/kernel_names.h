// Kernel names as the library sends them (mangled) and as people read them.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace gpuwatch::collector {

// The demangled name, or the name itself when it is not a mangled C++ name.
std::string DemangleName(const std::string& name);

// A kernel of NCCL's (communication, not computation): raw or demangled name starts with
// "nccl", a leading "void " ignored.
bool IsCommKernelName(const std::string& mangled);

// How many characters a shortened name keeps (an ellipsis included): one line of a table.
inline constexpr size_t kShortNameChars = 80;

// A kernel or frame name for reading: demangled, a leading "void " dropped, each template
// argument list collapsed to "<…>" and a function's parameter list to "(…)", then cut to
// `max_chars` characters with a trailing "…". CUTLASS and cuBLAS kernels run to kilobytes of
// template arguments; what tells them apart is the kernel's own name. Python frames
// ("train.py:9 in <module>") keep their angle brackets: only a '<' right after a C++ name
// opens template arguments. The full name stays in summary.json and the page's tooltips.
std::string ShortName(std::string_view name, size_t max_chars = kShortNameChars);

}  // namespace gpuwatch::collector

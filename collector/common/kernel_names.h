// Kernel names as the library sends them (mangled) and as people read them.
#pragma once
#include <string>

namespace gpuwatch::collector {

// The demangled name, or the name itself when it is not a mangled C++ name.
std::string DemangleName(const std::string& name);

// A kernel of NCCL's (communication, not computation): raw or demangled name starts with
// "nccl", a leading "void " ignored.
bool IsCommKernelName(const std::string& mangled);

}  // namespace gpuwatch::collector

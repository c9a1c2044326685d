#include "common/kernel_names.h"

#include <cxxabi.h>

#include <cstdlib>

namespace gpuwatch::collector {

std::string DemangleName(const std::string& name) {
  if (name.rfind("_Z", 0) != 0) return name;
  int status = 0;
  char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (status != 0 || !d) return name;
  std::string out(d);
  std::free(d);
  return out;
}

bool IsCommKernelName(const std::string& mangled) {
  if (mangled.rfind("nccl", 0) == 0) return true;
  std::string d = DemangleName(mangled);
  if (d.rfind("void ", 0) == 0) d.erase(0, 5);
  return d.rfind("nccl", 0) == 0;
}

}  // namespace gpuwatch::collector

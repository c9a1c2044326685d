// Return addresses named with dladdr and demangled.
#include "enrich/call_site_names.h"

#include <cxxabi.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "record/call_sites.h"

namespace gpuwatch::inject {
namespace {

constexpr int kSentFrames = 16;

std::string Symbolize(void* pc) {
  Dl_info info{};
  char buf[512];
  if (!dladdr(pc, &info) || !info.dli_fname) {
    std::snprintf(buf, sizeof buf, "%p", pc);
    return buf;
  }
  const char* lib = std::strrchr(info.dli_fname, '/');
  lib = lib ? lib + 1 : info.dli_fname;
  if (!info.dli_sname) {
    std::snprintf(buf, sizeof buf, "%s+0x%lx", lib,
                  static_cast<unsigned long>(static_cast<char*>(pc) - static_cast<char*>(info.dli_fbase)));
    return buf;
  }
  int status = 0;
  char* demangled = abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status);
  std::snprintf(buf, sizeof buf, "%s+0x%lx (%s)", status == 0 && demangled ? demangled : info.dli_sname,
                static_cast<unsigned long>(static_cast<char*>(pc) - static_cast<char*>(info.dli_saddr)), lib);
  std::free(demangled);
  return buf;
}

}  // namespace

bool DescribeCallSite(uint32_t id, CallSiteText* out) {
  CapturedSite s;
  if (!FindCallSite(id, &s)) return false;
  out->frames.clear();
  for (int i = 0; i < s.n && i < kSentFrames; ++i) out->frames.push_back(Symbolize(s.pcs[i]));
  out->python = s.python;
  out->python_stack = s.python_stack;
  return true;
}

}  // namespace gpuwatch::inject

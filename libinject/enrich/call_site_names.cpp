// Return addresses named with dladdr and demangled (enrich/native_frame_names.h).
#include "enrich/call_site_names.h"

#include "enrich/native_frame_names.h"
#include "record/call_sites.h"

namespace gpuwatch::inject {
namespace {

constexpr int kSentFrames = 16;

}  // namespace

bool DescribeCallSite(uint32_t id, CallSiteText* out) {
  CapturedSite s;
  if (!FindCallSite(id, &s)) return false;
  out->frames.clear();
  for (int i = 0; i < s.n && i < kSentFrames; ++i) out->frames.push_back(NativeFrameName(reinterpret_cast<uintptr_t>(s.pcs[i]), true));
  out->python = s.python;
  out->python_stack = s.python_stack;
  return true;
}

}  // namespace gpuwatch::inject

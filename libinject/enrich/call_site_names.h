// Call sites named for the collector: the return addresses a hook captured
// (record/call_sites.h), symbolized with dladdr on the sender thread.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace gpuwatch::inject {

struct CallSiteText {
  std::vector<std::string> frames;  // "symbol+0x1c (libfoo.so)", innermost first, at most 16
  std::string python;               // innermost Python frame, "train.py:42 in step", or empty
  uint32_t python_stack = 0;        // record/python_stacks.h id of its Python stack, or 0
};

// Sender thread: site `id` symbolized. False for an unknown id.
bool DescribeCallSite(uint32_t id, CallSiteText* out);

}  // namespace gpuwatch::inject

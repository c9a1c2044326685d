// Python stacks interned for the wire: a call site's stack (call_sites.h) and the host
// sampler's (enrich/host_sampler.h) share one table, so a stack seen a thousand times is
// sent once. Bounded: kMaxPythonStacks, then 0 (no stack).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "record/python_stack.h"

namespace gpuwatch::inject {

constexpr size_t kMaxPythonStacks = 4096;

// Id of the stack `frames[0..n)` (innermost first), 1-based; 0 for an empty stack or a full
// table. Takes a lock: called after a long wait (a call site) or on the sampler's thread.
uint32_t InternPythonStack(const PyFrameText* frames, int n);

// Sender thread: the frames of stack `id`, innermost first. False for an unknown id.
bool FindPythonStack(uint32_t id, std::vector<std::string>* frames);

}  // namespace gpuwatch::inject

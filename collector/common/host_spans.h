// What the trace recorded the host doing, thread by thread: the spans of its CPU operators
// (cpu_op: aten::conv2d, ...) and CUDA runtime/driver calls, reduced to each thread's
// top-level ones (a span inside another of its thread is that one's time). The importer
// reads them (import/rank_import.h: keep_host_spans); the product's own figures do not need
// them (the interpret stage sees the calls it models); comparing a critical path with HTA's
// does (analyze/hta_path.h): HTA weighs a thread's time inside its top-level operators and
// calls, and nothing between them. Here, in common/, because both of those stages read it.
#pragma once
#include <cstdint>
#include <vector>

namespace gpuwatch::collector {

struct HostSpan {
  uint64_t start_ns = 0, end_ns = 0;
  uint32_t tid = 0;
};

// `spans` in any order; returns each thread's top-level spans, by thread then start. A span
// nests in another of its thread when it starts inside it (Kineto's operators nest whole).
std::vector<HostSpan> TopLevelHostSpans(std::vector<HostSpan> spans);

}  // namespace gpuwatch::collector

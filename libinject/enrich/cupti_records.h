// CUPTI's activity records read into ActivityRecord (enrich/cupti_reader.h): the kinds
// gpuwatch enables, their times moved onto CLOCK_MONOTONIC.
#pragma once
#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <functional>

#include "enrich/cupti_reader.h"

namespace gpuwatch::inject {

using NextRecordFn = decltype(&cuptiActivityGetNextRecord);

// Hands every record of one completed buffer to `fn`, with CLOCK_MONOTONIC = CUPTI time -
// `offset_ns`. Records of other kinds (CUPTI's own overhead records, anything else) are
// skipped, never counted as GPU work. Device records without times (work still running when a
// forced flush took its buffer: CUPTI writes 0 for both) are skipped and counted in
// `incomplete`.
void ParseActivityBuffer(NextRecordFn next_record, int64_t offset_ns, uint8_t* buffer, size_t valid,
                         const std::function<void(const ActivityRecord&)>& fn, uint64_t& incomplete);

}  // namespace gpuwatch::inject

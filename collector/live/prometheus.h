// A LiveSnapshot in the Prometheus text exposition format, version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/): one # HELP and # TYPE
// line per family, then its samples, base units in names (_seconds_total, _bytes_total,
// _ratio). Labels: job_id, host, rank (and pid when two processes claim the same rank).
// The job is `job_id`, not `job`: Prometheus sets `job` itself to the scrape job's name
// and would rename ours to exported_job.
#pragma once
#include <string>

#include "live/snapshot.h"

namespace gpuwatch::collector {

inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

std::string FormatPrometheus(const LiveSnapshot& snap);

// A label value with \, " and newline escaped as the format requires.
std::string EscapeLabelValue(const std::string& v);

}  // namespace gpuwatch::collector

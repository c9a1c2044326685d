#include "live/snapshot.h"

#include <set>

namespace gpuwatch::collector {
namespace {

double Num(const nlohmann::json& j, const char* a, const char* b = nullptr) {
  const nlohmann::json* p = &j;
  for (const char* k : {a, b}) {
    if (!k) break;
    if (!p->is_object() || !p->contains(k)) return 0;
    p = &(*p)[k];
  }
  return p->is_number() ? p->get<double>() : 0;
}

// The analyses a live view needs; the others (kernels: names, findings) cost more and say
// nothing a counter can.
bool Wanted(const std::string& name) {
  static const std::set<std::string> kWanted = {"sync", "memcpy", "collectives", "gpu",
                                                "dropped", "steps"};
  return kWanted.count(name) > 0;
}

RankSample Sample(const Job& job, const RankAggregate& r) {
  RankSample s;
  s.job = job.id();
  s.host = r.hello().host();
  s.rank = r.hello().rank();
  s.pid = static_cast<int>(r.hello().pid());
  s.connected = r.open_connections() > 0;
  s.events = r.events();
  // Through WriteJson, so a live figure is by construction the one summary.json shows.
  nlohmann::json j = nlohmann::json::object();
  for (const auto& a : r.analyses())
    if (Wanted(a->name())) a->WriteJson(j);
  s.sync_s = Num(j, "sync", "total_s");
  s.h2d_bytes = static_cast<uint64_t>(Num(j["memcpy"], "h2d", "bytes"));
  s.h2d_pageable_bytes = static_cast<uint64_t>(Num(j["memcpy"], "h2d", "pageable_bytes"));
  if (j.contains("gpu") && j["gpu"]["busy_s"].is_number()) {
    s.has_gpu = true;
    s.gpu_busy_s = Num(j, "gpu", "busy_s");
    s.gpu_active_s = Num(j, "gpu", "active_s");
  }
  if (j.contains("collectives") && j["collectives"].is_object())
    for (const auto& [op, v] : j["collectives"].items())
      s.ops.push_back({op, static_cast<uint64_t>(Num(v, "count")),
                       static_cast<uint64_t>(Num(v, "bytes")), Num(v, "total_s"),
                       Num(v, "busbw_gbps") * 1e9});
  s.steps = static_cast<uint64_t>(Num(j, "steps", "count"));
  s.dropped = static_cast<uint64_t>(Num(j, "dropped_total"));
  return s;
}

}  // namespace

LiveSnapshot TakeSnapshot(const JobTable& jobs, Clock::time_point now) {
  LiveSnapshot snap;
  snap.at = now;
  jobs.ForEach([&](const Job& job) {
    ++snap.jobs;
    for (const auto& [key, rank] : job.ranks()) {
      RankSample s = Sample(job, *rank);
      snap.ranks_connected += s.connected ? 1 : 0;
      snap.events += s.events;
      snap.dropped += s.dropped;
      if (s.has_gpu) {
        snap.gpu_busy_s += s.gpu_busy_s;
        snap.gpu_active_s += s.gpu_active_s;
      }
      snap.ranks.push_back(std::move(s));
    }
  });
  return snap;
}

}  // namespace gpuwatch::collector

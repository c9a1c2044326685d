// See truth.h.
#include "truth.h"

#include <cstdio>
#include <fstream>
#include <stdexcept>

namespace gpuwatch::scenario {

nlohmann::json TruthRecorder::to_json(int rank) const {
  nlohmann::json j = extra_;
  j["rank"] = rank;
  nlohmann::json ops = nlohmann::json::object();
  for (const auto& [name, e] : ops_)
    ops[name] = {{"count", e.count}, {"bytes", e.bytes}, {"total_s", e.total_s}, {"preempted_s", e.preempted_s}};
  j["ops"] = ops;
  if (!blocks_.empty()) {
    nlohmann::json blocks = nlohmann::json::object();
    for (const auto& [b, n] : blocks_) blocks[std::to_string(b)] = n;
    j["kernel_blocks"] = blocks;
  }
  return j;
}

void TruthRecorder::write(const std::string& dir, int rank) const {
  const std::string path = dir + "/truth-rank-" + std::to_string(rank) + ".json";
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    if (!out) throw std::runtime_error("cannot write " + tmp);
    out << to_json(rank).dump(2) << "\n";
    if (!out) throw std::runtime_error("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot rename " + tmp + " to " + path);
}

}  // namespace gpuwatch::scenario

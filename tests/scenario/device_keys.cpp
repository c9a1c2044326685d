// See device_keys.h. Defaults (the simulator's): memory_gib 141, sm_count 132, PCIe gen 5
// x16, throttle "none", no other processes.
#include "device_keys.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace gpuwatch::scenario {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& source, const std::string& key, const std::string& what) {
  throw ScenarioError(source + ": gpu." + key + ": " + what);
}

double positive_number(const json& v, const std::string& source, const std::string& key) {
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0) fail(source, key, "expected a number > 0");
  return v.get<double>();
}

int integer_in(const json& v, int lo, int hi, const std::string& source, const std::string& key) {
  if (!v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi)
    fail(source, key, "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi));
  return static_cast<int>(v.get<std::int64_t>());
}

}  // namespace

bool parse_device_key(Scenario& sc, const std::string& key, const json& v, const std::string& source) {
  if (key == "memory_gib") {
    sc.gpu[key] = positive_number(v, source, key);
  } else if (key == "sm_count") {
    sc.gpu[key] = integer_in(v, 1, 1024, source, key);
  } else if (key == "pcie_gen") {
    sc.gpu[key] = integer_in(v, 1, 5, source, key);
  } else if (key == "pcie_width") {
    const int w = integer_in(v, 1, 16, source, key);
    if (w != 1 && w != 2 && w != 4 && w != 8 && w != 16) fail(source, key, "expected 1, 2, 4, 8 or 16 lanes");
    sc.gpu[key] = w;
  } else if (key == "nvlink_links") {
    sc.gpu[key] = integer_in(v, 0, 18, source, key);
  } else if (key == "numa_node") {
    sc.gpu[key] = integer_in(v, 0, 1, source, key);
  } else if (key == "throttle") {
    const std::string t = v.is_string() ? v.get<std::string>() : "";
    if (t != "none" && t != "power" && t != "thermal") fail(source, key, "expected \"none\", \"power\" or \"thermal\"");
    sc.gpu_text[key] = t;
  } else if (key == "other_processes") {
    if (!v.is_array()) fail(source, key, "expected an array of {\"memory_gib\": x, \"busy\": fraction}");
    std::ostringstream text;
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string at = key + "[" + std::to_string(i) + "]";
      const json& p = v[i];
      if (!p.is_object()) fail(source, at, "expected {\"memory_gib\": x, \"busy\": fraction}");
      double gib = 0, busy = 0;
      for (auto it = p.begin(); it != p.end(); ++it) {
        const json& x = it.value();
        const bool number = x.is_number() && std::isfinite(x.get<double>());
        if (it.key() == "memory_gib") {
          if (!number || x.get<double>() < 0) fail(source, at + ".memory_gib", "expected a number >= 0");
          gib = x.get<double>();
        } else if (it.key() == "busy") {
          if (!number || x.get<double>() < 0 || x.get<double>() > 1) fail(source, at + ".busy", "expected a fraction from 0 to 1");
          busy = x.get<double>();
        } else {
          fail(source, at + "." + it.key(), "unknown key");
        }
      }
      text << (i ? ";" : "") << gib << ":" << busy;
    }
    sc.gpu_text[key] = text.str();
  } else {
    return false;
  }
  return true;
}

double pcie_link_fraction(const Scenario& sc) {
  static const double kLaneGbps[] = {0, 0.25, 0.5, 0.985, 1.969, 3.938};  // tests/sim/model/config.h
  const auto gen = sc.gpu.find("pcie_gen"), width = sc.gpu.find("pcie_width");
  const int g = gen == sc.gpu.end() ? 5 : static_cast<int>(gen->second);
  const double w = width == sc.gpu.end() ? 16 : width->second;
  return kLaneGbps[g] * w / (kLaneGbps[5] * 16);
}

double kernel_slowdown(const Scenario& sc) {
  const auto t = sc.gpu_text.find("throttle");
  const std::string throttle = t == sc.gpu_text.end() ? "none" : t->second;
  const double share = throttle == "power" ? 0.75 : throttle == "thermal" ? 0.6 : 1.0;
  double busy = 0;
  if (const auto o = sc.gpu_text.find("other_processes"); o != sc.gpu_text.end()) {
    std::istringstream in(o->second);  // "GIB:BUSY;GIB:BUSY", as parse_device_key wrote it
    for (std::string item; std::getline(in, item, ';');)
      if (const size_t colon = item.find(':'); colon != std::string::npos) busy += std::stod(item.substr(colon + 1));
  }
  return 1.0 / (share * (1.0 - std::min(busy, 0.9)));
}

}  // namespace gpuwatch::scenario

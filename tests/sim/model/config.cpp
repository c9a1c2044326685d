#include "config.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace simgpu {

namespace {
struct Key {
  const char* name;
  double Config::*field;
};
constexpr Key kKeys[] = {
    {"h2d_pinned_gbps", &Config::h2d_pinned_gbps},
    {"h2d_pageable_gbps", &Config::h2d_pageable_gbps},
    {"d2h_gbps", &Config::d2h_gbps},
    {"d2h_pageable_gbps", &Config::d2h_pageable_gbps},
    {"d2d_gbps", &Config::d2d_gbps},
    {"memset_gbps", &Config::memset_gbps},
    {"busbw_gbps", &Config::busbw_gbps},
    {"coll_latency_us", &Config::coll_latency_us},
    {"nccl_launch_us", &Config::nccl_launch_us},
    {"launch_us", &Config::launch_us},
    {"default_kernel_us", &Config::default_kernel_us},
    {"devices", &Config::devices},
    {"cuda_version", &Config::cuda_version},
    {"driver_version", &Config::driver_version},
    {"nccl_version", &Config::nccl_version},
    {"memory_gib", &Config::memory_gib},
    {"sm_count", &Config::sm_count},
    {"pcie_gen", &Config::pcie_gen},
    {"pcie_width", &Config::pcie_width},
    {"nvlink_links", &Config::nvlink_links},
    {"numa_node", &Config::numa_node},
};

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t");
  size_t e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}
}  // namespace

const double* Config::find(const std::string& key) const {
  for (const Key& k : kKeys)
    if (key == k.name) return &(this->*k.field);
  return nullptr;
}

bool Config::parse(const std::string& text, std::string& error) {
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string item = trim(text.substr(pos, comma - pos));
    pos = comma + 1;
    if (item.empty()) continue;
    size_t eq = item.find('=');
    std::string key = trim(item.substr(0, eq));
    if (eq != std::string::npos && (key == "throttle" || key == "other_processes")) {
      if (!parse_text_key(key, trim(item.substr(eq + 1)), error)) return false;
      continue;
    }
    const Key* found = nullptr;
    for (const Key& k : kKeys)
      if (key == k.name) found = &k;
    if (!found) {
      error = "unknown key '" + key + "'";
      return false;
    }
    if (eq == std::string::npos) {
      error = "key '" + key + "' has no value (expected " + key + "=NUMBER)";
      return false;
    }
    std::string value = trim(item.substr(eq + 1));
    char* end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !std::isfinite(v) || v < 0) {
      error = "key '" + key + "' has bad value '" + value + "' (expected a number >= 0)";
      return false;
    }
    if (key == "devices" && (v < 1 || v != std::floor(v))) {
      error = "key 'devices' has bad value '" + value + "' (expected an integer >= 1)";
      return false;
    }
    this->*(found->field) = v;
  }
  return true;
}

bool Config::parse_text_key(const std::string& key, const std::string& value, std::string& error) {
  if (key == "throttle") {
    if (value == "none") throttle = kThrottleNone;
    else if (value == "power") throttle = kThrottlePower;
    else if (value == "thermal") throttle = kThrottleThermal;
    else {
      error = "key 'throttle' has bad value '" + value + "' (expected none, power or thermal)";
      return false;
    }
    return true;
  }
  other_processes.clear();
  size_t pos = 0;
  while (pos < value.size()) {
    size_t semi = value.find(';', pos);
    if (semi == std::string::npos) semi = value.size();
    const std::string one = value.substr(pos, semi - pos);
    pos = semi + 1;
    OtherProcess p;
    char* end = nullptr;
    p.memory_gib = std::strtod(one.c_str(), &end);
    if (*end == ':') p.busy = std::strtod(end + 1, &end);
    if (one.empty() || *end != '\0' || !(p.memory_gib >= 0) || !(p.busy >= 0 && p.busy <= 1)) {
      error = "key 'other_processes' has bad value '" + value + "' (expected GIB:BUSY;GIB:BUSY, busy 0..1)";
      return false;
    }
    other_processes.push_back(p);
  }
  return true;
}

const Config& config() {
  static const Config cfg = [] {
    Config c;
    const char* env = std::getenv("SIMGPU_CONFIG");
    std::string error;
    if (env && !c.parse(env, error)) {
      std::fprintf(stderr, "simgpu: SIMGPU_CONFIG: %s\n", error.c_str());
      std::fflush(stderr);
      _exit(2);  // no atexit handlers: the truth file of a misconfigured run would lie
    }
    return c;
  }();
  return cfg;
}

}  // namespace simgpu

// A count of things with their bytes and time: the unit most figures are made of.
#pragma once
#include <cstdint>

namespace gpuwatch::collector {

struct Tally {
  uint64_t count = 0, bytes = 0, ns = 0;
  void Note(uint64_t b, uint64_t t) {
    ++count;
    bytes += b;
    ns += t;
  }
  void Add(const Tally& o) {
    count += o.count;
    bytes += o.bytes;
    ns += o.ns;
  }
};

}  // namespace gpuwatch::collector

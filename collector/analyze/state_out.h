// A rank checkpoint being written (checkpoint_access.h): MessagePack appended as the state
// is walked, so that the state is never held twice. Containers write their array header
// here; every value inside them is encoded by nlohmann-json, so the bytes are those
// json::to_msgpack writes for the same tree, and json::from_msgpack reads them back.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace gpuwatch::collector {

class StateOut {
 public:
  // An array of `n` elements follows: the header json::to_msgpack writes (the smallest form).
  void Array(size_t n) {
    if (n <= 15) {
      bytes_.push_back(static_cast<char>(0x90 | n));
    } else if (n <= 0xffff) {
      bytes_.push_back(static_cast<char>(0xdc));
      Big(n, 2);
    } else if (n <= 0xffffffffULL) {
      bytes_.push_back(static_cast<char>(0xdd));
      Big(n, 4);
    } else {
      throw std::length_error("a checkpoint array of more than 2^32 elements");
    }
  }
  // One value as its JSON (a number, a string, a figures struct of digest_fields.h).
  template <class T>
  void Leaf(const T& v) {
    scratch_ = v;
    nlohmann::json::to_msgpack(scratch_, bytes_);
  }
  const std::string& bytes() const { return bytes_; }
  std::string Take() { return std::move(bytes_); }

 private:
  void Big(uint64_t v, int n) {
    for (int i = n - 1; i >= 0; --i) bytes_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }

  std::string bytes_;
  nlohmann::json scratch_;
};

}  // namespace gpuwatch::collector

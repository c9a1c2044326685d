// See python_stacks.h.
#include "record/python_stacks.h"

#include <cstring>
#include <mutex>
#include <unordered_map>

#include "record/registry.h"

namespace gpuwatch::inject {
namespace {

struct Stacks {
  std::mutex mu;
  std::vector<std::vector<std::string>> all;  // id - 1
  std::unordered_multimap<uint64_t, uint32_t> by_hash;
};

Stacks& S() {
  static Stacks* s = new Stacks;  // leaked: hooks may run during exit
  return *s;
}

bool Same(const std::vector<std::string>& a, const PyFrameText* frames, int n) {
  if (a.size() != static_cast<size_t>(n)) return false;
  for (int i = 0; i < n; ++i)
    if (a[static_cast<size_t>(i)] != frames[i].where) return false;
  return true;
}

}  // namespace

uint32_t InternPythonStack(const PyFrameText* frames, int n) {
  if (n <= 0) return 0;
  uint64_t h = 0;
  for (int i = 0; i < n; ++i) h = h * 1000003 ^ HashBytes(frames[i].where, std::strlen(frames[i].where));
  Stacks& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  auto [lo, hi] = s.by_hash.equal_range(h);
  for (auto it = lo; it != hi; ++it)
    if (Same(s.all[it->second - 1], frames, n)) return it->second;
  if (s.all.size() >= kMaxPythonStacks) return 0;
  std::vector<std::string> stack;
  for (int i = 0; i < n; ++i) stack.emplace_back(frames[i].where);
  s.all.push_back(std::move(stack));
  const auto id = static_cast<uint32_t>(s.all.size());
  s.by_hash.emplace(h, id);
  return id;
}

bool FindPythonStack(uint32_t id, std::vector<std::string>* frames) {
  Stacks& s = S();
  std::lock_guard<std::mutex> lock(s.mu);
  if (id == 0 || id > s.all.size()) return false;
  *frames = s.all[id - 1];
  return true;
}

}  // namespace gpuwatch::inject

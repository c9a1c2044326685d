// The kernel-name and communicator tables, and the hash both use.
#include "record/registry.h"

#include "fnv1a.h"

namespace gpuwatch::inject {

KernelNames& Kernels() {
  static KernelNames* k = new KernelNames;  // leaked: hooks may run during exit
  return *k;
}

Comms& Communicators() {
  static Comms* c = new Comms;
  return *c;
}

uint64_t HashBytes(const void* p, size_t n) { return Fnv1a(p, n); }

uint32_t KernelNames::Register(const void* host_fun, const char* device_name) {
  uint32_t id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (names_.size() >= kMaxNames) {
      overflow_.fetch_add(1, std::memory_order_relaxed);
      return 0;
    }
    names_.push_back(device_name ? device_name : "?");
    id = static_cast<uint32_t>(names_.size());
  }
  if (!table_.Put(host_fun, id)) overflow_.fetch_add(1, std::memory_order_relaxed);
  return id;
}

void KernelNames::Alias(const void* handle, const void* host_fun) {
  const uint64_t id = table_.Find(host_fun);
  if (id && !table_.Put(handle, id)) overflow_.fetch_add(1, std::memory_order_relaxed);
}

uint32_t KernelNames::Intern(const char* name) {
  if (!name) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_name_.find(name);
  if (it != by_name_.end()) return it->second;
  if (by_name_.size() >= kMaxInterned || names_.size() >= kMaxNames) {
    overflow_.fetch_add(1, std::memory_order_relaxed);
    return 0;
  }
  const auto id = static_cast<uint32_t>(names_.size() + 1);
  names_.push_back(by_name_.emplace(name, id).first->first.c_str());
  return id;
}

std::string KernelNames::Name(uint32_t id) {
  std::lock_guard<std::mutex> lock(mu_);
  return id >= 1 && id <= names_.size() ? std::string(names_[id - 1]) : std::string();
}

CommInfo* Comms::Register(const void* comm, int nranks, int rank, uint64_t unique_hash, const CommOrigin& made) {
  std::lock_guard<std::mutex> lock(mu_);
  if (count_ == kMax) return nullptr;
  CommInfo& c = infos_[count_];
  c.id = count_ + 1;
  c.nranks = nranks;
  c.rank = rank;
  c.unique_hash = unique_hash;
  c.made = made;
  c.next_seq.store(0, std::memory_order_relaxed);
  if (!table_.Put(comm, c.id)) return nullptr;
  ++count_;
  if (nranks > 1 && !first_.load(std::memory_order_relaxed)) first_.store(&c, std::memory_order_release);
  return &c;
}

void Comms::End(const void* comm, uint32_t how) {
  CommInfo* c = Find(comm);
  if (!c) return;
  c->ended.store(how, std::memory_order_relaxed);
  table_.Put(comm, 0);  // Find now says absent
  ends_.fetch_add(1, std::memory_order_release);
}

std::vector<const CommInfo*> Comms::Since(uint64_t after) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<const CommInfo*> out;
  for (size_t i = after; i < count_; ++i) out.push_back(&infos_[i]);
  return out;
}

}  // namespace gpuwatch::inject

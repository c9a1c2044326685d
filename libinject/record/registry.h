// Names and communicators the hooks learn outside the hot path (kernel registration at
// module load, communicator creation), looked up lock-free on the hot path by pointer,
// and handed to the sender thread as they appear.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "record/ptr_table.h"

namespace gpuwatch::inject {

// Kernel (and NVTX message) names, one id space. A framework registers tens of thousands of
// kernels when it loads and launches a few hundred, so a registration keeps only the
// pointer to the name (static data of the library that registered it) and the sender
// copies and sends a name the first time a record uses it.
class KernelNames {
 public:
  // Registers the device name of a host stub (from __cudaRegisterFunction). Returns its id
  // (0 when the table is full).
  uint32_t Register(const void* host_fun, const char* device_name);
  // A cudaKernel_t handle (from __cudaGetKernel) that stands for `host_fun`.
  void Alias(const void* handle, const void* host_fun);
  // The id of a name seen in a CUPTI record (same id space as registered names).
  uint32_t Intern(const char* name);
  uint32_t Find(const void* fun_or_handle) const { return static_cast<uint32_t>(table_.Find(fun_or_handle)); }
  // The name of `id` (ids are dense from 1), empty if unknown.
  std::string Name(uint32_t id);
  uint64_t overflow() const { return overflow_.load(std::memory_order_relaxed); }

 private:
  PtrTable<1 << 17> table_;
  std::mutex mu_;
  // Registered names point into the registering library; interned ones into by_name_'s
  // keys (node-based: stable addresses).
  std::vector<const char*> names_;
  std::unordered_map<std::string, uint32_t> by_name_;  // bounded by kMaxInterned
  static constexpr size_t kMaxInterned = 1 << 16;
  static constexpr size_t kMaxNames = 1 << 17;
  std::atomic<uint64_t> overflow_{0};
};

// How a communicator was made (proto Communicator.Origin and the split's arguments).
// How a communicator came to be, and how it ended: the values of wire::Communicator's
// Origin and ended fields (gpuwatch.proto).
enum CommMadeBy : uint32_t { kMadeByInitRank = 1, kMadeBySplit = 2, kMadeByInitAll = 3, kFirstUse = 4 };
enum CommEnd : uint32_t { kDestroyed = 1, kAborted = 2 };

struct CommOrigin {
  uint32_t origin = kFirstUse;  // CommMadeBy
  uint64_t parent_hash = 0, split_index = 0;
  int color = 0, key = 0;
};

struct CommInfo {
  uint64_t id = 0;
  int nranks = 0;
  int rank = 0;
  uint64_t unique_hash = 0;
  CommOrigin made;
  std::atomic<uint64_t> splits{0};  // ncclCommSplit calls made on it: its children's split_index
  std::atomic<uint32_t> ended{0};   // CommEnd; 0: alive
  mutable bool end_sent = false;    // the sender thread's alone: the ended definition went out
  std::atomic<uint64_t> next_seq{0};
  std::atomic<uint64_t> returned{0};  // 1 + the highest seq whose call returned; 0: none yet
  void MarkReturned(uint64_t seq) {
    uint64_t cur = returned.load(std::memory_order_relaxed);
    while (cur < seq + 1 && !returned.compare_exchange_weak(cur, seq + 1, std::memory_order_relaxed)) {}
  }
};

class Comms {
 public:
  static constexpr size_t kMax = 1024;
  // Returns the info for `comm`, or nullptr if the table is full.
  CommInfo* Register(const void* comm, int nranks, int rank, uint64_t unique_hash, const CommOrigin& made = {});
  // ncclCommDestroy/Abort returned: the definition is sent again with `how`, and the pointer,
  // which NCCL may hand out again, no longer finds it.
  void End(const void* comm, uint32_t how);
  // Bumped by End: the sender looks for ended definitions to send only when it moved.
  uint64_t EndCount() const { return ends_.load(std::memory_order_acquire); }
  CommInfo* Find(const void* comm) const {
    const uint64_t i = table_.Find(comm);
    return i ? &infos_[i - 1] : nullptr;
  }
  // Communicators with id > `after`.
  std::vector<const CommInfo*> Since(uint64_t after);
  // Every communicator (for the heartbeat).
  std::vector<const CommInfo*> All() { return Since(0); }
  // First communicator of more than one rank seen, for processes that have no rank variables.
  const CommInfo* First() const { return first_.load(std::memory_order_acquire); }

 private:
  PtrTable<4096> table_;
  mutable CommInfo infos_[kMax];
  std::mutex mu_;
  size_t count_ = 0;
  std::atomic<const CommInfo*> first_{nullptr};
  std::atomic<uint64_t> ends_{0};
};

// Comms ids are 1..kMax: Record::comm_id (record.h) keeps them in 32 bits.
static_assert(Comms::kMax <= UINT32_MAX, "a Comms id must fit Record::comm_id");

KernelNames& Kernels();
Comms& Communicators();

uint64_t HashBytes(const void* p, size_t n);

}  // namespace gpuwatch::inject

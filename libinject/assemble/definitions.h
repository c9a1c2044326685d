// What the ids in events stand for (kernel and range names, call sites, communicators) and
// where the GPU timeline comes from: each sent once, with the first batch that uses it.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "enrich/call_site_names.h"
#include "enrich/native_frame_names.h"
#include "record/python_stacks.h"
#include "record/registry.h"

namespace gpuwatch::inject {

class Definitions {
 public:
  // Where definitions are looked up (the process's registries; tests give their own).
  struct Sources {
    KernelNames* names = &Kernels();
    Comms* comms = &Communicators();
    bool (*describe_site)(uint32_t id, CallSiteText* out) = DescribeCallSite;
    bool (*find_stack)(uint32_t id, std::vector<std::string>* frames) = FindPythonStack;
    bool (*find_native)(uint32_t id, NativeStackText* out) = FindNativeStack;
  };
  explicit Definitions(Sources s) : src_(s) {}

  // A record uses kernel or range name `id`: it goes out with this batch's definitions.
  void UseName(uint32_t id);
  // A record uses call site `id`: appended to `batch` now, symbolized, unless sent before.
  void UseSite(uint32_t id, std::string& batch);
  // A host sample uses Python stack `id` (or a native one, kNativeStackIdBase and up):
  // appended to `batch` now unless sent before.
  void UseStack(uint32_t id, std::string& batch);
  // Appends the GPU source when it changed, the names used since the last call, and the
  // communicators created since. `frames_lost`: frames the transport could not keep so far;
  // when it grows, lost frames may have carried definitions, so every one is sent again on
  // its next use (the collector takes a repeated definition as the same one).
  void AppendDue(std::string& batch, int gpu_source, std::string_view gpu_source_detail, uint64_t frames_lost);

 private:
  Sources src_;
  std::vector<bool> name_sent_;              // by name id (dense and bounded)
  std::vector<uint32_t> names_due_;          // used in this batch, not sent before
  std::unordered_set<uint32_t> sites_sent_;  // call site ids (at most kMaxCallSites)
  std::unordered_set<uint32_t> stacks_sent_;  // stack ids (kMaxPythonStacks + NativeFrameNames::kMaxStacks)
  uint64_t comms_sent_ = 0;                  // communicators with ids up to this one went out
  uint64_t ends_seen_ = 0;                   // Comms::EndCount() when ended ones were last sent
  int source_sent_ = 0;
  std::string detail_sent_;
  uint64_t lost_seen_ = 0;
};

}  // namespace gpuwatch::inject

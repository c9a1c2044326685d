// The codec of a rank's interpretation state (rank_checkpoint.h). CheckpointAccess is a
// friend of each class whose state a checkpoint carries; one field list per class, used
// both ways (GW_STATE: interpret_state.cpp, analyze_state.cpp), and containers encoded so
// that the restored one behaves as the original, iteration order included. Saving writes
// MessagePack as it walks the state (StateOut): a launch-heavy rank's state is a few MB of
// it, and as one JSON tree it had been tens of MB at each checkpoint. Loading reads the
// tree nlohmann-json decodes.
#pragma once
#include <array>
#include <deque>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyze/digest_fields.h"
#include "analyze/state_out.h"
#include "analyze/rank_model.h"
#include "common/fifo.h"

namespace gpuwatch::collector {

// Declares Save/Load of one class in CheckpointAccess; GW_STATE defines them.
#define GW_STATE_DECL(Type)                     \
  static void Save(StateOut& o, const Type& v); \
  static void Load(const json& j, Type& v);

#define GW_STATE_SAVE(f) Save(o, v.f);
#define GW_STATE_LOAD(f) Load(j.at(i++), v.f);
// A member added to Type changes its size and fails the build here: add it to the list,
// bump kRankCheckpointFormat (rank_checkpoint.h), then write the new size. Sizes of x86-64
// with libstdc++, the platform the project builds on.
#if defined(__x86_64__) && defined(__GLIBCXX__)
#define GW_STATE_SIZE(Type, Size) \
  static_assert(sizeof(Type) == (Size), #Type " changed: carry the new member in its checkpoint list");
#else
#define GW_STATE_SIZE(Type, Size)
#endif
#define GW_STATE_ONE(f) +1
// The state of Type (Size bytes) as the array of its listed members, in that order.
#define GW_STATE(Type, Size, ...)                                             \
  void CheckpointAccess::Save(StateOut& o, const Type& v) {                   \
    GW_STATE_SIZE(Type, Size)                                                 \
    o.Array(0 NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(GW_STATE_ONE, __VA_ARGS__))); \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(GW_STATE_SAVE, __VA_ARGS__))     \
  }                                                                           \
  void CheckpointAccess::Load(const json& j, Type& v) {                       \
    if (!j.is_array()) throw std::runtime_error(#Type ": not an array");     \
    size_t i = 0;                                                             \
    NLOHMANN_JSON_EXPAND(NLOHMANN_JSON_PASTE(GW_STATE_LOAD, __VA_ARGS__))     \
    (void)i;                                                                  \
  }

struct CheckpointAccess {
  // Numbers, enums, strings, and the figures' structs of digest_fields.h.
  template <class T>
  static void Save(StateOut& o, const T& v) { o.Leaf(v); }
  template <class T>
  static void Load(const json& j, T& v) { j.get_to(v); }

  // Containers of anything this struct encodes.
  template <class A, class B>
  static void Save(StateOut& o, const std::pair<A, B>& v) {
    o.Array(2);
    Save(o, v.first);
    Save(o, v.second);
  }
  template <class A, class B>
  static void Load(const json& j, std::pair<A, B>& v) {
    Load(j.at(0), v.first);
    Load(j.at(1), v.second);
  }
  template <class... T>
  static void Save(StateOut& o, const std::tuple<T...>& v) {
    o.Array(sizeof...(T));
    std::apply([&](const auto&... x) { (Save(o, x), ...); }, v);
  }
  template <class... T>
  static void Load(const json& j, std::tuple<T...>& v) {
    size_t i = 0;
    std::apply([&](auto&... x) { (Load(j.at(i++), x), ...); }, v);
  }
  template <class T, size_t N>
  static void Save(StateOut& o, const std::array<T, N>& v) { SaveRange(o, v); }
  template <class T, size_t N>
  static void Load(const json& j, std::array<T, N>& v) {
    if (j.size() != N) throw std::runtime_error("array of the wrong length");
    for (size_t i = 0; i < N; ++i) Load(j.at(i), v[i]);
  }
  template <class T, class A>
  static void Save(StateOut& o, const std::vector<T, A>& v) { SaveRange(o, v); }
  template <class T, class A>
  static void Load(const json& j, std::vector<T, A>& v) { LoadSequence(j, v); }
  static void Save(StateOut& o, const std::vector<bool>& v) { o.Leaf(v); }
  static void Load(const json& j, std::vector<bool>& v) { j.get_to(v); }
  template <class T, class A>
  static void Save(StateOut& o, const std::deque<T, A>& v) { SaveRange(o, v); }
  template <class T, class A>
  static void Load(const json& j, std::deque<T, A>& v) { LoadSequence(j, v); }
  template <class T>
  static void Save(StateOut& o, const Fifo<T>& v) {
    o.Array(v.size());
    for (size_t i = 0; i < v.size(); ++i) Save(o, v[i]);
  }
  template <class T>
  static void Load(const json& j, Fifo<T>& v) {
    while (!v.empty()) v.pop_front();
    for (const json& e : j) Load(e, v.emplace_back());
  }
  // Ordered maps (and multimaps): in order, so equal keys keep theirs.
  template <class K, class V, class C, class A>
  static void Save(StateOut& o, const std::map<K, V, C, A>& v) { SaveRange(o, v); }
  template <class K, class V, class C, class A>
  static void Load(const json& j, std::map<K, V, C, A>& v) { LoadOrdered(j, v); }
  template <class K, class V, class C, class A>
  static void Save(StateOut& o, const std::multimap<K, V, C, A>& v) { SaveRange(o, v); }
  template <class K, class V, class C, class A>
  static void Load(const json& j, std::multimap<K, V, C, A>& v) { LoadOrdered(j, v); }
  // Hash maps: [bucket count, entries in iteration order]. Inserted back in reverse order
  // into as many buckets, each entry goes to the front of its bucket's run (libstdc++), so
  // the restored map iterates in the original order and rehashes when the original would.
  template <class K, class V, class H, class E, class A>
  static void Save(StateOut& o, const std::unordered_map<K, V, H, E, A>& v) {
    o.Array(2);
    o.Leaf(v.bucket_count());
    SaveRange(o, v);
  }
  template <class K, class V, class H, class E, class A>
  static void Load(const json& j, std::unordered_map<K, V, H, E, A>& v) {
    v.clear();
    // One bucket is a map that never held anything (no array yet): rehash(1) would make two.
    if (const size_t buckets = j.at(0).get<size_t>(); buckets > 1) v.rehash(buckets);
    const json& entries = j.at(1);
    for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
      std::pair<K, V> e;
      Load(*it, e);
      v.emplace(std::move(e));
    }
  }
  // A heap: its array as it is, so equal keys come out in the original order.
  template <class T, class C, class Cmp>
  static void Save(StateOut& o, const std::priority_queue<T, C, Cmp>& v) {
    Save(o, HeapOf(const_cast<std::priority_queue<T, C, Cmp>&>(v)));
  }
  template <class T, class C, class Cmp>
  static void Load(const json& j, std::priority_queue<T, C, Cmp>& v) { Load(j, HeapOf(v)); }
  // Step graphs are immutable once built: a restored model owns its copies.
  template <class T>
  static void Save(StateOut& o, const std::shared_ptr<const T>& v) {
    if (!v) throw std::runtime_error("a null graph");
    Save(o, *v);
  }
  template <class T>
  static void Load(const json& j, std::shared_ptr<const T>& v) {
    auto p = std::make_shared<T>();
    Load(j, *p);
    v = std::move(p);
  }

  // Protobuf messages, as their own bytes.
  static void Save(StateOut& o, const wire::ProcSample& v);
  static void Load(const json& j, wire::ProcSample& v);

  // The interpret stage (interpret_state.cpp).
  GW_STATE_DECL(HostCall)
  GW_STATE_DECL(ApiSpan)
  GW_STATE_DECL(ThreadSample)
  GW_STATE_DECL(SiteText)
  GW_STATE_DECL(DeviceSweep::Limits)
  GW_STATE_DECL(RankFacts)
  GW_STATE_DECL(HostOrder::Held)
  GW_STATE_DECL(HostOrder)
  GW_STATE_DECL(PollFolder::Loop)
  GW_STATE_DECL(PollFolder)
  GW_STATE_DECL(StepPattern::Anchor)
  GW_STATE_DECL(StepPattern)
  GW_STATE_DECL(StepFinder)
  GW_STATE_DECL(DeviceSweep::Work)
  GW_STATE_DECL(DeviceSweep::Open)
  GW_STATE_DECL(DeviceSweep::ApiEntry)
  GW_STATE_DECL(DeviceSweep)
  GW_STATE_DECL(Coverage)
  GW_STATE_DECL(RankInterpreter)

  // The analyses (analyze_state.cpp).
  GW_STATE_DECL(SyncCounter)
  GW_STATE_DECL(CopyCounter)
  GW_STATE_DECL(CollectiveCounter)
  GW_STATE_DECL(CollectiveSizeCounter)
  GW_STATE_DECL(PipelineCounter::Span)
  GW_STATE_DECL(PipelineCounter)
  GW_STATE_DECL(CommCounter)
  GW_STATE_DECL(CommOverlap::Pending)
  GW_STATE_DECL(CommOverlap::Call)
  GW_STATE_DECL(CommOverlap)
  GW_STATE_DECL(LaunchCounter)
  GW_STATE_DECL(GpuCounter::Start)
  GW_STATE_DECL(GpuCounter)
  GW_STATE_DECL(GraphCounter)
  GW_STATE_DECL(ApiCallCounter)
  GW_STATE_DECL(StreamCounter::Recorded)
  GW_STATE_DECL(StreamCounter::Wait)
  GW_STATE_DECL(StreamCounter::Launch)
  GW_STATE_DECL(StreamCounter::Work)
  GW_STATE_DECL(StreamCounter::Track)
  GW_STATE_DECL(StreamCounter)
  GW_STATE_DECL(StepPace::Open)
  GW_STATE_DECL(StepPace)
  GW_STATE_DECL(StepCharger::Coll)
  GW_STATE_DECL(StepCharger::Sync)
  GW_STATE_DECL(StepCharger)
  GW_STATE_DECL(InputIo::Interval)
  GW_STATE_DECL(InputIo::Gap)
  GW_STATE_DECL(InputIo)
  GW_STATE_DECL(SiteCounter::Tally)
  GW_STATE_DECL(SiteCounter)
  GW_STATE_DECL(MemoryCounter)
  GW_STATE_DECL(DeviceStateCounter)
  GW_STATE_DECL(HostFrames::Gap)
  GW_STATE_DECL(HostFrames::Launch)
  GW_STATE_DECL(HostFrames::Tallies)
  GW_STATE_DECL(HostFrames)
  GW_STATE_DECL(SmFillCounter::Tot)
  GW_STATE_DECL(SmFillCounter)
  GW_STATE_DECL(GraphNode)
  GW_STATE_DECL(GraphEdge)
  GW_STATE_DECL(CommKey)
  GW_STATE_DECL(StepGraph)
  GW_STATE_DECL(GraphWork)
  GW_STATE_DECL(StepGraphs::Chunk)
  GW_STATE_DECL(StepGraphs)
  GW_STATE_DECL(RankModel)

 private:
  template <class R>
  static void SaveRange(StateOut& o, const R& r) {
    o.Array(r.size());
    for (const auto& e : r) Save(o, e);
  }
  template <class S>
  static void LoadSequence(const json& j, S& s) {
    if (!j.is_array()) throw std::runtime_error("a sequence that is not an array");
    s.clear();
    for (const json& e : j) {
      typename S::value_type x{};
      Load(e, x);
      s.push_back(std::move(x));
    }
  }
  template <class M>
  static void LoadOrdered(const json& j, M& m) {
    if (!j.is_array()) throw std::runtime_error("a map that is not an array");
    m.clear();
    for (const json& e : j) {
      std::pair<typename M::key_type, typename M::mapped_type> x;
      Load(e, x);
      m.emplace_hint(m.end(), std::move(x));
    }
  }
  // The array under a priority_queue (its protected member `c`, reached through a class
  // derived from it: a pointer to the base's member).
  template <class Q>
  static typename Q::container_type& HeapOf(Q& q) {
    struct Open : Q {
      static typename Q::container_type& Of(Q& q) { return q.*&Open::c; }
    };
    return Open::Of(q);
  }
};

}  // namespace gpuwatch::collector

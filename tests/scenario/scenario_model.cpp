// Scenario format v1: parsing and validation (see scenario_model.h, docs/scenarios.md).
#include "scenario_model.h"

#include "device_keys.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

namespace gpuwatch::scenario {
namespace {

using nlohmann::json;

// Every error goes through here so that all messages have the same one-line shape.
[[noreturn]] void fail(const std::string& source, const std::string& path, const std::string& what) {
  throw ScenarioError(source + ": " + path + ": " + what);
}

std::string join(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

void reject_unknown(const json& obj, const std::set<std::string>& allowed, const std::string& source,
                    const std::string& path, const std::string& context) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (!allowed.count(it.key())) fail(source, join(path, it.key()), "unknown key" + context);
  }
}

std::uint64_t positive_int(const json& v, const std::string& source, const std::string& path,
                           std::uint64_t max = std::uint64_t(1) << 40) {
  // JSON from a parser stores non-negative integers as unsigned, others as signed.
  const bool positive = v.is_number_unsigned() ? v.get<std::uint64_t>() > 0
                                                : v.is_number_integer() && v.get<std::int64_t>() > 0;
  if (!positive) fail(source, path, "expected a positive integer");
  const auto x = v.get<std::uint64_t>();
  if (x > max) fail(source, path, "expected a positive integer of at most " + std::to_string(max));
  return x;
}

double number(const json& v, const std::string& source, const std::string& path, bool allow_zero) {
  if (!v.is_number() || !std::isfinite(v.get<double>())) fail(source, path, allow_zero ? "expected a number >= 0" : "expected a number > 0");
  double x = v.get<double>();
  if (x < 0 || (!allow_zero && x == 0)) fail(source, path, allow_zero ? "expected a number >= 0" : "expected a number > 0");
  return x;
}

bool boolean(const json& v, const std::string& source, const std::string& path) {
  if (!v.is_boolean()) fail(source, path, "expected true or false");
  return v.get<bool>();
}

std::string string(const json& v, const std::string& source, const std::string& path) {
  if (!v.is_string()) fail(source, path, "expected a string");
  return v.get<std::string>();
}

const json& required(const json& obj, const std::string& key, const std::string& source, const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end()) fail(source, join(path, key), "missing (required)");
  return *it;
}

struct OpSpec {
  OpKind kind;
  std::set<std::string> keys;  // allowed besides "op"
};

const std::map<std::string, OpSpec>& op_specs() {
  static const std::map<std::string, OpSpec> specs = {
      {"host", {OpKind::Host, {"ms", "wait", "read_mbps"}}},
      {"h2d", {OpKind::H2D, {"bytes", "pinned", "async"}}},
      {"d2h", {OpKind::D2H, {"bytes", "pinned", "async"}}},
      {"kernels", {OpKind::Kernels, {"count", "us", "name", "via", "blocks", "stream", "check"}}},
      {"item", {OpKind::Item, {}}},
      {"sync", {OpKind::Sync, {"what"}}},
      {"allreduce", {OpKind::AllReduce, {"bytes", "group", "overlap"}}},
      {"allgather", {OpKind::AllGather, {"bytes", "group", "overlap"}}},
      {"reducescatter", {OpKind::ReduceScatter, {"bytes", "group", "overlap"}}},
      {"broadcast", {OpKind::Broadcast, {"bytes", "group", "overlap"}}},
      {"send", {OpKind::Send, {"bytes"}}},
      {"recv", {OpKind::Recv, {"bytes"}}},
      {"graph", {OpKind::Graph, {"kernels", "us", "replays"}}},
      {"memset", {OpKind::Memset, {"bytes"}}},
      {"alloc", {OpKind::Alloc, {"bytes"}}},
  };
  return specs;
}

Op parse_op(const json& j, const std::string& source, const std::string& path) {
  if (!j.is_object()) fail(source, path, "expected an object like {\"op\": \"host\", ...}");
  const json& opv = required(j, "op", source, path);
  if (!opv.is_string() || !op_specs().count(opv.get<std::string>()))
    fail(source, join(path, "op"),
         "expected one of host, h2d, d2h, kernels, item, sync, allreduce, allgather, reducescatter, broadcast, "
         "graph, memset, alloc, send, recv");
  const std::string opname = opv.get<std::string>();
  const OpSpec& spec = op_specs().at(opname);
  std::set<std::string> allowed = spec.keys;
  allowed.insert("op");
  reject_unknown(j, allowed, source, path, " for op \"" + opname + "\"");

  Op op;
  op.kind = spec.kind;
  op.where = path;
  switch (op.kind) {
    case OpKind::Host:
      op.ms = number(required(j, "ms", source, path), source, join(path, "ms"), true);
      if (j.contains("wait")) {
        const json& w = j["wait"];
        const std::string s = w.is_string() ? w.get<std::string>() : "";
        if (s == "sleep") op.wait = HostWait::Sleep;
        else if (s == "cpu") op.wait = HostWait::Cpu;
        else if (s == "read") op.wait = HostWait::Read;
        else fail(source, join(path, "wait"), "expected \"sleep\", \"cpu\" or \"read\"");
      }
      if (j.contains("read_mbps")) {
        if (op.wait != HostWait::Read) fail(source, join(path, "read_mbps"), "only with \"wait\": \"read\"");
        op.read_mbps = number(j["read_mbps"], source, join(path, "read_mbps"), false);
      }
      break;
    case OpKind::H2D:
    case OpKind::D2H:
      op.bytes = positive_int(required(j, "bytes", source, path), source, join(path, "bytes"));
      if (j.contains("pinned")) op.pinned = boolean(j["pinned"], source, join(path, "pinned"));
      if (j.contains("async")) op.async = boolean(j["async"], source, join(path, "async"));
      break;
    case OpKind::Kernels:
      op.count = positive_int(required(j, "count", source, path), source, join(path, "count"), 1000000);
      op.us = number(required(j, "us", source, path), source, join(path, "us"), false);
      if (j.contains("name")) op.name = string(j["name"], source, join(path, "name"));
      if (j.contains("blocks")) op.blocks = positive_int(j["blocks"], source, join(path, "blocks"), 1u << 20);
      if (j.contains("check")) op.check = boolean(j["check"], source, join(path, "check"));
      if (j.contains("via")) {
        const json& v = j["via"];
        const std::string s = v.is_string() ? v.get<std::string>() : "";
        if (s == "runtime") op.via = Via::Runtime;
        else if (s == "library") op.via = Via::Library;
        else if (s == "triton") op.via = Via::Triton;
        else fail(source, join(path, "via"), "expected \"runtime\", \"library\" or \"triton\"");
      }
      if (j.contains("stream")) {
        const json& v = j["stream"];
        const std::string s = v.is_string() ? v.get<std::string>() : "";
        if (s == "side") op.side = true;
        else if (s != "compute") fail(source, join(path, "stream"), "expected \"compute\" or \"side\"");
      }
      break;
    case OpKind::Item:
      break;
    case OpKind::Graph:
      op.count = positive_int(required(j, "kernels", source, path), source, join(path, "kernels"), 100000);
      op.us = number(required(j, "us", source, path), source, join(path, "us"), false);
      op.replays = positive_int(required(j, "replays", source, path), source, join(path, "replays"), 100000);
      break;
    case OpKind::Memset:
    case OpKind::Alloc:
      op.bytes = positive_int(required(j, "bytes", source, path), source, join(path, "bytes"));
      break;
    case OpKind::Sync:
      if (j.contains("what")) {
        const json& w = j["what"];
        std::string s = w.is_string() ? w.get<std::string>() : "";
        if (s == "stream") op.what = SyncWhat::Stream;
        else if (s == "device") op.what = SyncWhat::Device;
        else if (s == "event") op.what = SyncWhat::Event;
        else fail(source, join(path, "what"), "expected \"stream\", \"device\" or \"event\"");
      }
      break;
    default:  // collectives, send/recv: per-rank bytes of float32 elements
      op.bytes = positive_int(required(j, "bytes", source, path), source, join(path, "bytes"));
      if (op.bytes % 4 != 0) fail(source, join(path, "bytes"), "expected a positive multiple of 4 (float32 elements)");
      if (is_p2p(op.kind)) op.group = CommGroup::Pp;
      if (j.contains("group")) {
        const json& g = j["group"];
        const std::string s = g.is_string() ? g.get<std::string>() : "";
        if (s == "world") op.group = CommGroup::World;
        else if (s == "dp") op.group = CommGroup::Dp;
        else if (s == "tp") op.group = CommGroup::Tp;
        else fail(source, join(path, "group"), "expected \"world\", \"dp\" or \"tp\"");
      }
      if (j.contains("overlap")) op.overlap = boolean(j["overlap"], source, join(path, "overlap"));
      break;
  }
  return op;
}

std::vector<Op> parse_ops(const json& j, const std::string& source, const std::string& path) {
  if (!j.is_array() || j.empty()) fail(source, path, "expected a non-empty array of ops");
  std::vector<Op> ops;
  for (size_t i = 0; i < j.size(); ++i) ops.push_back(parse_op(j[i], source, path + "[" + std::to_string(i) + "]"));
  return ops;
}

// The simulator's device keys (tests/sim): bandwidths must be > 0, times may be 0.
const std::set<std::string> kGbpsKeys = {"h2d_pinned_gbps", "h2d_pageable_gbps", "d2h_gbps", "d2h_pageable_gbps",
                                         "d2d_gbps", "memset_gbps", "busbw_gbps"};
const std::set<std::string> kTimeKeys = {"coll_latency_us", "nccl_launch_us", "launch_us", "default_kernel_us"};

}  // namespace

RankScale Scenario::scale_for(int rank) const {
  auto it = rank_scale.find(rank);
  return it == rank_scale.end() ? RankScale{} : it->second;
}

std::vector<const Op*> Scenario::ops_for_step(int s) const {
  std::vector<const Op*> out;
  for (const Op& op : step) out.push_back(&op);
  for (const Every& e : every)
    if (s % e.period == e.period - 1)
      for (const Op& op : e.ops) out.push_back(&op);
  return out;
}

Scenario parse_scenario(const json& doc, const std::string& source) {
  if (!doc.is_object()) fail(source, "(top level)", "expected a JSON object");
  reject_unknown(doc, {"format", "name", "description", "ranks", "steps", "gpu", "step", "every", "rank_scale", "nvtx",
                       "groups"},
                 source, "", "");
  Scenario sc;
  sc.source = source;
  if (doc.contains("format") && !(doc["format"].is_number_integer() && doc["format"].get<std::int64_t>() == 1))
    fail(source, "format", "expected 1 (the only version this driver knows)");
  sc.name = string(required(doc, "name", source, ""), source, "name");
  if (doc.contains("description")) sc.description = string(doc["description"], source, "description");
  sc.ranks = int(positive_int(required(doc, "ranks", source, ""), source, "ranks", 256));
  sc.steps = int(positive_int(required(doc, "steps", source, ""), source, "steps", 10000000));
  if (doc.contains("nvtx")) sc.nvtx = boolean(doc["nvtx"], source, "nvtx");
  if (doc.contains("groups")) {
    const json& g = doc["groups"];
    if (!g.is_object()) fail(source, "groups", "expected an object {\"tp\": T, \"pp\": P}");
    reject_unknown(g, {"tp", "pp"}, source, "groups", "");
    if (g.contains("tp")) sc.groups.tp = int(positive_int(g["tp"], source, "groups.tp", 256));
    if (g.contains("pp")) sc.groups.pp = int(positive_int(g["pp"], source, "groups.pp", 256));
    if (sc.ranks % (sc.groups.tp * sc.groups.pp) != 0)
      fail(source, "groups", "tp x pp (" + std::to_string(sc.groups.tp * sc.groups.pp) + ") must divide ranks (" +
                                 std::to_string(sc.ranks) + ")");
  }

  if (doc.contains("gpu")) {
    const json& g = doc["gpu"];
    if (!g.is_object()) fail(source, "gpu", "expected an object of simulator device keys");
    for (auto it = g.begin(); it != g.end(); ++it) {
      const std::string path = "gpu." + it.key();
      if (kGbpsKeys.count(it.key())) sc.gpu[it.key()] = number(it.value(), source, path, false);
      else if (kTimeKeys.count(it.key())) sc.gpu[it.key()] = number(it.value(), source, path, true);
      else if (parse_device_key(sc, it.key(), it.value(), source)) continue;
      else fail(source, path, "unknown simulator key");
    }
  }

  sc.step = parse_ops(required(doc, "step", source, ""), source, "step");

  if (doc.contains("every")) {
    const json& ev = doc["every"];
    if (!ev.is_array()) fail(source, "every", "expected an array of {\"period\": N, \"ops\": [...]}");
    for (size_t i = 0; i < ev.size(); ++i) {
      const std::string path = "every[" + std::to_string(i) + "]";
      if (!ev[i].is_object()) fail(source, path, "expected {\"period\": N, \"ops\": [...]}");
      reject_unknown(ev[i], {"period", "ops"}, source, path, "");
      Every e;
      e.period = int(positive_int(required(ev[i], "period", source, path), source, path + ".period", 10000000));
      e.ops = parse_ops(required(ev[i], "ops", source, path), source, path + ".ops");
      sc.every.push_back(std::move(e));
    }
  }

  if (doc.contains("rank_scale")) {
    const json& rs = doc["rank_scale"];
    if (!rs.is_object()) fail(source, "rank_scale", "expected an object {\"RANK\": {\"host\": x, \"kernels\": y}}");
    for (auto it = rs.begin(); it != rs.end(); ++it) {
      const std::string path = "rank_scale." + it.key();
      const std::string& k = it.key();
      bool digits = !k.empty() && k.size() <= 4 && std::all_of(k.begin(), k.end(), [](char c) { return c >= '0' && c <= '9'; });
      if (!digits || std::stoi(k) >= sc.ranks)
        fail(source, path, "expected a rank number from 0 to " + std::to_string(sc.ranks - 1));
      if (!it.value().is_object()) fail(source, path, "expected an object {\"host\": x, \"kernels\": y}");
      reject_unknown(it.value(), {"host", "kernels"}, source, path, "");
      RankScale s;
      if (it.value().contains("host")) s.host = number(it.value()["host"], source, path + ".host", false);
      if (it.value().contains("kernels")) s.kernels = number(it.value()["kernels"], source, path + ".kernels", false);
      sc.rank_scale[std::stoi(k)] = s;
    }
  }
  return sc;
}

Scenario parse_scenario_text(const std::string& text, const std::string& source) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    // nlohmann's message carries the byte position; keep it on one line.
    throw ScenarioError(source + ": invalid JSON: " + e.what());
  }
  return parse_scenario(doc, source);
}

Scenario load_scenario(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ScenarioError(path + ": cannot open the file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_scenario_text(ss.str(), path);
}

const char* op_name(OpKind k) {
  switch (k) {
    case OpKind::Host: return "host";
    case OpKind::H2D: return "h2d";
    case OpKind::D2H: return "d2h";
    case OpKind::Kernels: return "kernels";
    case OpKind::Item: return "item";
    case OpKind::Sync: return "sync";
    case OpKind::AllReduce: return "allreduce";
    case OpKind::AllGather: return "allgather";
    case OpKind::ReduceScatter: return "reducescatter";
    case OpKind::Broadcast: return "broadcast";
    case OpKind::Graph: return "graph";
    case OpKind::Memset: return "memset";
    case OpKind::Alloc: return "alloc";
    case OpKind::Send: return "send";
    case OpKind::Recv: return "recv";
  }
  return "?";
}

bool is_collective(OpKind k) {
  return k == OpKind::AllReduce || k == OpKind::AllGather || k == OpKind::ReduceScatter || k == OpKind::Broadcast;
}

bool is_p2p(OpKind k) { return k == OpKind::Send || k == OpKind::Recv; }

bool plays(const Scenario& sc, const Op& op, int rank) {
  if (!is_p2p(op.kind)) return true;
  const int stage = sc.layout().coords(rank).pp;
  return op.kind == OpKind::Send ? stage + 1 < sc.groups.pp : stage > 0;
}

int group_size(const Scenario& sc, const Op& op) { return sc.layout().size(op.group); }

std::uint64_t collective_bytes(OpKind k, std::uint64_t per_rank_bytes, int ranks) {
  if (k == OpKind::AllGather || k == OpKind::ReduceScatter) return per_rank_bytes * std::uint64_t(ranks);
  return per_rank_bytes;
}

namespace {
template <class F>
void for_each_op(const Scenario& sc, F&& f) {
  for (int s = 0; s < sc.steps; ++s)
    for (const Op* op : sc.ops_for_step(s)) f(*op);
}
// The ops `rank` plays (send/recv only where there is a peer).
template <class F>
void for_each_op(const Scenario& sc, int rank, F&& f) {
  for_each_op(sc, [&](const Op& op) {
    if (plays(sc, op, rank)) f(op);
  });
}
}  // namespace

std::uint64_t device_buffer_bytes(const Scenario& sc) {
  std::uint64_t n = 4;  // item's 4-byte copy
  auto consider = [&](const Op& op) {
    if (op.kind == OpKind::H2D || op.kind == OpKind::D2H || op.kind == OpKind::Memset) n = std::max(n, op.bytes);
    if (is_collective(op.kind) || is_p2p(op.kind)) n = std::max(n, collective_bytes(op.kind, op.bytes, group_size(sc, op)));
  };
  for (const Op* op : all_ops(sc)) consider(*op);
  return n;
}

std::uint64_t host_buffer_bytes(const Scenario& sc, bool pinned) {
  std::uint64_t n = 0;
  auto consider = [&](const Op& op) {
    if ((op.kind == OpKind::H2D || op.kind == OpKind::D2H) && op.pinned == pinned) n = std::max(n, op.bytes);
  };
  for (const Op* op : all_ops(sc)) consider(*op);
  return n;
}

std::string simgpu_config(const Scenario& sc) {
  std::ostringstream os;
  bool first = true;
  for (const auto& [k, v] : sc.gpu) {
    os << (first ? "" : ",") << k << "=" << v;
    first = false;
  }
  for (const auto& [k, v] : sc.gpu_text) {
    os << (first ? "" : ",") << k << "=" << v;
    first = false;
  }
  return os.str();
}

std::uint64_t expected_memory_peak(const Scenario& sc) {
  std::uint64_t n = device_buffer_bytes(sc);
  for_each_op(sc, [&](const Op& op) {
    if (op.kind == OpKind::Alloc) n += op.bytes;
  });
  return n;
}

std::map<std::string, Totals> expected_truth_ops(const Scenario& sc, int rank) {
  std::map<std::string, Totals> t;
  const RankScale scale = sc.scale_for(rank);
  for_each_op(sc, rank, [&](const Op& op) {
    switch (op.kind) {
      case OpKind::Host: t["host"].count++; t["host"].seconds += op.ms * scale.host / 1e3; break;
      case OpKind::H2D: t["h2d"].count++; t["h2d"].bytes += op.bytes; break;
      case OpKind::D2H: t["d2h"].count++; t["d2h"].bytes += op.bytes; break;
      case OpKind::Kernels: {
        Totals& k = t[op.via != Via::Runtime ? "kernels_library" : "kernels"];
        k.count += op.count;
        k.seconds += double(op.count) * op.us * scale.kernels / 1e6;
        break;
      }
      case OpKind::Item: t["item"].count++; t["item"].bytes += 4; break;
      case OpKind::Memset: t["memset"].count++; t["memset"].bytes += op.bytes; break;
      case OpKind::Graph:
        t["graph"].count += op.replays;
        t["graph_kernels"].count += op.replays * op.count;
        t["graph_kernels"].seconds += double(op.replays * op.count) * op.us * scale.kernels / 1e6;
        break;
      case OpKind::Alloc: t["alloc"].count++; t["alloc"].bytes += op.bytes; break;
      case OpKind::Sync: {
        t["sync"].count++;
        const char* sub = op.what == SyncWhat::Stream ? "sync_stream" : op.what == SyncWhat::Device ? "sync_device" : "sync_event";
        t[sub].count++;
        break;
      }
      default: {
        Totals& c = t[op_name(op.kind)];
        c.count++;
        c.bytes += collective_bytes(op.kind, op.bytes, group_size(sc, op));
      }
    }
  });
  return t;
}

std::map<std::string, Totals> expected_device_kinds(const Scenario& sc, int rank) {
  std::map<std::string, Totals> t;
  const RankScale scale = sc.scale_for(rank);
  for_each_op(sc, rank, [&](const Op& op) {
    switch (op.kind) {
      case OpKind::Host:
      case OpKind::Alloc:
      case OpKind::Sync: break;
      case OpKind::H2D: t["h2d"].count++; t["h2d"].bytes += op.bytes; break;
      case OpKind::D2H: t["d2h"].count++; t["d2h"].bytes += op.bytes; break;
      case OpKind::Item: t["d2h"].count++; t["d2h"].bytes += 4; break;
      case OpKind::Memset: t["memset"].count++; t["memset"].bytes += op.bytes; break;
      case OpKind::Graph:
        t["kernel"].count += op.replays * op.count;
        t["kernel"].seconds += double(op.replays * op.count) * op.us * scale.kernels / 1e6;
        break;
      case OpKind::Kernels:
        t["kernel"].count += op.count;
        t["kernel"].seconds += double(op.count) * op.us * scale.kernels / 1e6;
        break;
      default: {
        Totals& c = t[op_name(op.kind)];
        c.count++;
        c.bytes += collective_bytes(op.kind, op.bytes, group_size(sc, op));
      }
    }
  });
  return t;
}

std::string members_label(const std::vector<int>& members) {
  std::string label;
  for (size_t i = 0; i < members.size(); ++i) label += (i ? "," : "") + std::to_string(members[i]);
  return label;
}

std::map<std::string, Totals> expected_device_comms(const Scenario& sc, int rank) {
  std::map<std::string, Totals> t;
  const RankLayout layout = sc.layout();
  for_each_op(sc, rank, [&](const Op& op) {
    if (!is_collective(op.kind) && !is_p2p(op.kind)) return;
    Totals& c = t[members_label(layout.members(op.group, rank))];
    c.count++;
    c.bytes += collective_bytes(op.kind, op.bytes, group_size(sc, op));
  });
  return t;
}

std::map<std::uint64_t, std::uint64_t> expected_kernel_blocks(const Scenario& sc) {
  const auto sm = static_cast<std::uint64_t>(sc.gpu.count("sm_count") ? sc.gpu.at("sm_count") : 132);
  std::map<std::uint64_t, std::uint64_t> blocks;
  for_each_op(sc, [&](const Op& op) {
    if (op.kind == OpKind::Kernels) blocks[op.blocks ? op.blocks : sm] += op.count;
    if (op.kind == OpKind::Graph) blocks[sm] += op.replays * op.count;
  });
  return blocks;
}

GraphTotals expected_graphs(const Scenario& sc, int rank) {
  GraphTotals g;
  const RankScale scale = sc.scale_for(rank);
  for_each_op(sc, [&](const Op& op) {
    if (op.kind != OpKind::Graph) return;
    g.launches += op.replays;
    g.kernels += op.replays * op.count;
    g.kernel_seconds += double(op.replays * op.count) * op.us * scale.kernels / 1e6;
  });
  return g;
}

std::vector<const Op*> all_ops(const Scenario& sc) {
  std::vector<const Op*> out;
  for (const Op& op : sc.step) out.push_back(&op);
  for (const Every& e : sc.every)
    for (const Op& op : e.ops) out.push_back(&op);
  return out;
}

std::vector<const Op*> graph_ops(const Scenario& sc) {
  std::vector<const Op*> out;
  for (const Op* op : all_ops(sc))
    if (op->kind == OpKind::Graph) out.push_back(op);
  return out;
}

}  // namespace gpuwatch::scenario

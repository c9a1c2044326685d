// See chrome_trace_reader.h. A small state machine over nlohmann-json's SAX callbacks: a
// stack of what each open object or array is (its role), and the key being read.
#include "import/chrome_trace_reader.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <vector>

#include "import/timestamp.h"

namespace gpuwatch::collector {
namespace {

using json = nlohmann::json;

enum class Role : uint8_t {
  kRoot,      // the top-level object
  kEvents,    // traceEvents (or a top-level array)
  kEvent,     // one event
  kArgs,      // its args
  kDim,       // args.grid / args.block
  kDistInfo,  // distributedInfo
  kDevices,   // deviceProperties
  kDevice,    // one of them
  kSkip,      // anything else: read and dropped
};

// A JSON scalar as the callbacks deliver it.
struct Scalar {
  enum Kind { kInt, kUint, kFloat, kString, kOther } kind = kOther;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  const std::string* text = nullptr;  // kFloat: the number as written; kString: the string
};

bool ToInt(const Scalar& s, int64_t* out) {
  switch (s.kind) {
    case Scalar::kInt: *out = s.i; return true;
    case Scalar::kUint: *out = s.u > INT64_MAX ? INT64_MAX : static_cast<int64_t>(s.u); return true;
    case Scalar::kFloat:
      if (!(s.d > -9e18 && s.d < 9e18)) return false;  // before the cast: out of range is UB
      *out = static_cast<int64_t>(s.d);
      return true;
    default: return false;
  }
}
bool ToUint(const Scalar& s, uint64_t* out) {
  int64_t v = 0;
  if (s.kind == Scalar::kUint) { *out = s.u; return true; }
  if (!ToInt(s, &v) || v < 0) return false;
  *out = static_cast<uint64_t>(v);
  return true;
}
uint32_t ToU32(const Scalar& s) {
  uint64_t v = 0;
  return ToUint(s, &v) ? static_cast<uint32_t>(v > UINT32_MAX ? UINT32_MAX : v) : 0;
}
// A time in µs (integer or decimal) as ns.
bool ToNs(const Scalar& s, uint64_t* ns) {
  if (s.kind == Scalar::kFloat) return s.text && MicrosTextToNs(*s.text, ns);
  uint64_t us = 0;
  if (!ToUint(s, &us) || us > UINT64_MAX / 1000) return false;
  *ns = us * 1000;
  return true;
}

class Handler final : public nlohmann::json_sax<json> {
 public:
  Handler(const TraceEventFn& fn, TraceHeader* header) : fn_(fn), header_(header) {}
  std::string error;

  bool null() override { return Value(Scalar{}); }
  bool boolean(bool) override { return Value(Scalar{}); }
  bool number_integer(number_integer_t v) override {
    Scalar s;
    s.kind = Scalar::kInt;
    s.i = v;
    return Value(s);
  }
  bool number_unsigned(number_unsigned_t v) override {
    Scalar s;
    s.kind = Scalar::kUint;
    s.u = v;
    return Value(s);
  }
  bool number_float(number_float_t v, const string_t& text) override {
    Scalar s;
    s.kind = Scalar::kFloat;
    s.d = v;
    s.text = &text;
    return Value(s);
  }
  bool string(string_t& v) override {
    Scalar s;
    s.kind = Scalar::kString;
    s.text = &v;
    return Value(s);
  }
  bool binary(binary_t&) override { return Value(Scalar{}); }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool start_object(std::size_t) override { return Open(true); }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t) override { return Open(false); }
  bool end_array() override { return Close(); }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    error = "not valid JSON at byte " + std::to_string(position) + ": " + ex.what();
    return false;
  }

 private:
  Role Top() const { return stack_.empty() ? Role::kSkip : stack_.back(); }

  bool Open(bool object) {
    if (stack_.empty()) {
      if (object) {
        stack_.push_back(Role::kRoot);
      } else {
        header_->has_trace_events = true;  // the JSON Array Format: the document is the events
        stack_.push_back(Role::kEvents);
      }
      return true;
    }
    Role r = Role::kSkip;
    switch (Top()) {
      case Role::kRoot:
        if (!object && key_ == "traceEvents") {
          r = Role::kEvents;
          header_->has_trace_events = true;
        } else if (object && key_ == "distributedInfo") {
          r = Role::kDistInfo;
        } else if (!object && key_ == "deviceProperties") {
          r = Role::kDevices;
        }
        break;
      case Role::kEvents:
        if (object) {
          r = Role::kEvent;
          event_.Clear();
        }
        break;
      case Role::kEvent:
        if (object && key_ == "args") r = Role::kArgs;
        break;
      case Role::kArgs:
        if (!object && (key_ == "grid" || key_ == "block")) {
          r = Role::kDim;
          dim_ = key_ == "grid" ? event_.grid : event_.block;
          dim_index_ = 0;
        }
        break;
      case Role::kDevices:
        if (object) {
          r = Role::kDevice;
          header_->devices.emplace_back();
        }
        break;
      default: break;
    }
    stack_.push_back(r);
    return true;
  }

  bool Close() {
    const Role r = Top();
    if (!stack_.empty()) stack_.pop_back();
    if (r == Role::kEvent) fn_(event_);
    return true;
  }

  bool Value(const Scalar& s) {
    switch (Top()) {
      case Role::kRoot:
        if (key_ == "host_name" && s.kind == Scalar::kString) header_->host = *s.text;
        break;
      case Role::kEvent: EventField(s); break;
      case Role::kArgs: ArgField(s); break;
      case Role::kDim:
        if (dim_index_ < 3) dim_[dim_index_] = ToU32(s);
        ++dim_index_;
        break;
      case Role::kDistInfo: {
        int64_t v = 0;
        if (key_ == "rank" && ToInt(s, &v) && v >= 0 && v < INT32_MAX) header_->rank = static_cast<int>(v);
        if (key_ == "world_size" && ToInt(s, &v) && v > 0 && v < INT32_MAX) header_->world_size = static_cast<int>(v);
        break;
      }
      case Role::kDevice: {
        TraceDevice& d = header_->devices.back();
        int64_t v = 0;
        if (key_ == "id" && ToInt(s, &v)) d.id = static_cast<int>(v);
        if (key_ == "name" && s.kind == Scalar::kString) d.name = *s.text;
        if (key_ == "totalGlobalMem") ToUint(s, &d.memory_bytes);
        if (key_ == "numSms" && ToInt(s, &v) && v > 0 && v < 100000) d.sms = static_cast<int>(v);
        if (key_ == "computeMajor" && ToInt(s, &v) && v > 0 && v < 100) d.compute_major = static_cast<int>(v);
        if (key_ == "computeMinor" && ToInt(s, &v) && v >= 0 && v < 10) d.compute_minor = static_cast<int>(v);
        break;
      }
      default: break;
    }
    return true;
  }

  void EventField(const Scalar& s) {
    const bool str = s.kind == Scalar::kString;
    if (key_ == "ph" && str) {
      event_.ph = *s.text;
    } else if (key_ == "cat" && str) {
      event_.cat = *s.text;
    } else if (key_ == "name" && str) {
      event_.name = *s.text;
    } else if (key_ == "ts") {
      event_.has_ts = ToNs(s, &event_.ts_ns);
    } else if (key_ == "dur") {
      event_.has_dur = ToNs(s, &event_.dur_ns);
    } else if (key_ == "pid") {
      event_.pid_is_name = !ToInt(s, &event_.pid);
    } else if (key_ == "tid") {
      ToInt(s, &event_.tid);
    }
  }

  void ArgField(const Scalar& s) {
    const bool str = s.kind == Scalar::kString;
    if (key_ == "correlation") {
      ToInt(s, &event_.correlation);
    } else if (key_ == "External id") {
      ToInt(s, &event_.external_id);
    } else if (key_ == "stream") {
      ToInt(s, &event_.stream);
    } else if (key_ == "device") {
      ToInt(s, &event_.device);
    } else if (key_ == "cbid") {
      ToInt(s, &event_.cbid);
    } else if (key_ == "bytes") {
      event_.has_bytes = ToUint(s, &event_.bytes);
    } else if (key_ == "registers per thread") {
      event_.registers = ToU32(s);
    } else if (key_ == "shared memory") {
      event_.shared_bytes = ToU32(s);
    } else if (key_ == "wait_on_stream") {
      ToInt(s, &event_.wait_on_stream);
    } else if (key_ == "wait_on_cuda_event_record_corr_id") {
      ToInt(s, &event_.wait_record_correlation);
    } else if (key_ == "cuda_sync_kind" && str) {
      event_.sync_kind = *s.text;
    } else if (key_ == "Collective name" && str) {
      event_.collective = *s.text;
    } else if (key_ == "dtype" && str) {
      event_.dtype = *s.text;
    } else if (key_ == "Process Group Name" && str) {
      event_.pg_name = *s.text;
    } else if (key_ == "Process Group Ranks" && str) {
      event_.pg_ranks = *s.text;
    } else if (key_ == "In msg nelems") {
      ToUint(s, &event_.in_nelems);
    } else if (key_ == "Out msg nelems") {
      ToUint(s, &event_.out_nelems);
    } else if (key_ == "Group size") {
      ToInt(s, &event_.group_size);
    }
  }

  const TraceEventFn& fn_;
  TraceHeader* header_;
  std::vector<Role> stack_;
  std::string key_;
  TraceEvent event_;
  uint32_t* dim_ = nullptr;
  size_t dim_index_ = 0;
};

}  // namespace

bool ReadChromeTrace(std::istream& in, const TraceEventFn& on_event, TraceHeader* header, std::string* error) {
  Handler h(on_event, header);
  const bool ok = json::sax_parse(in, &h, json::input_format_t::json, /*strict=*/true);
  if (!ok) {
    *error = h.error.empty() ? "not valid JSON" : h.error;
    return false;
  }
  if (!header->has_trace_events) {
    *error = "not a torch.profiler (Chrome) trace: valid JSON, but no traceEvents array";
    return false;
  }
  return true;
}

}  // namespace gpuwatch::collector

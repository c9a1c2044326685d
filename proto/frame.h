// Framing shared by the library (writer) and the collector (reader): each frame on the
// wire is a varint length followed by a serialized gpuwatch.wire.Frame.
#pragma once
#include <google/protobuf/arena.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "gpuwatch.pb.h"

namespace gpuwatch::wire {

// Largest frame either end accepts. Checked before anything is allocated for a frame.
inline constexpr size_t kMaxFrameBytes = 16u << 20;

// Appends the varint-length-prefixed encoding of `frame` to `out`.
void AppendFrame(const Frame& frame, std::string& out);

// Incremental reader: feed it whatever arrived, take out whole frames.
class FrameReader {
 public:
  enum class Status { kFrame, kNeedMore, kError };

  // Appends bytes that arrived. The reader keeps at most one partial frame.
  void Feed(std::string_view bytes);

  // Parses the next whole frame into `frame`. On kError, error() says why in one line and
  // the stream must be abandoned (framing cannot be resynchronised).
  Status Next(Frame& frame);

  const std::string& error() const { return error_; }
  // The bytes (length prefix included) of the frame the last kFrame came from, exactly as
  // they arrived; valid until the next Feed. What the collector's journal stores.
  std::string_view last_raw() const {
    return std::string_view(buf_).substr(raw_at_, pos_ - raw_at_);
  }
  size_t buffered() const { return buf_.size() - pos_; }

 private:
  std::string buf_;
  size_t pos_ = 0;
  size_t raw_at_ = 0;  // start of the last frame returned
  std::string error_;
};

// Where a reader parses frames: on an arena reset before each frame, whose first block is
// kept. A reused plain Frame still allocated every Event of every batch anew (clearing a
// frame frees its oneof payload, the Batch); on the arena a batch's events are bump
// allocations in memory already touched.
class FrameScratch {
 public:
  FrameScratch();
  // An empty frame; the one handed out before is gone.
  Frame& Fresh();

 private:
  static constexpr size_t kKeptBlock = 1u << 20;  // a batch of ~8k events fits
  std::unique_ptr<char[]> block_;
  google::protobuf::Arena arena_;
  Frame* frame_ = nullptr;
};

}  // namespace gpuwatch::wire

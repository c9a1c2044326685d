#include "frame.h"

namespace gpuwatch::wire {

void AppendFrame(const Frame& frame, std::string& out) {
  const size_t n = frame.ByteSizeLong();
  uint64_t v = n;
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
  const size_t at = out.size();
  out.resize(at + n);
  frame.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(out.data() + at));
}

void FrameReader::Feed(std::string_view bytes) {
  // Compact before growing, so a long-lived connection's buffer stays one frame big.
  if (pos_ > 0 && pos_ >= buf_.size() / 2) {
    buf_.erase(0, pos_);
    pos_ = 0;
    raw_at_ = 0;
  }
  buf_.append(bytes);
}

FrameReader::Status FrameReader::Next(Frame& frame) {
  if (!error_.empty()) return Status::kError;
  uint64_t len = 0;
  size_t p = pos_;
  for (int shift = 0;; shift += 7) {
    if (p >= buf_.size()) return Status::kNeedMore;
    if (shift > 28) {
      error_ = "malformed frame length (varint longer than 5 bytes)";
      return Status::kError;
    }
    const auto b = static_cast<uint8_t>(buf_[p++]);
    len |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
  }
  if (len > kMaxFrameBytes) {
    error_ = "frame of " + std::to_string(len) + " bytes exceeds the limit of " +
             std::to_string(kMaxFrameBytes);
    return Status::kError;
  }
  if (buf_.size() - p < len) return Status::kNeedMore;
  if (!frame.ParseFromArray(buf_.data() + p, static_cast<int>(len))) {
    error_ = "frame of " + std::to_string(len) + " bytes does not decode as gpuwatch.wire.Frame";
    return Status::kError;
  }
  raw_at_ = pos_;
  pos_ = p + len;
  return Status::kFrame;
}

namespace {
google::protobuf::ArenaOptions KeptBlock(char* block, size_t size) {
  google::protobuf::ArenaOptions o;
  o.initial_block = block;
  o.initial_block_size = size;
  return o;
}
}  // namespace

FrameScratch::FrameScratch()
    : block_(new char[kKeptBlock]), arena_(KeptBlock(block_.get(), kKeptBlock)) {}

Frame& FrameScratch::Fresh() {
  if (frame_) arena_.Reset();
  frame_ = google::protobuf::Arena::CreateMessage<Frame>(&arena_);
  return *frame_;
}

}  // namespace gpuwatch::wire

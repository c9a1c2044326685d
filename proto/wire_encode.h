// Protobuf wire-format encoding without libprotobuf, for libgpuwatch.so.
//
// Why: the preloaded library lives inside the user's job. Linking libprotobuf.so would put
// our protobuf's (unversioned) symbols first in the job's global scope, interposing the
// job's own protobuf if it loads another version; Debian's static libprotobuf cannot go
// into a shared object (local-exec TLS). So the library writes the bytes itself, field by
// field as gpuwatch.proto declares them, and the collector parses them with the generated
// code. A unit test parses every encoder's output with the generated classes, so the
// .proto stays the one contract.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace gpuwatch::wire::enc {

enum WireType : uint32_t { kVarint = 0, kI64 = 1, kLen = 2 };

// A small message's body on the stack: the per-record encoders (an event or an activity per
// launch, ~200k a second on a launch-heavy job) build their body here rather than in a
// std::string allocated and freed for each. Every writer below takes either. kMaxField is
// the most one scalar field can take (a 2-byte tag, a 10-byte varint): a record of F scalar
// fields fits in StackOut<F * kMaxField> (encode_test.cpp encodes every field at its
// widest).
inline constexpr size_t kMaxField = 12;
template <size_t N>
struct StackOut {
  char data[N];
  size_t size = 0;
  void append(const char* p, size_t n) {
    std::memcpy(data + size, p, n);
    size += n;
  }
  operator std::string_view() const { return {data, size}; }
};

template <class Out>
inline void Varint(Out& o, uint64_t v) {
  char buf[10];
  int n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  o.append(buf, static_cast<size_t>(n));
}

template <class Out>
inline void Tag(Out& o, uint32_t field, WireType t) { Varint(o, (uint64_t{field} << 3) | t); }

// proto3 scalars: a default (zero) value is not written, exactly as the generated code does.
template <class Out>
inline void UInt(Out& o, uint32_t field, uint64_t v) {
  if (v == 0) return;
  Tag(o, field, kVarint);
  Varint(o, v);
}
// int32 and enums: negative values are sign-extended to 64 bits on the wire.
template <class Out>
inline void Int(Out& o, uint32_t field, int64_t v) {
  if (v == 0) return;
  Tag(o, field, kVarint);
  Varint(o, static_cast<uint64_t>(v));
}
// double: 8 bytes little-endian (x86-64's own order).
template <class Out>
inline void Double(Out& o, uint32_t field, double v) {
  if (v == 0) return;
  Tag(o, field, kI64);
  char b[8];
  static_assert(sizeof v == 8);
  __builtin_memcpy(b, &v, 8);
  o.append(b, 8);
}
template <class Out>
inline void Bytes(Out& o, uint32_t field, std::string_view s) {
  if (s.empty()) return;
  Tag(o, field, kLen);
  Varint(o, s.size());
  o.append(s.data(), s.size());
}
// An embedded message, present even when empty (presence matters for oneof members).
template <class Out>
inline void Message(Out& o, uint32_t field, std::string_view body) {
  Tag(o, field, kLen);
  Varint(o, body.size());
  o.append(body.data(), body.size());
}

inline size_t VarintSize(uint64_t v) {
  size_t n = 1;
  for (; v >= 0x80; v >>= 7) ++n;
  return n;
}

// A whole frame: varint length, then Frame{field: body}.
inline void Frame(std::string& o, uint32_t field, std::string_view body) {
  const uint64_t tag = (uint64_t{field} << 3) | kLen;
  Varint(o, VarintSize(tag) + VarintSize(body.size()) + body.size());
  Varint(o, tag);
  Varint(o, body.size());
  o.append(body);
}

}  // namespace gpuwatch::wire::enc

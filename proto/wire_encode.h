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
#include <cstdint>
#include <string>
#include <string_view>

namespace gpuwatch::wire::enc {

enum WireType : uint32_t { kVarint = 0, kI64 = 1, kLen = 2 };

inline void Varint(std::string& o, uint64_t v) {
  char buf[10];
  int n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  o.append(buf, static_cast<size_t>(n));
}

inline void Tag(std::string& o, uint32_t field, WireType t) { Varint(o, (uint64_t{field} << 3) | t); }

// proto3 scalars: a default (zero) value is not written, exactly as the generated code does.
inline void UInt(std::string& o, uint32_t field, uint64_t v) {
  if (v == 0) return;
  Tag(o, field, kVarint);
  Varint(o, v);
}
// int32 and enums: negative values are sign-extended to 64 bits on the wire.
inline void Int(std::string& o, uint32_t field, int64_t v) {
  if (v == 0) return;
  Tag(o, field, kVarint);
  Varint(o, static_cast<uint64_t>(v));
}
// double: 8 bytes little-endian (x86-64's own order).
inline void Double(std::string& o, uint32_t field, double v) {
  if (v == 0) return;
  Tag(o, field, kI64);
  char b[8];
  static_assert(sizeof v == 8);
  __builtin_memcpy(b, &v, 8);
  o.append(b, 8);
}
inline void Bytes(std::string& o, uint32_t field, std::string_view s) {
  if (s.empty()) return;
  Tag(o, field, kLen);
  Varint(o, s.size());
  o.append(s);
}
// An embedded message, present even when empty (presence matters for oneof members).
inline void Message(std::string& o, uint32_t field, std::string_view body) {
  Tag(o, field, kLen);
  Varint(o, body.size());
  o.append(body);
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

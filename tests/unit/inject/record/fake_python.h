// A fake CPython interpreter built in memory for the frame reader's tests (3.12's layout, a
// fake PyCode_Type): strings, code objects with a location table, frames, a thread state.
// Used by record/python_stack_test.cpp and enrich/host_sampler_test.cpp.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "record/python_stack.h"

namespace fakepy {

// 3.12's layout, with a fake PyCode_Type: the fake interpreter's objects are laid out by it.
inline gpuwatch::inject::PyLayout FakeLayout(uintptr_t code_type) {
  gpuwatch::inject::PyLayout l = gpuwatch::inject::Layout312();
  l.code_type = code_type;
  return l;
}

// Objects of the fake interpreter, kept alive (and at fixed addresses) by the arena.
struct Arena {
  std::vector<std::vector<uint64_t>> blocks;
  uint8_t* New(size_t bytes) {
    blocks.emplace_back((bytes + 7) / 8 + 1, 0);
    return reinterpret_cast<uint8_t*>(blocks.back().data());
  }
  template <typename T>
  static void Put(uint8_t* obj, size_t off, T v) { std::memcpy(obj + off, &v, sizeof v); }
};

inline uint8_t* Str(Arena& a, const gpuwatch::inject::PyLayout& l, const std::string& s) {
  uint8_t* o = a.New(l.ascii_size + s.size() + 1);
  Arena::Put<uint64_t>(o, l.str_length, s.size());
  Arena::Put<uint32_t>(o, l.str_state, (1u << 2) | (1u << 5) | (1u << 6));  // kind 1, compact, ascii
  std::memcpy(o + l.ascii_size, s.data(), s.size());
  return o;
}

inline uint8_t* Bytes(Arena& a, const std::vector<uint8_t>& b) {
  uint8_t* o = a.New(32 + b.size());
  Arena::Put<int64_t>(o, 16, static_cast<int64_t>(b.size()));
  std::memcpy(o + 32, b.data(), b.size());
  return o;
}

// Location table of a function whose first line is 10: units 0-1 line 10, 2-4 line 11,
// 5 line 16 (long form), 6 no line, 7-8 line 16 (short form), 9 line 13, 10 line 113.
inline const std::vector<uint8_t> kTable = {0xE9, 0x00,                    // no-column form, +0, 2 units
                                     0xDA, 0x01, 0x02,              // one-line form +1, 3 units
                                     0xF0, 0x0A, 0x00, 0x01, 0x02,  // long form +5, 1 unit
                                     0xF8,                          // no location, 1 unit
                                     0x81, 0x03,                    // short form, 2 units
                                     0xE8, 0x07,                    // no-column form -3
                                     0xE8, 0x48, 0x03};             // no-column form +100 (2-byte varint)

inline uint8_t* Code(Arena& a, const gpuwatch::inject::PyLayout& l, const char* file, const char* func, int first_line) {
  uint8_t* c = a.New(l.code_adaptive + 64);
  Arena::Put<uintptr_t>(c, l.ob_type, l.code_type);
  Arena::Put<uintptr_t>(c, l.code_filename, reinterpret_cast<uintptr_t>(Str(a, l, file)));
  Arena::Put<uintptr_t>(c, l.code_qualname, reinterpret_cast<uintptr_t>(Str(a, l, func)));
  Arena::Put<int32_t>(c, l.code_firstlineno, first_line);
  Arena::Put<uintptr_t>(c, l.code_linetable, reinterpret_cast<uintptr_t>(Bytes(a, kTable)));
  return c;
}

inline uint8_t* Frame(Arena& a, const gpuwatch::inject::PyLayout& l, uint8_t* code, int unit, uint8_t* previous, uint8_t owner = 0) {
  uint8_t* f = a.New(80);
  Arena::Put<uintptr_t>(f, l.frame_code, reinterpret_cast<uintptr_t>(code));
  Arena::Put<uintptr_t>(f, l.frame_previous, reinterpret_cast<uintptr_t>(previous));
  Arena::Put<uintptr_t>(f, l.frame_instr, reinterpret_cast<uintptr_t>(code) + l.code_adaptive + 2 * unit);
  Arena::Put<uint8_t>(f, l.frame_owner, owner);
  return f;
}

inline uintptr_t ThreadState(Arena& a, const gpuwatch::inject::PyLayout& l, uint8_t* innermost) {
  uint8_t* cframe = a.New(32);
  Arena::Put<uintptr_t>(cframe, static_cast<size_t>(l.cframe_current), reinterpret_cast<uintptr_t>(innermost));
  uint8_t* ts = a.New(256);
  Arena::Put<uintptr_t>(ts, l.tstate_frame, reinterpret_cast<uintptr_t>(cframe));
  return reinterpret_cast<uintptr_t>(ts);
}

// The thread's innermost frame is now `innermost` (as CPython moves it at a call or return).
inline void SetInnermost(const gpuwatch::inject::PyLayout& l, uintptr_t tstate, uint8_t* innermost) {
  uintptr_t cframe = 0;
  std::memcpy(&cframe, reinterpret_cast<const uint8_t*>(tstate) + l.tstate_frame, sizeof cframe);
  Arena::Put<uintptr_t>(reinterpret_cast<uint8_t*>(cframe), static_cast<size_t>(l.cframe_current),
                        reinterpret_cast<uintptr_t>(innermost));
}

}  // namespace fakepy

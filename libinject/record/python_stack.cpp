// See python_stack.h. Every pointer read here goes through SafeRead.
#include "record/python_stack.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "record/safe_read.h"

namespace gpuwatch::inject {
namespace {

constexpr int kMaxWalk = 256;              // frames followed (shims included) before giving up
constexpr size_t kMaxTable = 4096;         // location-table bytes read per frame
constexpr size_t kMaxStr = 200;            // characters of a file name or function
constexpr uint8_t kOwnedByCStack = 3;      // 3.12+: an entry shim, not a Python frame

}  // namespace

PyLayout Layout311() {
  PyLayout l;
  l.minor = 11;
  l.tstate_frame = 56, l.cframe_current = 8;
  l.frame_code = 32, l.frame_previous = 48, l.frame_instr = 56, l.frame_owner = 69;
  l.code_filename = 112, l.code_qualname = 128, l.code_firstlineno = 72, l.code_linetable = 136;
  l.code_adaptive = 184;
  l.ascii_size = 48;  // 3.11 still has the wstr pointer
  return l;
}

PyLayout Layout312() {
  PyLayout l;
  l.minor = 12;
  l.tstate_frame = 56, l.cframe_current = 0;
  l.frame_code = 0, l.frame_previous = 8, l.frame_instr = 56, l.frame_owner = 70;
  l.owner_skips_cstack = true;
  l.code_filename = 112, l.code_qualname = 128, l.code_firstlineno = 68, l.code_linetable = 136;
  l.code_adaptive = 192;
  l.ascii_size = 40;
  return l;
}

namespace {

// 3.13's _Py_DebugOffsets: where each offset sits in it (its own layout, fixed for 3.13.x).
struct DebugOffsets313 {
  static constexpr size_t kSize = 584;
  static constexpr size_t kVersion = 8, kFreeThreaded = 16;
  static constexpr size_t kTstateCurrentFrame = 184;
  static constexpr size_t kFramePrevious = 232, kFrameExecutable = 240, kFrameInstr = 248, kFrameOwner = 264;
  static constexpr size_t kCodeFilename = 280, kCodeQualname = 296, kCodeLinetable = 304,
                          kCodeFirstlineno = 312, kCodeAdaptive = 344;
  static constexpr size_t kObType = 360;
  static constexpr size_t kStrState = 544, kStrLength = 552, kStrAsciiSize = 560;
};

bool Layout313(uintptr_t runtime, PyLayout* l) {
  using D = DebugOffsets313;
  uint8_t d[D::kSize];
  if (!SafeRead(runtime, d, sizeof d) || std::memcmp(d, "xdebugpy", 8) != 0) return false;
  auto at = [&](size_t off) {
    uint64_t v;
    std::memcpy(&v, d + off, sizeof v);
    return static_cast<uint32_t>(v);
  };
  uint64_t version, free_threaded;
  std::memcpy(&version, d + D::kVersion, 8);
  std::memcpy(&free_threaded, d + D::kFreeThreaded, 8);
  if ((version >> 16) != 0x030d || free_threaded) return false;
  l->minor = 13;
  l->tstate_frame = at(D::kTstateCurrentFrame), l->cframe_current = -1;
  l->frame_previous = at(D::kFramePrevious), l->frame_code = at(D::kFrameExecutable);
  l->frame_instr = at(D::kFrameInstr), l->frame_owner = at(D::kFrameOwner);
  l->owner_skips_cstack = true;
  l->code_filename = at(D::kCodeFilename), l->code_qualname = at(D::kCodeQualname);
  l->code_linetable = at(D::kCodeLinetable), l->code_firstlineno = at(D::kCodeFirstlineno);
  l->code_adaptive = at(D::kCodeAdaptive);
  l->ob_type = at(D::kObType);
  l->str_state = at(D::kStrState), l->str_length = at(D::kStrLength), l->ascii_size = at(D::kStrAsciiSize);
  return true;
}

bool Detect(PyLayout* l) {
  const auto* version = static_cast<const unsigned long*>(dlsym(RTLD_DEFAULT, "Py_Version"));  // 3.11+
  void* code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
  if (!version || !code_type) return false;
  const unsigned long v = *version;
  if ((v >> 24) != 3) return false;
  switch ((v >> 16) & 0xff) {
    case 11: *l = Layout311(); break;
    case 12: *l = Layout312(); break;
    case 13: {
      void* runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
      if (!runtime || !Layout313(reinterpret_cast<uintptr_t>(runtime), l)) return false;
      break;
    }
    default: return false;
  }
  l->code_type = reinterpret_cast<uintptr_t>(code_type);
  return true;
}

// A varint of the location table: 6 bits a byte, bit 6 says another follows.
bool ReadVarint(const uint8_t*& p, const uint8_t* end, uint64_t* v) {
  uint64_t val = 0;
  for (int shift = 0; p < end && shift < 64; shift += 6) {
    const uint8_t b = *p++;
    val |= static_cast<uint64_t>(b & 63) << shift;
    if (!(b & 64)) {
      *v = val;
      return true;
    }
  }
  return false;
}

bool ReadSvarint(const uint8_t*& p, const uint8_t* end, int64_t* v) {
  uint64_t u;
  if (!ReadVarint(p, end, &u)) return false;
  *v = (u & 1) ? -static_cast<int64_t>(u >> 1) : static_cast<int64_t>(u >> 1);
  return true;
}

// A str object's text (compact ASCII, or the UTF-8 CPython cached for a non-ASCII one).
bool ReadStr(const PyLayout& l, uintptr_t obj, char* out, size_t cap) {
  uint8_t head[128];
  const size_t head_len = std::max<size_t>(l.str_length + 8, l.str_state + 4);  // no further: a short str ends soon after
  if (head_len > sizeof head || !SafeRead(obj, head, head_len)) return false;
  uint64_t length = 0;
  uint32_t state = 0;
  std::memcpy(&length, head + l.str_length, 8);
  std::memcpy(&state, head + l.str_state, 4);
  const bool compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (!compact) return false;
  uintptr_t data = obj + l.ascii_size;
  if (!ascii) {  // PyCompactUnicodeObject: utf8_length, then the cached utf8 pointer
    if (!SafeReadValue(obj + l.ascii_size, &length) || !SafeReadValue(obj + l.ascii_size + 8, &data) || !data)
      return false;
  }
  const size_t n = length < cap - 1 ? length : cap - 1;
  if (!SafeRead(data, out, n)) return false;
  out[n] = '\0';
  for (size_t i = 0; i < n; ++i)
    if (out[i] == '\0') out[i] = '?';
  return true;
}

// A field of a struct read whole into `buf`.
template <typename T>
T Field(const uint8_t* buf, uint32_t off) {
  T v;
  std::memcpy(&v, buf + off, sizeof v);
  return v;
}

// The code object's fields a frame needs, read in one go.
struct CodeHead {
  uintptr_t type, file, func, table;
  int32_t first_line;
};

constexpr uint32_t kMaxCodeHead = 256;  // the heads' fields end by 144 in 3.11-3.13

uint32_t CodeHeadLen(const PyLayout& l) {
  const uint32_t len = std::max({l.ob_type, l.code_filename, l.code_qualname, l.code_linetable}) + 8;
  return len <= kMaxCodeHead && l.code_firstlineno + 4 <= len ? len : 0;
}

CodeHead ParseCodeHead(const PyLayout& l, const uint8_t* buf) {
  return {Field<uintptr_t>(buf, l.ob_type), Field<uintptr_t>(buf, l.code_filename), Field<uintptr_t>(buf, l.code_qualname),
          Field<uintptr_t>(buf, l.code_linetable), Field<int32_t>(buf, l.code_firstlineno)};
}

// Frames live in their thread's data stack (3.11+), each caller's just below its callee's:
// one read of the span below a frame usually holds the frames that called it too. A frame
// elsewhere (a generator's, a shim on the C stack, the next chunk of the data stack) costs
// a read of its own span. The span is read at one instant, so its frames are as consistent
// as one frame read alone.
class FrameWindow {
 public:
  static constexpr uintptr_t kSpan = 4096;
  // The frame's `len` bytes at `addr`, or null when they cannot be read.
  const uint8_t* Frame(uintptr_t addr, uint32_t len) {
    if (addr >= base_ && addr - base_ + len <= len_) return buf_ + (addr - base_);
    const uintptr_t end = addr + len;
    if (end < addr) return nullptr;
    // As far down as the span goes; where that reaches memory not mapped, from the frame's
    // own page; then the frame alone.
    const uintptr_t page = addr & ~uintptr_t{4095};
    uintptr_t tried = UINTPTR_MAX;
    for (const uintptr_t lo : {end > kSpan ? end - kSpan : uintptr_t{0}, page, addr}) {
      if (lo == tried || lo > addr || end - lo > kSpan) continue;
      tried = lo;
      if (!SafeRead(lo, buf_, end - lo)) continue;
      base_ = lo;
      len_ = end - lo;
      return buf_ + (addr - lo);
    }
    len_ = 0;
    return nullptr;
  }

 private:
  uint8_t buf_[kSpan];
  uintptr_t base_ = 0, len_ = 0;
};

// Names and location table of a code object, read once.
bool ReadCode(const PyLayout& l, uintptr_t code, const CodeHead& h, PyCodeCache::Entry* e) {
  char file[kMaxStr + 1], func[kMaxStr + 1];
  if (!ReadStr(l, h.file, file, sizeof file)) return false;
  if (!ReadStr(l, h.func, func, sizeof func)) std::strcpy(func, "?");
  e->code = code, e->file_obj = h.file, e->func_obj = h.func, e->table_obj = h.table, e->first_line = h.first_line;
  e->file = file;
  e->func = func;
  e->table.clear();
  int64_t table_len = 0;
  if (SafeReadValue(h.table + l.bytes_size, &table_len) && table_len > 0) {
    e->table.resize(std::min<size_t>(static_cast<size_t>(table_len), kMaxTable));
    if (!SafeRead(h.table + l.bytes_data, e->table.data(), e->table.size())) e->table.clear();
  }
  return true;
}

// "file:line in function" of code object `code` at instruction pointer `instr`.
bool DescribeFrame(const PyLayout& l, uintptr_t code, const CodeHead& h, uintptr_t instr, PyCodeCache* cache,
                   PyFrameText* out) {
  const int64_t unit = (static_cast<int64_t>(instr) - static_cast<int64_t>(code + l.code_adaptive)) / 2;
  if (unit < 0 || unit > (1 << 24)) return false;  // a frame not started yet, or not this code's
  PyCodeCache::Entry local;
  PyCodeCache::Entry* e = cache ? &cache->Slot(code) : &local;
  // A cached code object is the same one only if its fields still read the same (a freed
  // code object's address may be reused).
  const bool hit = cache && e->code == code && e->file_obj == h.file && e->func_obj == h.func &&
                   e->table_obj == h.table && e->first_line == h.first_line;
  if (!hit) {
    e->where_instr = 0;
    if (!ReadCode(l, code, h, e)) {
      e->code = 0;
      return false;
    }
  }
  if (hit && e->where_instr == instr) {
    std::memcpy(out->where, e->where.c_str(), e->where.size() + 1);
    return true;
  }
  int line = e->table.empty() ? -1 : LineFromLocationTable(e->table.data(), e->table.size(), e->first_line, unit);
  if (line < 0) line = e->first_line;
  std::snprintf(out->where, sizeof out->where, "%s:%d in %s", e->file.c_str(), line, e->func.c_str());
  e->where_instr = instr;
  e->where = out->where;
  return true;
}

}  // namespace

const PyLayout* PythonLayout() {
  static const PyLayout* layout = [] {
    static PyLayout l;
    return Detect(&l) ? &l : nullptr;
  }();
  return layout;
}

uintptr_t ThisThreadPyState() {
  using Fn = void* (*)();
  static const Fn get = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState"));
  return get && PythonLayout() ? reinterpret_cast<uintptr_t>(get()) : 0;
}

int LineFromLocationTable(const uint8_t* table, size_t len, int first_line, int64_t unit) {
  const uint8_t* p = table;
  const uint8_t* end = table + len;
  int64_t line = first_line, addr = 0;
  while (p < end) {
    const uint8_t head = *p++;
    if (!(head & 0x80)) return -1;  // every entry starts with the high bit set
    const int code = (head >> 3) & 15;
    const int64_t units = (head & 7) + 1;
    bool has_line = true;
    int64_t delta = 0;
    uint64_t skip;
    switch (code) {
      case 15: has_line = false; break;  // no location
      case 14:                           // long form: line delta, end line, columns
        if (!ReadSvarint(p, end, &delta) || !ReadVarint(p, end, &skip) || !ReadVarint(p, end, &skip) ||
            !ReadVarint(p, end, &skip))
          return -1;
        break;
      case 13:  // no columns
        if (!ReadSvarint(p, end, &delta)) return -1;
        break;
      case 10: case 11: case 12:  // one-line forms: the delta is in the code, two column bytes
        if (end - p < 2) return -1;
        delta = code - 10;
        p += 2;
        break;
      default:  // short forms: same line, one column byte
        if (end - p < 1) return -1;
        p += 1;
        break;
    }
    line += delta;
    if (unit >= addr && unit < addr + units) return has_line ? static_cast<int>(line) : -1;
    addr += units;
  }
  return -1;
}

int ReadPythonStack(const PyLayout& l, uintptr_t tstate, PyFrameText* out, int max, PyCodeCache* cache) {
  if (!tstate || max <= 0) return 0;
  uintptr_t frame = 0;
  if (!SafeReadValue(tstate + l.tstate_frame, &frame)) return 0;
  if (l.cframe_current >= 0 && (!frame || !SafeReadValue(frame + static_cast<uint32_t>(l.cframe_current), &frame)))
    return 0;
  const uint32_t frame_len = std::max({l.frame_code + 8, l.frame_previous + 8, l.frame_instr + 8, l.frame_owner + 1});
  const uint32_t head_len = CodeHeadLen(l);
  if (frame_len > 256 || head_len == 0) return 0;
  // The frames first (their code objects and instructions), then every code object's head in
  // one read: two reads a frame before, a few a stack now (docs/PERFORMANCE.md).
  constexpr int kMaxFrames = 16;  // what the sampler and the call sites ask for; ~8 KiB of stack here
  max = std::min(max, kMaxFrames);
  uintptr_t codes[kMaxFrames], instrs[kMaxFrames];
  int found = 0;
  FrameWindow window;
  for (int walked = 0; frame && found < max && walked < kMaxWalk; ++walked) {
    const uint8_t* buf = window.Frame(frame, frame_len);
    if (!buf) break;
    const auto code = Field<uintptr_t>(buf, l.frame_code);
    const auto previous = Field<uintptr_t>(buf, l.frame_previous);
    if (!(l.owner_skips_cstack && buf[l.frame_owner] == kOwnedByCStack)) {  // not a shim
      if (!code) break;  // not a frame
      codes[found] = code;
      instrs[found++] = Field<uintptr_t>(buf, l.frame_instr);
    }
    if (previous == frame) break;
    frame = previous;
  }
  uint8_t heads[kMaxFrames][kMaxCodeHead];
  SafeRange ranges[kMaxFrames];
  for (int i = 0; i < found; ++i) ranges[i] = {codes[i], heads[i], head_len};
  const size_t read = SafeReadEach(ranges, static_cast<size_t>(found));
  int n = 0;
  for (size_t i = 0; i < read; ++i) {
    const CodeHead h = ParseCodeHead(l, heads[i]);
    if (h.type != l.code_type) break;  // not a frame: nor are those it points to
    if (DescribeFrame(l, codes[i], h, instrs[i], cache, &out[n])) ++n;
  }
  return n;
}

}  // namespace gpuwatch::inject

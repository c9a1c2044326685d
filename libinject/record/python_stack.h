// A thread's Python stack read without the GIL (issue 16). Taking the GIL inside a hook
// could deadlock (the thread that holds it may wait on a lock the caller holds), and torch
// releases it around its syncs (.item() does), so the frames are read as a debugger reads
// them: CPython's own structures, through SafeRead (safe_read.h), so a stale or garbage
// pointer ends the walk instead of crashing the job.
//
// Layouts: 3.11 and 3.12 from their headers (Include/internal/pycore_frame.h,
// pycore_code.h, cpython/pystate.h, cpython/unicodeobject.h at those tags), 3.13 from the
// _Py_DebugOffsets the interpreter publishes at the start of _PyRuntime for exactly this.
// Other versions (3.10's PyFrameObject chain, 3.14's changed debug offsets, free-threaded
// builds) are not read: no frame, as without Python.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gpuwatch::inject {

// Where each field lives, for the running interpreter (or a test's fake one).
struct PyLayout {
  int minor = 0;                 // 3.minor
  uint32_t tstate_frame = 0;     // PyThreadState: 3.11/3.12 `cframe`, 3.13 `current_frame`
  int32_t cframe_current = -1;   // _PyCFrame's `current_frame`; -1: tstate_frame is the frame
  uint32_t frame_previous = 0, frame_code = 0, frame_instr = 0, frame_owner = 0;
  bool owner_skips_cstack = false;  // 3.12+: frames owned by the C stack (3) are shims
  uint32_t ob_type = 8;
  uint32_t code_filename = 0, code_qualname = 0, code_firstlineno = 0, code_linetable = 0,
           code_adaptive = 0;
  uint32_t bytes_size = 16, bytes_data = 32;  // PyBytesObject: ob_size, ob_sval
  uint32_t str_length = 16, str_state = 32, ascii_size = 0;  // compact ASCII str: data after
  uintptr_t code_type = 0;       // &PyCode_Type: every frame's code object is checked against it
};

// The layouts of 3.11 and 3.12 (without code_type: the running interpreter's PyCode_Type).
PyLayout Layout311();
PyLayout Layout312();

// The interpreter in this process, found once (dlsym of Py_Version, _PyRuntime,
// PyCode_Type). Null without a supported CPython. The first call does the dlsyms: call it
// off the hot path first (WarmUpCallSites does).
const PyLayout* PythonLayout();

// The calling thread's PyThreadState, or 0: PyGILState_GetThisThreadState, a thread-local
// read that CPython documents as callable without the GIL.
uintptr_t ThisThreadPyState();

// One frame as "file:line in function" (line from the code object's location table at the
// frame's current instruction; the function's first line when the table cannot be read).
struct PyFrameText {
  static constexpr size_t kMax = 240;
  char where[kMax];
};

// Code objects already read (names, location table), so that a stack seen again costs a few
// reads in all: the frames (a span of the data stack at a time) and their code objects'
// heads (in one read), each compared with the cached one. One owner at a time (the host
// sampler's thread). Bounded: kSets x kWays entries.
class PyCodeCache {
 public:
  // Two ways a set, the set from a mix of the address: code objects lie next to each other
  // in memory, and with the set from the address's low bits (direct-mapped, 256 slots, one
  // per 16 bytes) two of a 12-frame stack's shared a slot whenever they were 4 KiB apart,
  // and each sample read both again.
  static constexpr size_t kSets = 256, kWays = 2;
  struct Entry {
    uintptr_t code = 0, file_obj = 0, func_obj = 0, table_obj = 0;
    int32_t first_line = 0;
    std::string file, func;
    std::vector<uint8_t> table;  // co_linetable (at most 4 KiB)
    // The text of the last instruction a frame of it was at: a sampled loop is at the same
    // few again and again, and decoding the table and formatting the text were a fifth of
    // the sampler's CPU for a 15-frame stack.
    uintptr_t where_instr = 0;
    std::string where;
    uint64_t used = 0;  // when last returned by Slot: the set's older way is replaced
  };
  // The entry that holds `code`, or the one to read it into.
  static size_t SetOf(uintptr_t code) { return ((code * 0x9E3779B97F4A7C15ull) >> 56) % kSets; }
  Entry& Slot(uintptr_t code) {
    static_assert(kWays == 2, "the lookup below names both ways");
    Entry* set = &slots_[SetOf(code) * kWays];
    Entry* e = set[0].code == code ? &set[0] : set[1].code == code ? &set[1] : set[0].used <= set[1].used ? &set[0] : &set[1];
    e->used = ++clock_;
    return *e;
  }

 private:
  Entry slots_[kSets * kWays];
  uint64_t clock_ = 0;
};

// Up to `max` frames of the thread whose state is `tstate`, innermost first. Stops at the
// first read that fails or at a frame whose code object is not one. The thread should be
// stopped inside a hook (its frames cannot change then); for a running thread (the host
// sampler) a frame may be torn, and is then dropped or misread, never followed into a crash.
// `cache`: null reads every code object's names again (a call site, after a long wait).
int ReadPythonStack(const PyLayout& layout, uintptr_t tstate, PyFrameText* out, int max,
                    PyCodeCache* cache = nullptr);

// The line of code-unit offset `unit` in a 3.11+ location table (co_linetable), counting
// from `first_line`; -1 when the offset has no line or the table ends first.
int LineFromLocationTable(const uint8_t* table, size_t len, int first_line, int64_t unit);

}  // namespace gpuwatch::inject

// Capturing and interning call sites on the application's thread (after a long wait), and
// handing copies to the sender thread.
#include "record/call_sites.h"

#include <dlfcn.h>
#include <execinfo.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "record/python_stack.h"
#include "record/python_stacks.h"
#include "record/registry.h"

namespace gpuwatch::inject {

std::atomic<uint64_t> g_call_site_min_ticks{UINT64_MAX};

namespace {

constexpr int kSkipFrames = 2;  // CaptureCallSite and the hook's template
using Site = CapturedSite;

struct Sites {
  std::mutex mu;
  std::vector<Site> all;  // id - 1
  std::unordered_map<uint64_t, uint32_t> by_hash;
};

Sites& S() {
  static Sites* s = new Sites;  // leaked: hooks may run during exit
  return *s;
}

// CPython's C API, looked up in the process (the python executable exports it): the
// fallback for interpreters python_stack.h cannot read (3.10 and older), only while the
// calling thread holds the GIL, so nothing here can run Python concurrently.
struct PyApi {
  int (*gil_check)();
  void* (*get_frame)();
  int (*line_number)(void*);
  void* (*frame_code)(void*);
  void* (*get_attr)(void*, const char*);
  const char* (*as_utf8)(void*);
  void (*dec_ref)(void*);
  void (*err_clear)();
  bool ok() const {
    return gil_check && get_frame && line_number && frame_code && get_attr && as_utf8 && dec_ref && err_clear;
  }
};

const PyApi& Py() {
  static const PyApi api = [] {
    auto sym = [](const char* n) { return dlsym(RTLD_DEFAULT, n); };
    return PyApi{reinterpret_cast<int (*)()>(sym("PyGILState_Check")),
                 reinterpret_cast<void* (*)()>(sym("PyEval_GetFrame")),
                 reinterpret_cast<int (*)(void*)>(sym("PyFrame_GetLineNumber")),
                 reinterpret_cast<void* (*)(void*)>(sym("PyFrame_GetCode")),
                 reinterpret_cast<void* (*)(void*, const char*)>(sym("PyObject_GetAttrString")),
                 reinterpret_cast<const char* (*)(void*)>(sym("PyUnicode_AsUTF8")),
                 reinterpret_cast<void (*)(void*)>(sym("Py_DecRef")),
                 reinterpret_cast<void (*)()>(sym("PyErr_Clear"))};
  }();
  return api;
}

// "file:line in function" of the innermost Python frame, when this thread holds the GIL
// (an interpreter python_stack.h cannot read: calls that release the GIL get native frames).
void PythonFrameWithGil(char* out, size_t cap) {
  const PyApi& py = Py();
  if (!py.ok() || !py.gil_check()) return;
  void* frame = py.get_frame();  // borrowed
  if (!frame) return;
  const int line = py.line_number(frame);
  void* code = py.frame_code(frame);  // new reference
  if (!code) return py.err_clear();
  const char* file = nullptr;
  const char* func = nullptr;
  void* f = py.get_attr(code, "co_filename");
  void* n = py.get_attr(code, "co_name");
  if (f) file = py.as_utf8(f);
  if (n) func = py.as_utf8(n);
  std::snprintf(out, cap, "%s:%d in %s", file ? file : "?", line, func ? func : "?");
  if (f) py.dec_ref(f);
  if (n) py.dec_ref(n);
  py.dec_ref(code);
  py.err_clear();
}

// The calling thread's Python stack, read without the GIL: it is blocked in our hook, so
// its frames stay as they are while we read them.
void PythonStack(Site* s) {
  const PyLayout* layout = PythonLayout();
  if (!layout) return PythonFrameWithGil(s->python, sizeof s->python);
  PyFrameText frames[Site::kMaxPythonFrames];
  const int n = ReadPythonStack(*layout, ThisThreadPyState(), frames, Site::kMaxPythonFrames);
  if (n == 0) return;
  std::snprintf(s->python, sizeof s->python, "%s", frames[0].where);
  s->python_stack = InternPythonStack(frames, n);
}

uint64_t Hash(const Site& s) {
  uint64_t h = HashBytes(s.pcs, sizeof(void*) * static_cast<size_t>(s.n));
  return h ^ (HashBytes(s.python, std::strlen(s.python)) * 31) ^ (uint64_t{s.python_stack} << 40);
}

}  // namespace

void WarmUpCallSites() {
  void* pcs[4];
  backtrace(pcs, 4);
  (void)Py();
  (void)PythonLayout();
  (void)ThisThreadPyState();
}

uint32_t CaptureCallSite() {
  Site s;
  void* pcs[Site::kMaxFrames + kSkipFrames];
  const int n = backtrace(pcs, Site::kMaxFrames + kSkipFrames);
  if (n <= kSkipFrames) return 0;
  s.n = n - kSkipFrames;
  std::memcpy(s.pcs, pcs + kSkipFrames, sizeof(void*) * static_cast<size_t>(s.n));
  PythonStack(&s);
  const uint64_t h = Hash(s);
  Sites& all = S();
  std::lock_guard<std::mutex> lock(all.mu);  // after a wait of a millisecond or more
  auto it = all.by_hash.find(h);
  if (it != all.by_hash.end()) return it->second;
  if (all.all.size() >= kMaxCallSites) return 0;
  all.all.push_back(s);
  const auto id = static_cast<uint32_t>(all.all.size());
  all.by_hash.emplace(h, id);
  return id;
}

bool FindCallSite(uint32_t id, CapturedSite* out) {
  Sites& all = S();
  std::lock_guard<std::mutex> lock(all.mu);
  if (id == 0 || id > all.all.size()) return false;
  *out = all.all[id - 1];
  return true;
}

}  // namespace gpuwatch::inject

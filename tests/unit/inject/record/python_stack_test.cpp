// The GIL-free Python frame reader (issue 16) on a fake interpreter built in memory: the
// walk, the location table, the strings, and what garbage pointers give (no frame, no
// crash; run under ASan + UBSan by scripts/sanitize_unit.sh). The real interpreters are
// read end to end by tests/e2e/diagnosis_test.cpp (Debian's python3).
#include <catch2/catch.hpp>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "fake_python.h"
#include "record/python_stack.h"
#include "record/safe_read.h"

namespace gi = gpuwatch::inject;

namespace {

using namespace fakepy;  // NOLINT(google-build-using-namespace): the fake interpreter's builders

std::vector<std::string> Walk(const gi::PyLayout& l, uintptr_t tstate, gi::PyCodeCache* cache = nullptr) {
  gi::PyFrameText out[16];
  const int n = gi::ReadPythonStack(l, tstate, out, 16, cache);
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.emplace_back(out[i].where);
  return v;
}

// An address that is certainly not mapped: a page taken and given back.
uintptr_t UnmappedPage() {
  const long page = sysconf(_SC_PAGESIZE);
  void* p = mmap(nullptr, static_cast<size_t>(page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(p != MAP_FAILED);
  munmap(p, static_cast<size_t>(page));
  return reinterpret_cast<uintptr_t>(p);
}

int g_code_type_marker;

}  // namespace

TEST_CASE("python stack: the location table gives each instruction's line") {
  const auto* t = kTable.data();
  const size_t n = kTable.size();
  CHECK(gi::LineFromLocationTable(t, n, 10, 0) == 10);
  CHECK(gi::LineFromLocationTable(t, n, 10, 1) == 10);
  CHECK(gi::LineFromLocationTable(t, n, 10, 2) == 11);
  CHECK(gi::LineFromLocationTable(t, n, 10, 4) == 11);
  CHECK(gi::LineFromLocationTable(t, n, 10, 5) == 16);
  CHECK(gi::LineFromLocationTable(t, n, 10, 6) == -1);  // no location
  CHECK(gi::LineFromLocationTable(t, n, 10, 8) == 16);
  CHECK(gi::LineFromLocationTable(t, n, 10, 9) == 13);
  CHECK(gi::LineFromLocationTable(t, n, 10, 10) == 113);
  CHECK(gi::LineFromLocationTable(t, n, 10, 11) == -1);  // past the end
  CHECK(gi::LineFromLocationTable(t, 3, 10, 4) == -1);   // cut inside an entry
  const uint8_t not_an_entry[] = {0x12, 0x34};
  CHECK(gi::LineFromLocationTable(not_an_entry, 2, 10, 0) == -1);
}

TEST_CASE("python stack: a thread's frames, innermost first, shims skipped") {
  for (bool pipe : {false, true}) {
    gi::UsePipeReadsForTest(pipe);
    Arena a;
    const gi::PyLayout l = FakeLayout(reinterpret_cast<uintptr_t>(&g_code_type_marker));
    uint8_t* main_code = Code(a, l, "/home/u/train.py", "<module>", 1);
    uint8_t* step_code = Code(a, l, "/home/u/train.py", "Trainer.step", 10);
    uint8_t* item_code = Code(a, l, "/venv/lib/python3.12/site-packages/torch/_tensor.py", "item", 10);
    uint8_t* outer = Frame(a, l, main_code, 0, nullptr);
    uint8_t* shim = Frame(a, l, main_code, 0, outer, /*owner: C stack*/ 3);
    uint8_t* step = Frame(a, l, step_code, 9, shim);
    uint8_t* item = Frame(a, l, item_code, 3, step);
    const auto stack = Walk(l, ThreadState(a, l, item));
    REQUIRE(stack.size() == 3);
    CHECK(stack[0] == "/venv/lib/python3.12/site-packages/torch/_tensor.py:11 in item");
    CHECK(stack[1] == "/home/u/train.py:13 in Trainer.step");
    CHECK(stack[2] == "/home/u/train.py:1 in <module>");
  }
  gi::UsePipeReadsForTest(false);
}

TEST_CASE("python stack: garbage pointers give no frame and no crash") {
  for (bool pipe : {false, true}) {
    gi::UsePipeReadsForTest(pipe);
    Arena a;
    const gi::PyLayout l = FakeLayout(reinterpret_cast<uintptr_t>(&g_code_type_marker));
    const uintptr_t unmapped = UnmappedPage();
    uint8_t* code = Code(a, l, "/home/u/train.py", "step", 10);

    CHECK(Walk(l, 0).empty());
    CHECK(Walk(l, unmapped).empty());  // the thread state itself
    CHECK(Walk(l, 0x10).empty());      // the null page
    CHECK(Walk(l, ~uintptr_t{0} - 8).empty());  // wraps around
    // The frame pointer is garbage: unmapped, misaligned into nowhere, a kernel address.
    for (uintptr_t bad : {unmapped, uintptr_t{0xdeadbeefcafe}, uintptr_t{0xffff800000001000}}) {
      uint8_t* cframe = a.New(32);
      Arena::Put<uintptr_t>(cframe, 0, bad);
      uint8_t* ts = a.New(256);
      Arena::Put<uintptr_t>(ts, l.tstate_frame, reinterpret_cast<uintptr_t>(cframe));
      CHECK(Walk(l, reinterpret_cast<uintptr_t>(ts)).empty());
    }
    // A frame whose code pointer is not a code object (garbage, or the wrong type).
    uint8_t* junk = a.New(256);
    std::memset(junk, 0x5a, 256);
    CHECK(Walk(l, ThreadState(a, l, Frame(a, l, junk, 0, nullptr))).empty());
    uint8_t* bad_code = Frame(a, l, code, 0, nullptr);
    Arena::Put<uintptr_t>(bad_code, l.frame_code, unmapped);
    CHECK(Walk(l, ThreadState(a, l, bad_code)).empty());
    // Good innermost frame, garbage beyond it: the good one only.
    uint8_t* good = Frame(a, l, code, 2, reinterpret_cast<uint8_t*>(unmapped));
    CHECK(Walk(l, ThreadState(a, l, good)) == std::vector<std::string>{"/home/u/train.py:11 in step"});
    // A frame that is its own caller ends the walk; a cycle of two is bounded.
    uint8_t* self = Frame(a, l, code, 0, nullptr);
    Arena::Put<uintptr_t>(self, l.frame_previous, reinterpret_cast<uintptr_t>(self));
    CHECK(Walk(l, ThreadState(a, l, self)).size() == 1);
    uint8_t* x = Frame(a, l, code, 0, nullptr);
    uint8_t* y = Frame(a, l, code, 0, x);
    Arena::Put<uintptr_t>(x, l.frame_previous, reinterpret_cast<uintptr_t>(y));
    CHECK(Walk(l, ThreadState(a, l, x)).size() == 16);  // bounded by the caller's room
    // A file name whose string lies on an unmapped page: that frame is dropped.
    uint8_t* lost_file = Code(a, l, "x.py", "f", 1);
    Arena::Put<uintptr_t>(lost_file, l.code_filename, unmapped);
    CHECK(Walk(l, ThreadState(a, l, Frame(a, l, lost_file, 0, nullptr))).empty());
    // An instruction pointer outside the code object: that frame is dropped.
    uint8_t* wild = Frame(a, l, code, 0, nullptr);
    Arena::Put<uintptr_t>(wild, l.frame_instr, uintptr_t{16});
    CHECK(Walk(l, ThreadState(a, l, wild)).empty());
  }
  gi::UsePipeReadsForTest(false);
}

TEST_CASE("safe read: mapped memory reads, unmapped fails, both ways") {
  for (bool pipe : {false, true}) {
    gi::UsePipeReadsForTest(pipe);
    std::vector<uint8_t> src(10000);
    for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7);
    std::vector<uint8_t> dst(src.size());
    CHECK(gi::SafeRead(reinterpret_cast<uintptr_t>(src.data()), dst.data(), dst.size()));  // several pipe chunks
    CHECK(dst == src);
    uint64_t v = 0;
    CHECK_FALSE(gi::SafeReadValue(UnmappedPage(), &v));
    CHECK_FALSE(gi::SafeReadValue(uintptr_t{0}, &v));
    CHECK(gi::SafeReadValue(reinterpret_cast<uintptr_t>(src.data()), &v));  // still usable after a failure
  }
  gi::UsePipeReadsForTest(false);
}

TEST_CASE("python stack: the code cache gives the same frames, and notices a reused code object") {
  Arena a;
  const gi::PyLayout l = FakeLayout(reinterpret_cast<uintptr_t>(&g_code_type_marker));
  uint8_t* code = Code(a, l, "/home/u/train.py", "step", 10);
  uint8_t* outer_code = Code(a, l, "/home/u/train.py", "<module>", 1);
  uint8_t* inner = Frame(a, l, code, 2, Frame(a, l, outer_code, 0, nullptr));
  const uintptr_t ts = ThreadState(a, l, inner);
  auto cache = std::make_unique<gi::PyCodeCache>();
  const std::vector<std::string> want = {"/home/u/train.py:11 in step", "/home/u/train.py:1 in <module>"};
  CHECK(Walk(l, ts, cache.get()) == want);
  CHECK(Walk(l, ts, cache.get()) == want);  // from the cache
  // The same code object at another instruction: its own line, not the cached text's.
  Arena::Put<uintptr_t>(inner, l.frame_instr, reinterpret_cast<uintptr_t>(code) + l.code_adaptive + 2 * 9);
  CHECK(Walk(l, ts, cache.get())[0] == "/home/u/train.py:13 in step");
  Arena::Put<uintptr_t>(inner, l.frame_instr, reinterpret_cast<uintptr_t>(code) + l.code_adaptive + 2 * 2);
  CHECK(Walk(l, ts, cache.get()) == want);
  // The same address now holds another function (freed, reused): read again, not the cache's.
  Arena::Put<uintptr_t>(code, l.code_qualname, reinterpret_cast<uintptr_t>(Str(a, l, "evaluate")));
  CHECK(Walk(l, ts, cache.get())[0] == "/home/u/train.py:11 in evaluate");
  // A cached code object whose file name cannot be read any more: that frame is dropped,
  // its caller still read.
  Arena::Put<uintptr_t>(code, l.code_filename, UnmappedPage());
  CHECK(Walk(l, ts, cache.get()) == std::vector<std::string>{"/home/u/train.py:1 in <module>"});
}

TEST_CASE("safe read: several ranges in one call, counted up to the first unreadable") {
  for (bool pipe : {false, true}) {
    gi::UsePipeReadsForTest(pipe);
    const uint64_t a = 0x1111, b = 0x2222, c = 0x3333;
    uint64_t got[4] = {};
    const uintptr_t unmapped = UnmappedPage();
    auto at = [](const uint64_t& v) { return reinterpret_cast<uintptr_t>(&v); };
    const gi::SafeRange all[] = {{at(a), &got[0], 8}, {at(b), &got[1], 8}, {at(c), &got[2], 8}};
    const uint64_t calls = gi::SafeReadCallsForTest();
    CHECK(gi::SafeReadEach(all, 3) == 3);
    CHECK((got[0] == a && got[1] == b && got[2] == c));
    CHECK(gi::SafeReadCallsForTest() - calls == (pipe ? 3u : 1u));  // one syscall for all three
    const gi::SafeRange broken[] = {{at(a), &got[0], 8}, {at(b), &got[1], 8}, {unmapped, &got[2], 8}, {at(c), &got[3], 8}};
    CHECK(gi::SafeReadEach(broken, 4) == 2);
    const gi::SafeRange first_bad[] = {{unmapped, &got[0], 8}, {at(a), &got[1], 8}};
    CHECK(gi::SafeReadEach(first_bad, 2) == 0);
    const gi::SafeRange null_one[] = {{at(a), &got[0], 8}, {0, &got[1], 8}, {at(b), &got[2], 8}};
    CHECK(gi::SafeReadEach(null_one, 3) == 1);
    CHECK(gi::SafeReadEach(all, 0) == 0);
  }
  gi::UsePipeReadsForTest(false);
}

TEST_CASE("python stack: frames in a data stack are read a span at a time, at a mapping's edge too") {
  // CPython 3.11+ keeps a thread's frames in its data stack, each callee's above its
  // caller's. Twelve frames of 400 bytes from the start of a mapping whose page below is not
  // mapped, so that the span below the outermost frame cannot be read, across a page.
  const long page = sysconf(_SC_PAGESIZE);
  auto* region = static_cast<uint8_t*>(
      mmap(nullptr, 3 * static_cast<size_t>(page), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  REQUIRE(region != MAP_FAILED);
  munmap(region, static_cast<size_t>(page));
  uint8_t* stack = region + page;
  Arena a;
  const gi::PyLayout l = FakeLayout(reinterpret_cast<uintptr_t>(&g_code_type_marker));
  constexpr int kFrames = 12;
  std::vector<uint8_t*> codes;
  std::map<size_t, int> per_set;  // no more code objects in a cache set than it has ways: all cached
  while (codes.size() < kFrames) {
    uint8_t* c = Code(a, l, "/home/u/model.py", ("layer" + std::to_string(codes.size())).c_str(), 10);
    if (++per_set[gi::PyCodeCache::SetOf(reinterpret_cast<uintptr_t>(c))] <= int{gi::PyCodeCache::kWays}) codes.push_back(c);
  }
  uint8_t* previous = nullptr;
  for (int i = 0; i < kFrames; ++i) {  // outermost first
    uint8_t* f = stack + 400 * i;
    Arena::Put<uintptr_t>(f, l.frame_code, reinterpret_cast<uintptr_t>(codes[i]));
    Arena::Put<uintptr_t>(f, l.frame_previous, reinterpret_cast<uintptr_t>(previous));
    Arena::Put<uintptr_t>(f, l.frame_instr, reinterpret_cast<uintptr_t>(codes[i]) + l.code_adaptive + 2 * 2);
    Arena::Put<uint8_t>(f, l.frame_owner, 0);
    previous = f;
  }
  const uintptr_t ts = ThreadState(a, l, previous);
  std::vector<std::string> want;
  for (int i = kFrames - 1; i >= 0; --i) want.push_back("/home/u/model.py:11 in layer" + std::to_string(i));
  for (bool pipe : {false, true}) {
    gi::UsePipeReadsForTest(pipe);
    auto cache = std::make_unique<gi::PyCodeCache>();
    CHECK(Walk(l, ts, cache.get()) == want);  // names read into the cache
    const uint64_t calls = gi::SafeReadCallsForTest();
    CHECK(Walk(l, ts, cache.get()) == want);
    // The thread state and its frame pointer, a span down from the innermost frame, one
    // that fails below the outermost, that frame's page, the code objects' heads: 6 reads,
    // where a read a frame and one a code object took 26.
    INFO("pipe " << pipe);
    CHECK(gi::SafeReadCallsForTest() - calls <= (pipe ? 2u + 3u + kFrames : 6u));
  }
  gi::UsePipeReadsForTest(false);
  munmap(stack, 2 * static_cast<size_t>(page));
}

// Native frames of threads without Python (issue 16): the frame-pointer walk and the stack
// scan on stacks built in memory (garbage pointers give no frame and no crash; run under
// ASan + UBSan by scripts/sanitize_unit.sh), the CPU-time timer's captures on a real
// spinning thread, and a blocked thread read from /proc by the host sampler.
#include <catch2/catch.hpp>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "enrich/host_sampler.h"
#include "enrich/native_frame_names.h"
#include "record/native_signal.h"
#include "record/native_stack.h"
#include "record/ring.h"

namespace gi = gpuwatch::inject;

namespace {

uintptr_t At(std::vector<uintptr_t>& words, size_t i) { return reinterpret_cast<uintptr_t>(&words[i]); }

// A page that is mapped, followed by one that is not: a read crossing into it fails.
struct EdgePage {
  char* base;
  EdgePage() {
    base = static_cast<char*>(mmap(nullptr, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    munmap(base + 4096, 4096);
  }
  ~EdgePage() { munmap(base, 4096); }
};

std::atomic<bool> g_stop{false};

__attribute__((noinline)) double Spin() {
  double x = 1;
  while (!g_stop.load(std::memory_order_relaxed))
    for (int i = 0; i < 1000; ++i) x = x * 1.0000001 + 1e-9;
  return x;
}

uint32_t Tid() { return static_cast<uint32_t>(syscall(SYS_gettid)); }

}  // namespace

TEST_CASE("native stack: the frame-pointer walk follows records up the stack and stops at the end") {
  std::vector<uintptr_t> stack(64, 0);
  // Records at 4, 10 and 20: [caller's fp, return address]; the last one's fp is 0.
  stack[4] = At(stack, 10), stack[5] = 0x1111;
  stack[10] = At(stack, 20), stack[11] = 0x2222;
  stack[20] = 0, stack[21] = 0x3333;
  for (const bool in_signal : {false, true}) {
    uintptr_t pcs[gi::kNativeFrames];
    const int n = gi::WalkFramePointers(0x9999, At(stack, 4), At(stack, 0), pcs, gi::kNativeFrames, in_signal);
    REQUIRE(n == 4);
    CHECK(pcs[0] == 0x9999);
    CHECK(pcs[1] == 0x1111);
    CHECK(pcs[2] == 0x2222);
    CHECK(pcs[3] == 0x3333);
    CHECK(gi::WalkFramePointers(0x9999, At(stack, 4), At(stack, 0), pcs, 2, in_signal) == 2);  // `max` holds
  }
}

TEST_CASE("native stack: garbage frame pointers give no frame and no crash") {
  std::vector<uintptr_t> stack(64, 0);
  const uintptr_t sp = At(stack, 0);
  EdgePage edge;
  for (const bool in_signal : {false, true}) {
    uintptr_t pcs[gi::kNativeFrames];
    // Unmapped, below the stack pointer, misaligned, a record that loops back, a record
    // whose second word is on an unmapped page: only the pc.
    CHECK(gi::WalkFramePointers(0x9999, 0xdead0000000, sp, pcs, gi::kNativeFrames, in_signal) == 1);
    CHECK(gi::WalkFramePointers(0x9999, sp - 64, sp, pcs, gi::kNativeFrames, in_signal) == 1);
    CHECK(gi::WalkFramePointers(0x9999, sp + 3, sp, pcs, gi::kNativeFrames, in_signal) == 1);
    CHECK(gi::WalkFramePointers(0x9999, reinterpret_cast<uintptr_t>(edge.base + 4096 - 8), reinterpret_cast<uintptr_t>(edge.base),
                                pcs, gi::kNativeFrames, in_signal) == 1);
    stack[8] = At(stack, 8), stack[9] = 0x1111;  // fp -> itself
    CHECK(gi::WalkFramePointers(0x9999, At(stack, 8), sp, pcs, gi::kNativeFrames, in_signal) == 2);
    CHECK(gi::WalkFramePointers(0, At(stack, 8), sp, pcs, gi::kNativeFrames, in_signal) == 0);  // no pc: nothing
  }
  // The handler's body on garbage registers: a capture of the pc alone.
  gi::CpuTimerCaptures::CaptureForTest(gi::CpuTimerCaptures::kSlots - 1, 0x4242, 0xdead0000000, sp);
  gi::CpuTimerCaptures::Capture c;
  REQUIRE(gi::CpuTimerCaptures::Latest(gi::CpuTimerCaptures::kSlots - 1, &c));
  CHECK(c.n == 1);
  CHECK(c.pcs[0] == 0x4242);
}

#if defined(__x86_64__)
TEST_CASE("native stack: a blocked thread's stack is scanned for return addresses, then the chain") {
  // "Code": calls (E8 rel32) ending at 15, 35 and 55; only addresses right after one count.
  std::vector<uint8_t> code(64, 0x90);
  code[10] = code[30] = code[50] = 0xE8;
  const auto base = reinterpret_cast<uintptr_t>(code.data());
  gi::CodeRanges ranges;
  ranges.AddForTest(base, base + code.size());
  CHECK(ranges.IsReturnAddress(base + 15));
  CHECK(!ranges.IsReturnAddress(base + 16));          // code, not after a call
  CHECK(!ranges.IsReturnAddress(0x1234));             // not code
  std::vector<uintptr_t> stack(2048, 0);
  stack[0] = 7;
  stack[1] = base + 16;  // code but no call: skipped
  stack[2] = base + 15;  // the syscall wrapper's caller
  stack[4] = At(stack, 7), stack[5] = base + 35;  // its frame record
  stack[7] = 0, stack[8] = base + 55;             // the next one, the chain's end
  uintptr_t pcs[gi::kNativeFrames];
  const int n = gi::ScanStack(0x9999, At(stack, 0), ranges, pcs, gi::kNativeFrames);
  REQUIRE(n == 4);
  CHECK(pcs[0] == 0x9999);
  CHECK(pcs[1] == base + 15);
  CHECK(pcs[2] == base + 35);
  CHECK(pcs[3] == base + 55);
  // A stack pointer on an unmapped page: the pc alone.
  EdgePage edge;
  CHECK(gi::ScanStack(0x9999, reinterpret_cast<uintptr_t>(edge.base + 4096), ranges, pcs, gi::kNativeFrames) == 1);
}
#endif

TEST_CASE("native stack: a CPU-time timer captures a running thread, never a blocked one") {
  REQUIRE(gi::CpuTimerCaptures::Install() > 0);
  CHECK(gi::CpuTimerCaptures::StillOurs());
  g_stop = false;
  std::atomic<uint32_t> tid{0};
  std::thread spinner([&] {
    tid = Tid();
    Spin();
  });
  while (!tid) std::this_thread::yield();
  const int slot = gi::CpuTimerCaptures::Arm(tid.load(), 2'000'000);  // every 2 ms of its CPU time
  REQUIRE(slot >= 0);
  const uint64_t before = gi::CpuTimerCaptures::captures();
  gi::CpuTimerCaptures::Capture c;
  bool in_spin = false;
  for (int i = 0; i < 200 && !in_spin; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    const auto spin = reinterpret_cast<uintptr_t>(&Spin);
    in_spin = gi::CpuTimerCaptures::Latest(slot, &c) && c.n >= 1 && c.pcs[0] >= spin && c.pcs[0] < spin + 256;
  }
  CHECK(in_spin);
  CHECK(gi::CpuTimerCaptures::captures() > before);
  gi::CpuTimerCaptures::Disarm(slot);
  g_stop = true;
  spinner.join();

  // A thread blocked in read() with a timer armed: its CPU clock does not move, so no signal
  // comes and the read returns the byte written, not EINTR.
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  std::atomic<uint32_t> reader_tid{0};
  ssize_t got = 0;
  int read_errno = 0;
  std::thread reader([&] {
    reader_tid = Tid();
    char ch;
    got = read(fds[0], &ch, 1);
    read_errno = errno;
  });
  while (!reader_tid) std::this_thread::yield();
  const int blocked_slot = gi::CpuTimerCaptures::Arm(reader_tid.load(), 1'000'000);
  REQUIRE(blocked_slot >= 0);
  const uint64_t captured = gi::CpuTimerCaptures::captures();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(write(fds[1], "x", 1) == 1);
  reader.join();
  gi::CpuTimerCaptures::Disarm(blocked_slot);
  CHECK(got == 1);
  CHECK(read_errno == 0);
  CHECK(gi::CpuTimerCaptures::captures() - captured <= 1);  // at most one, while it started
  close(fds[0]);
  close(fds[1]);
}

TEST_CASE("native stack: the sampler reads a blocked thread from /proc and the sender names it") {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  std::atomic<uint32_t> tid{0};
  std::thread reader([&] {
    tid = Tid();
    char ch;
    (void)!read(fds[0], &ch, 1);
  });
  while (!tid) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // in read() by now
  gi::Ring ring(64);
  ring.tid = tid.load();
  ring.owner_alive = true;
  gi::HostSampler sampler;
  sampler.EnableNativeForTest(100, gi::NativeFrames::kProc);
  gi::Ring* rings[] = {&ring};
  sampler.SampleOnce(rings, 1);
  std::vector<gi::HostSampler::NativeSample> got;
  sampler.DrainNative(got);
  REQUIRE(write(fds[1], "x", 1) == 1);
  reader.join();
  REQUIRE(got.size() == 1);
  CHECK(got[0].tid == tid.load());
  CHECK(got[0].syscall == SYS_read);
  CHECK(got[0].n >= 2);  // the pc in libc and at least its caller
  CHECK(sampler.totals().native_samples == 1);
  // Named on the sender's side: the syscall, and the innermost frame in libc.
  gi::NativeFrameNames names;
  const uint32_t id = names.StackOf(got[0]);
  REQUIRE(id > gi::kNativeStackIdBase);
  CHECK(names.StackOf(got[0]) == id);  // interned
  gi::NativeStackText text;
  REQUIRE(names.Find(id, &text));
  CHECK(text.blocked_in == "read");
  CHECK(text.frames[0].find("libc.so") != std::string::npos);
  close(fds[0]);
  close(fds[1]);
}

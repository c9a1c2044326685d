// See native_stack.h.
#include "record/native_stack.h"

#include <elf.h>
#include <link.h>

#include <algorithm>
#include <cstring>

#include "record/safe_read.h"

namespace gpuwatch::inject {
namespace {

constexpr uintptr_t kWord = sizeof(uintptr_t);

// Appends the return addresses of the frame-pointer chain starting at the record at `fp`,
// each record above the previous one (stacks grow down).
int FollowChain(uintptr_t fp, uintptr_t floor, uintptr_t* out, int n, int max, bool in_signal) {
  while (n < max) {
    if (fp < floor || fp - floor > kMaxFrameBytes || (fp & (kWord - 1)) != 0) break;
    uintptr_t record[2];  // the caller's fp, the return address
    if (!(in_signal ? SignalSafeRead(fp, record, sizeof record) : SafeRead(fp, record, sizeof record))) break;
    if (record[1] == 0) break;
    out[n++] = record[1];
    floor = fp + sizeof record;
    fp = record[0];
  }
  return n;
}

}  // namespace

int WalkFramePointers(uintptr_t pc, uintptr_t fp, uintptr_t sp, uintptr_t* out, int max, bool in_signal) {
  if (max <= 0 || pc == 0) return 0;
  out[0] = pc;
  return FollowChain(fp, sp, out, 1, max, in_signal);
}

void CodeRanges::Refresh() {
  ranges_.clear();
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* self) {
        auto& ranges = static_cast<CodeRanges*>(self)->ranges_;
        for (int i = 0; i < info->dlpi_phnum && ranges.size() < kMaxRanges; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
          const uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
          ranges.push_back({lo, lo + ph.p_memsz});
        }
        return 0;
      },
      this);
  std::sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
}

void CodeRanges::AddForTest(uintptr_t lo, uintptr_t hi) {
  ranges_.push_back({lo, hi});
  std::sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
}

bool CodeRanges::Contains(uintptr_t pc) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), pc, [](uintptr_t p, const Range& r) { return p < r.lo; });
  return it != ranges_.begin() && pc < std::prev(it)->hi;
}

bool CodeRanges::IsReturnAddress(uintptr_t pc) const {
  if (!Contains(pc)) return false;
#if defined(__x86_64__)
  // The bytes before it end a call: E8 rel32, or FF /2 (register or memory operand, with a
  // ModRM, maybe a SIB and a displacement: 2 to 7 bytes).
  uint8_t b[8];
  if (pc < sizeof b || !SafeRead(pc - sizeof b, b, sizeof b)) return false;
  if (b[8 - 5] == 0xE8) return true;
  for (int k = 2; k <= 7; ++k)
    if (b[8 - k] == 0xFF && (b[8 - k + 1] & 0x38) == 0x10) return true;
  return false;
#elif defined(__aarch64__)
  return (pc & 3) == 0;
#else
  return true;
#endif
}

int ScanStack(uintptr_t pc, uintptr_t sp, const CodeRanges& code, uintptr_t* out, int max) {
  if (max <= 0 || pc == 0) return 0;
  out[0] = pc;
  int n = 1;
  // The window above sp, a page at a time: the stack may end inside it.
  uintptr_t words[kScanBytes / kWord];
  const uintptr_t base = sp & ~(kWord - 1);
  size_t got = 0;
  while (got < kScanBytes) {
    const size_t chunk = std::min<size_t>(4096 - ((base + got) & 4095), kScanBytes - got);
    if (!SafeRead(base + got, reinterpret_cast<char*>(words) + got, chunk)) break;
    got += chunk;
  }
  const size_t count = got / kWord;
  // The first return address: the syscall wrapper's caller (the wrapper itself seldom keeps
  // a frame pointer).
  size_t i = 0;
  while (i < count && !code.IsReturnAddress(words[i])) ++i;
  if (i == count || n >= max) return n;
  out[n++] = words[i];
  // The first frame record above it, and the chain from there.
  for (size_t j = i + 1; j + 1 < count && n < max; ++j) {
    const uintptr_t at = base + j * kWord;
    const uintptr_t saved_fp = words[j];
    if (saved_fp <= at || saved_fp - at > kMaxFrameBytes || (saved_fp & (kWord - 1)) != 0) continue;
    if (!code.IsReturnAddress(words[j + 1])) continue;
    out[n++] = words[j + 1];
    return FollowChain(saved_fp, at + 2 * kWord, out, n, max, false);
  }
  return n;
}

}  // namespace gpuwatch::inject

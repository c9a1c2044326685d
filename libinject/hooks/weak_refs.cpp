// Weak references bound to a wrapper whose real function is absent: found in the loaded
// objects' relocations, cleared (hooks/weak_refs.h says why).
#include "hooks/weak_refs.h"

#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>

#include "record/real.h"

namespace gpuwatch::inject::hooks {
namespace {

#if defined(__x86_64__)
constexpr uint32_t kGlobDat = R_X86_64_GLOB_DAT, kAbs64 = R_X86_64_64;
#elif defined(__aarch64__)
constexpr uint32_t kGlobDat = R_AARCH64_GLOB_DAT, kAbs64 = R_AARCH64_ABS64;
#else
constexpr uint32_t kGlobDat = ~0u, kAbs64 = ~0u;  // elsewhere: nothing is cleared
#endif

// A slot found while the loader's list is held; cleared after it is released (the loader's
// lock must not be held across dlopen/dladdr, which take the other one).
struct Slot {
  uintptr_t* where;
  const char* name;
  uintptr_t relro_begin, relro_end;
};
constexpr int kMaxSlots = 256;  // weak references to our exports: a handful in practice

struct Scan {
  uintptr_t own_begin = 0, own_end = 0;  // this library's mapping
  Slot slots[kMaxSlots];
  int n = 0;
};

uintptr_t Absolute(ElfW(Addr) p, uintptr_t base) { return p < base ? p + base : p; }

void ScanObject(dl_phdr_info* info, Scan& scan) {
  const uintptr_t base = info->dlpi_addr;
  const ElfW(Dyn)* dyn = nullptr;
  uintptr_t relro_begin = 0, relro_end = 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_DYNAMIC) dyn = reinterpret_cast<const ElfW(Dyn)*>(base + ph.p_vaddr);
    if (ph.p_type == PT_GNU_RELRO) relro_begin = base + ph.p_vaddr, relro_end = relro_begin + ph.p_memsz;
  }
  if (dyn == nullptr) return;
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const ElfW(Rela)* rela = nullptr;
  size_t rela_bytes = 0;
  // The loader rewrites most of these to absolute addresses; the vDSO's stay relative.
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_SYMTAB) symtab = reinterpret_cast<const ElfW(Sym)*>(Absolute(d->d_un.d_ptr, base));
    else if (d->d_tag == DT_STRTAB) strtab = reinterpret_cast<const char*>(Absolute(d->d_un.d_ptr, base));
    else if (d->d_tag == DT_RELA) rela = reinterpret_cast<const ElfW(Rela)*>(Absolute(d->d_un.d_ptr, base));
    else if (d->d_tag == DT_RELASZ) rela_bytes = d->d_un.d_val;
  }
  if (!symtab || !strtab || !rela) return;
  for (size_t i = 0; i < rela_bytes / sizeof(ElfW(Rela)); ++i) {
    const uint32_t type = ELF64_R_TYPE(rela[i].r_info), sym_index = ELF64_R_SYM(rela[i].r_info);
    if ((type != kGlobDat && type != kAbs64) || sym_index == 0) continue;
    const ElfW(Sym)& sym = symtab[sym_index];
    if (ELF64_ST_BIND(sym.st_info) != STB_WEAK || sym.st_shndx != SHN_UNDEF) continue;
    if (!IsCudaStackName(strtab + sym.st_name)) continue;  // not NVTX's injection pointer, not dlsym
    auto* where = reinterpret_cast<uintptr_t*>(base + rela[i].r_offset);
    const uintptr_t value = *where;  // readable: the loader wrote it
    if (value < scan.own_begin || value >= scan.own_end || scan.n == kMaxSlots) continue;
    scan.slots[scan.n++] = Slot{where, strtab + sym.st_name, relro_begin, relro_end};
  }
}

// This library's own mapping (its PT_LOAD segments), to recognise a slot bound to it.
void FindSelf(dl_phdr_info* info, Scan& scan) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uintptr_t b = info->dlpi_addr + ph.p_vaddr, e = b + ph.p_memsz;
    if (scan.own_begin == 0 || b < scan.own_begin) scan.own_begin = b;
    if (e > scan.own_end) scan.own_end = e;
  }
}

bool Contains(const dl_phdr_info* info, uintptr_t addr) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t b = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && addr >= b && addr < b + ph.p_memsz) return true;
  }
  return false;
}

void Clear(const Slot& s) {
  const uintptr_t where = reinterpret_cast<uintptr_t>(s.where);
  const bool in_relro = where >= s.relro_begin && where < s.relro_end;
  const uintptr_t page = where & ~(static_cast<uintptr_t>(sysconf(_SC_PAGESIZE)) - 1);
  if (in_relro && mprotect(reinterpret_cast<void*>(page), sizeof(uintptr_t) + (where - page), PROT_READ | PROT_WRITE) != 0)
    return;  // left bound: the wrapper answers "not available" rather than jump to 0
  __atomic_store_n(s.where, uintptr_t{0}, __ATOMIC_RELAXED);
  if (in_relro) mprotect(reinterpret_cast<void*>(page), sizeof(uintptr_t) + (where - page), PROT_READ);
}

std::mutex g_mu;
std::atomic<unsigned long long> g_seen_loads{0};

unsigned long long LoadsSoFar() {
  unsigned long long adds = 0;
  dl_iterate_phdr([](dl_phdr_info* info, size_t size, void* out) {
    if (size >= offsetof(dl_phdr_info, dlpi_adds) + sizeof info->dlpi_adds)
      *static_cast<unsigned long long*>(out) = info->dlpi_adds;
    return 1;  // the counter is the same in every entry: the first is enough
  }, &adds);
  return adds;
}

}  // namespace

void ClearWeakRefsToAbsent() {
  std::lock_guard lock(g_mu);
  g_seen_loads.store(LoadsSoFar(), std::memory_order_relaxed);
  static Scan scan;  // under g_mu; static, so the constructor's call allocates nothing
  scan = Scan{};
  dl_iterate_phdr([](dl_phdr_info* info, size_t, void* p) {
    auto& s = *static_cast<Scan*>(p);
    if (Contains(info, reinterpret_cast<uintptr_t>(&ClearWeakRefsToAbsent))) FindSelf(info, s);
    return 0;
  }, &scan);
  if (scan.own_end == 0) return;
  dl_iterate_phdr([](dl_phdr_info* info, size_t, void* p) {
    auto& s = *static_cast<Scan*>(p);
    if (!Contains(info, reinterpret_cast<uintptr_t>(&ClearWeakRefsToAbsent))) ScanObject(info, s);
    return 0;
  }, &scan);
  for (int i = 0; i < scan.n; ++i)
    if (ResolveReal(scan.slots[i].name) == nullptr) Clear(scan.slots[i]);
}

void ClearWeakRefsIfLoaded() {
  if (LoadsSoFar() != g_seen_loads.load(std::memory_order_relaxed)) ClearWeakRefsToAbsent();
}

}  // namespace gpuwatch::inject::hooks

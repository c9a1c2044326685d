// The driver functions gpuwatch hands out wrapped (hooks_driver_memory.cpp,
// hooks_driver_copies.cpp): one real function per symbol, kept in a slot its wrapper loads
// (the driver hands out one per symbol; a different one asked for later is passed through).
#pragma once
#include <atomic>
#include <cstring>

namespace gpuwatch::inject::hooks {

// `*fn` becomes `wrapper` when the slot is free or already holds the same real function.
template <typename Fn>
void TakeSlot(std::atomic<Fn>& slot, Fn wrapper, void** fn) {
  Fn real = reinterpret_cast<Fn>(*fn);
  Fn cur = nullptr;
  if (slot.compare_exchange_strong(cur, real) || cur == real) *fn = reinterpret_cast<void*>(wrapper);
}

// `symbol` is `name` or its other exported name (`_v2`, `_ptsz`; null: none).
inline bool IsSymbol(const char* symbol, const char* name, const char* other) {
  return !std::strcmp(symbol, name) || (other && !std::strcmp(symbol, other));
}

}  // namespace gpuwatch::inject::hooks

// A first-in first-out queue on one circular buffer that doubles when full and never
// shrinks. std::deque allocates a 512-byte node every few elements and frees one at the
// other end as the queue moves, so a queue that is always moving (the step analysis holds
// every host event for a moment) paid malloc, free and a page fault per node: 10% of the
// collector's ingest time in a profile of ingest_bench.
#pragma once
#include <cstddef>
#include <memory>
#include <utility>

namespace gpuwatch::collector {

template <typename T>
class Fifo {
 public:
  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }
  T& front() { return At(0); }
  const T& front() const { return At(0); }
  T& back() { return At(size_ - 1); }
  const T& back() const { return At(size_ - 1); }
  const T& operator[](size_t i) const { return At(i); }  // i-th from the front

  // A slot at the back, to be filled in place (a large T is then copied once; a push_back
  // of a T by value copied it twice: 5% of the collector's ingest for a 150-byte HostCall).
  T& emplace_back() {
    if (size_ == cap_) Grow();
    return At(size_++);
  }
  void pop_front() {
    head_ = (head_ + 1) & (cap_ - 1);
    --size_;
  }

  Fifo() = default;
  Fifo(const Fifo& o) : buf_(o.cap_ ? new T[o.cap_] : nullptr), cap_(o.cap_), head_(0), size_(o.size_) {
    for (size_t i = 0; i < size_; ++i) buf_[i] = o.At(i);
  }
  Fifo& operator=(const Fifo&) = delete;

 private:
  T& At(size_t i) { return buf_[(head_ + i) & (cap_ - 1)]; }  // i-th from the front
  const T& At(size_t i) const { return buf_[(head_ + i) & (cap_ - 1)]; }
  // new T[] default-initializes: for a T without default member initializers the pages stay
  // untouched until a slot is written, as with the deque.
  void Grow() {
    const size_t cap = cap_ ? 2 * cap_ : 64;  // a power of two
    std::unique_ptr<T[]> bigger(new T[cap]);
    for (size_t i = 0; i < size_; ++i) bigger[i] = std::move(At(i));
    buf_ = std::move(bigger);
    cap_ = cap;
    head_ = 0;
  }

  std::unique_ptr<T[]> buf_;
  size_t cap_ = 0;  // 0 or a power of two
  size_t head_ = 0, size_ = 0;
};

}  // namespace gpuwatch::collector

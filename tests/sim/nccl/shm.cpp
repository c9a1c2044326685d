#include "shm.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace simnccl {

static_assert(std::atomic<uint64_t>::is_always_lock_free, "cross-process atomics need lock-free");

namespace {
constexpr size_t kHeader = 64;  // joined, left
// Layout: header | collectives channel | n*n pair channels | split channel. tmpfs pages
// are only allocated when touched, so the mostly unused pair channels cost nothing.
}  // namespace

bool Channel::can_post(uint64_t seq) const {
  for (int p = 0; p < m; ++p)
    if (done[p].load(std::memory_order_acquire) + ring <= seq) return false;
  return true;
}

void Channel::post(uint64_t seq, int participant, uint64_t value) const {
  Slot& s = slot(seq, participant);
  s.value = value;
  s.tag.store(seq + 1, std::memory_order_release);  // publishes value
}

bool Channel::gather(uint64_t seq, uint64_t* values) const {
  for (int p = 0; p < m; ++p) {
    Slot& s = slot(seq, p);
    if (s.tag.load(std::memory_order_acquire) != seq + 1) return false;
    values[p] = s.value;
  }
  return true;
}

size_t Segment::channel_bytes(int m, uint64_t ring) {
  return sizeof(std::atomic<uint64_t>) * m + sizeof(Slot) * m * ring;
}

bool Segment::open(const std::string& name, int nranks, std::string& error) {
  name_ = name;
  n_ = nranks;
  size_ = kHeader + channel_bytes(n_, kCollRing) + static_cast<size_t>(n_) * n_ * channel_bytes(2, kP2pRing) +
          channel_bytes(n_, kSplitRing);
  int fd = shm_open(name.c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0) {
    error = "shm_open(" + name + "): " + std::strerror(errno);
    return false;
  }
  // Every rank sizes it the same way; ftruncate to the current size keeps the contents.
  if (ftruncate(fd, static_cast<off_t>(size_)) != 0) {
    error = "ftruncate(" + name + "): " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    error = "mmap(" + name + "): " + std::strerror(errno);
    return false;
  }
  base_ = static_cast<char*>(p);
  return true;
}

void Segment::close() {
  if (base_) munmap(base_, size_);
  base_ = nullptr;
}

void Segment::unlink() { shm_unlink(name_.c_str()); }

Channel Segment::channel(size_t offset, int m, uint64_t ring) const {
  Channel c;
  c.done = reinterpret_cast<std::atomic<uint64_t>*>(base_ + offset);
  c.slots = reinterpret_cast<Slot*>(base_ + offset + sizeof(std::atomic<uint64_t>) * m);
  c.m = m;
  c.ring = ring;
  return c;
}

Channel Segment::collectives() const { return channel(kHeader, n_, kCollRing); }

Channel Segment::pair(int src, int dst) const {
  size_t off = kHeader + channel_bytes(n_, kCollRing) +
               static_cast<size_t>(src * n_ + dst) * channel_bytes(2, kP2pRing);
  return channel(off, 2, kP2pRing);
}

Channel Segment::splits() const {
  size_t off = kHeader + channel_bytes(n_, kCollRing) + static_cast<size_t>(n_) * n_ * channel_bytes(2, kP2pRing);
  return channel(off, n_, kSplitRing);
}

std::atomic<uint32_t>& Segment::joined() const { return *reinterpret_cast<std::atomic<uint32_t>*>(base_); }
std::atomic<uint32_t>& Segment::left() const { return *reinterpret_cast<std::atomic<uint32_t>*>(base_ + 4); }

}  // namespace simnccl

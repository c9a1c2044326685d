// The process tree found and summed from /proc.
#include "enrich/proc_sampler.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gpuwatch::inject {
namespace {

// Reads a small /proc file into buf (NUL-terminated); false when it cannot be read.
bool ReadSmall(const char* path, char* buf, size_t size) {
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t n = 0;
  for (;;) {
    const ssize_t r = read(fd, buf + n, size - 1 - n);
    if (r <= 0) break;
    n += static_cast<size_t>(r);
    if (n == size - 1) break;
  }
  close(fd);
  buf[n] = '\0';
  return n > 0;
}

struct Stat {
  pid_t ppid = 0;
  uint64_t ticks = 0;  // utime + stime + cutime + cstime
  uint64_t own_ticks = 0;  // utime + stime
  bool collector = false;  // gpuwatch's own collector, started by this rank
};

// The collector a rank starts stays its child (a new session, same parent): its CPU and
// reads are gpuwatch's, not the job's input pipeline. comm is cut at 15 characters.
constexpr char kCollectorComm[] = "(gpuwatch-collec";

// /proc/PID/stat: the command may contain spaces and parentheses, so fields are counted
// from the last ')': state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
// utime stime cutime cstime ...
bool ReadStat(pid_t pid, Stat& s) {
  char path[48], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  if (!ReadSmall(path, buf, sizeof buf)) return false;
  const char* p = strrchr(buf, ')');
  if (!p) return false;
  const char* open_paren = strchr(buf, '(');
  s.collector = open_paren && strncmp(open_paren, kCollectorComm, sizeof kCollectorComm - 1) == 0;
  ++p;
  uint64_t f[15] = {};
  for (int i = 0; i < 15; ++i) {
    while (*p == ' ') ++p;
    if (!*p) return false;
    if (i == 0) {
      ++p;  // state, one character
    } else {
      char* end = nullptr;
      f[i] = strtoull(p, &end, 10);
      if (end == p) return false;
      p = end;
    }
  }
  s.ppid = static_cast<pid_t>(f[1]);
  s.own_ticks = f[11] + f[12];
  s.ticks = s.own_ticks + f[13] + f[14];
  return true;
}

// /proc/PID/io: rchar and read_bytes (unreadable for another user's process: then 0).
void ReadIo(pid_t pid, uint64_t& rchar, uint64_t& read_bytes) {
  char path[48], buf[512];
  snprintf(path, sizeof path, "/proc/%d/io", static_cast<int>(pid));
  rchar = read_bytes = 0;
  if (!ReadSmall(path, buf, sizeof buf)) return;
  if (const char* p = strstr(buf, "rchar:")) rchar = strtoull(p + 6, nullptr, 10);
  if (const char* p = strstr(buf, "\nread_bytes:")) read_bytes = strtoull(p + 12, nullptr, 10);
}

bool IsNumber(const char* s) {
  if (!*s) return false;
  for (; *s; ++s)
    if (*s < '0' || *s > '9') return false;
  return true;
}

// A schedstat file: on-CPU ns, run-queue wait ns, timeslices. The wait field.
uint64_t RunWaitOf(const char* path) {
  char buf[128];
  if (!ReadSmall(path, buf, sizeof buf)) return 0;
  char* end = nullptr;
  strtoull(buf, &end, 10);
  return strtoull(end, nullptr, 10);
}

// Calls `file(path)` with /proc/PID/task/TID/<name> for each of the process's threads (the
// first ProcSampler::kMaxTasks). False when the task folder cannot be read (the process is gone).
template <class F>
bool ForEachTaskFile(pid_t pid, const char* name, F&& file) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", static_cast<int>(pid));
  DIR* d = opendir(path);
  if (!d) return false;
  size_t tasks = 0;
  while (dirent* e = readdir(d)) {
    if (!IsNumber(e->d_name) || ++tasks > ProcSampler::kMaxTasks) continue;
    char f[320];  // d_name is numeric here, but sized for any d_name
    snprintf(f, sizeof f, "/proc/%d/task/%s/%s", static_cast<int>(pid), e->d_name, name);
    file(f);
  }
  closedir(d);
  return true;
}

// Run-queue wait of every thread of the process: /proc/PID/schedstat is the main thread's
// alone, and the input pipeline's threads (a DataLoader's pin-memory thread, a C++ loader
// pool) wait for a core as much as it does. A thread that exits takes its wait with it: the
// sum can fall, and the collector counts a fall as no wait (input_io.cpp).
uint64_t ReadRunWait(pid_t pid) {
  uint64_t wait = 0;
  if (ForEachTaskFile(pid, "schedstat", [&](const char* f) { wait += RunWaitOf(f); })) return wait;
  char path[48];
  snprintf(path, sizeof path, "/proc/%d/schedstat", static_cast<int>(pid));
  return RunWaitOf(path);
}

}  // namespace

ProcSampler::ProcSampler(pid_t root) : root_(root), tree_{root} {}

std::optional<ProcTotals> ProcSampler::SampleIfDue(uint64_t now_ns) {
  if (now_ns < next_sample_ns_) return std::nullopt;
  next_sample_ns_ = now_ns + kSampleIntervalNs;
  return Sample(now_ns);
}

ProcTotals ProcSampler::Sample(uint64_t now_ns) {
  Discover(now_ns);
  static const uint64_t ns_per_tick = 1'000'000'000ull / static_cast<uint64_t>(std::max(1L, sysconf(_SC_CLK_TCK)));
  ProcTotals t;
  t.t_ns = now_ns;
  std::vector<pid_t> alive;
  alive.reserve(tree_.size());
  for (pid_t pid : tree_) {
    Stat s;
    if (!ReadStat(pid, s)) continue;  // gone: its parent's cutime/cstime and I/O now hold it
    uint64_t rc = 0, rb = 0;
    ReadIo(pid, rc, rb);
    t.cpu_ns += s.ticks * ns_per_tick;
    t.read_chars += rc;
    t.read_bytes += rb;
    t.run_wait_ns += ReadRunWait(pid);
    alive.push_back(pid);
  }
  tree_.swap(alive);
  if (tree_.empty()) tree_.push_back(root_);
  t.processes = static_cast<uint32_t>(tree_.size());
  for (pid_t pid : collectors_)
    if (Stat s; ReadStat(pid, s) && s.collector) t.collector_cpu_ns += s.own_ticks * ns_per_tick;
  return t;
}

bool ProcSampler::ChildrenFromTasks(pid_t pid, std::vector<pid_t>& out) {
  bool any_file = false;
  const bool listed = ForEachTaskFile(pid, "children", [&](const char* file) {
    const int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    any_file = true;
    char buf[4096];
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return;
    buf[n] = '\0';
    for (char* p = buf; *p;) {
      char* end = nullptr;
      const long c = strtol(p, &end, 10);
      if (end == p) break;
      if (c > 0) out.push_back(static_cast<pid_t>(c));
      p = end;
    }
  });
  return listed ? any_file : true;  // gone: nothing to add, the files may still exist
}

// Every process whose parent is in the tree joins it, until nothing changes (a worker's
// own children are found in the same scan when they come after it, else in the next).
void ProcSampler::ChildrenFromScan() {
  DIR* d = opendir("/proc");
  if (!d) return;
  std::vector<std::pair<pid_t, pid_t>> procs, collectors;  // pid, ppid
  size_t seen = 0;
  while (dirent* e = readdir(d)) {
    if (!IsNumber(e->d_name) || ++seen > kMaxScan) continue;
    const pid_t pid = static_cast<pid_t>(atoi(e->d_name));
    Stat s;
    if (pid == root_ || !ReadStat(pid, s)) continue;
    (s.collector ? collectors : procs).emplace_back(pid, s.ppid);
  }
  closedir(d);
  std::vector<pid_t> tree{root_};
  for (bool grew = true; grew && tree.size() < kMaxProcs;) {
    grew = false;
    for (const auto& [pid, ppid] : procs)
      if (std::find(tree.begin(), tree.end(), ppid) != tree.end() &&
          std::find(tree.begin(), tree.end(), pid) == tree.end() && tree.size() < kMaxProcs) {
        tree.push_back(pid);
        grew = true;
      }
  }
  tree_.swap(tree);
  collectors_.clear();
  for (const auto& [pid, ppid] : collectors)
    if (std::find(tree_.begin(), tree_.end(), ppid) != tree_.end()) collectors_.push_back(pid);
}

void ProcSampler::Discover(uint64_t now_ns) {
  if (now_ns < next_tree_ns_) return;
  next_tree_ns_ = now_ns + kTreeIntervalNs;
  if (children_files_) {
    std::vector<pid_t> tree{root_}, collectors;
    bool have = true;
    for (size_t i = 0; i < tree.size() && tree.size() < kMaxProcs; ++i) {
      std::vector<pid_t> kids;
      if (!ChildrenFromTasks(tree[i], kids) && i == 0) have = false;
      for (pid_t k : kids) {
        Stat st;
        if (tree.size() >= kMaxProcs || std::find(tree.begin(), tree.end(), k) != tree.end() || !ReadStat(k, st))
          continue;
        (st.collector ? collectors : tree).push_back(k);
      }
    }
    if (have) {
      tree_.swap(tree);
      collectors_.swap(collectors);
      return;
    }
    children_files_ = false;
  }
  if (now_ns < next_scan_ns_) return;
  next_scan_ns_ = now_ns + kScanIntervalNs;
  ChildrenFromScan();
}

}  // namespace gpuwatch::inject

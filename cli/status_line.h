// `gpuwatch run`'s live status: one line on stderr, redrawn in place with \r at most twice
// a second, only when stderr is a terminal, cleared before anything else is printed.
#pragma once
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

#include <spdlog/spdlog.h>

#include "live/snapshot.h"

namespace gpuwatch::cli {

// The line for `now` (rates against `prev`, which may be null), at most `width` columns:
//   gpuwatch 00:12  ranks 4/4  events 12.3k/s  GPU busy 87%  dropped 0  own cost 0.8%
std::string FormatStatus(const collector::LiveSnapshot& now,
                         const collector::LiveSnapshot* prev, double elapsed_s, size_t width);

class StatusLine {
 public:
  static constexpr int kRefreshMs = 500;

  // Draws from `feed` on its own thread when `fd` is a terminal; does nothing otherwise.
  StatusLine(const collector::LiveFeed& feed, int fd);
  ~StatusLine() { Stop(); }
  // Stops redrawing and erases the line (idempotent).
  void Stop();
  // Makes `logger` write through a sink that erases the status line before each message
  // (the next redraw brings it back), so log lines never land in the middle of it.
  static void RouteLogs(spdlog::logger& logger, int fd);
  bool active() const { return thread_.joinable(); }

 private:
  void Loop();
  size_t Width() const;

  const collector::LiveFeed& feed_;
  int fd_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool drawn_ = false;
  std::thread thread_;
};

}  // namespace gpuwatch::cli

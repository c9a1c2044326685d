#include "status_line.h"

#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <chrono>

#include <spdlog/sinks/base_sink.h>

#include "common/format.h"

namespace gpuwatch::cli {

using collector::LiveSnapshot;

namespace {

std::string Rate(double per_s) {
  char buf[32];
  if (per_s >= 1e6) std::snprintf(buf, sizeof buf, "%.1fM", per_s / 1e6);
  else if (per_s >= 1e3) std::snprintf(buf, sizeof buf, "%.1fk", per_s / 1e3);
  else std::snprintf(buf, sizeof buf, "%.0f", per_s);
  return buf;
}

void WriteAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = write(fd, s.data() + done, s.size() - done);
    if (n <= 0) return;  // a status line is not worth retrying
    done += static_cast<size_t>(n);
  }
}

// Status line and log lines share the terminal: both write under this lock, and a log line
// first erases a drawn status line.
std::mutex g_terminal;
bool g_drawn = false;  // a status line is on screen (under g_terminal)

class StatusAwareSink final : public spdlog::sinks::base_sink<spdlog::details::null_mutex> {
 public:
  explicit StatusAwareSink(int fd) : fd_(fd) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t buf;
    formatter_->format(msg, buf);
    std::lock_guard<std::mutex> lock(g_terminal);
    if (g_drawn) WriteAll(fd_, "\r\x1b[K");
    g_drawn = false;
    WriteAll(fd_, std::string(buf.data(), buf.size()));
  }
  void flush_() override {}

 private:
  int fd_;
};

}  // namespace

void StatusLine::RouteLogs(spdlog::logger& logger, int fd) {
  logger.sinks().clear();
  logger.sinks().push_back(std::make_shared<StatusAwareSink>(fd));
  logger.set_pattern("[gpuwatch] %^%l%$: %v");
}

std::string FormatStatus(const LiveSnapshot& now, const LiveSnapshot* prev, double elapsed_s,
                         size_t width) {
  const long t = static_cast<long>(elapsed_s);
  char head[64];
  if (t >= 3600) std::snprintf(head, sizeof head, "gpuwatch %ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else std::snprintf(head, sizeof head, "gpuwatch %02ld:%02ld", t / 60, t % 60);
  std::string line = head;
  line += "  ranks " + std::to_string(now.ranks_connected);
  if (now.ranks_total != now.ranks_connected) line += "/" + std::to_string(now.ranks_total);
  const double dt =
      prev ? std::chrono::duration<double>(now.at - prev->at).count() : 0.0;
  if (prev && dt > 0 && now.events >= prev->events)
    line += "  events " + Rate((now.events - prev->events) / dt) + "/s";
  else
    line += "  events " + std::to_string(now.events);
  // GPU busy over the last interval when the device timeline moved, else so far; absent
  // without CUPTI. The timeline lags the job by its reorder window (about 2 s).
  const double d_active = prev ? now.gpu_active_s - prev->gpu_active_s : 0.0;
  if (prev && d_active > 0) {
    char b[32];
    std::snprintf(b, sizeof b, "  GPU busy %.0f%%",
                  100.0 * (now.gpu_busy_s - prev->gpu_busy_s) / d_active);
    line += b;
  } else if (now.gpu_active_s > 0) {
    char b[32];
    std::snprintf(b, sizeof b, "  GPU busy %.0f%%", 100.0 * now.gpu_busy_s / now.gpu_active_s);
    line += b;
  }
  line += "  dropped " + std::to_string(now.dropped);
  if (now.elapsed_s > 0) {  // what gpuwatch itself adds (the overhead budget)
    char b[32];
    std::snprintf(b, sizeof b, "  own cost %.1f%%", 100.0 * now.added_s / now.elapsed_s);
    line += b;
  }
  if (line.size() > width) line.resize(width);
  return line;
}

StatusLine::StatusLine(const collector::LiveFeed& feed, int fd) : feed_(feed), fd_(fd) {
  if (!isatty(fd_)) return;
  // Signals stay with the main thread, which forwards them to the command.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  thread_ = std::thread([this] { Loop(); });
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void StatusLine::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

size_t StatusLine::Width() const {
  winsize ws{};
  // One column short of the edge: a full line would wrap on some terminals and \r would
  // then redraw only its second half.
  if (ioctl(fd_, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1) return ws.ws_col - 1;
  return 79;
}

void StatusLine::Loop() {
  const auto start = std::chrono::steady_clock::now();
  std::shared_ptr<const LiveSnapshot> cur, prev;  // rates: the last two distinct snapshots
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, std::chrono::milliseconds(kRefreshMs), [this] { return stop_; })) {
    auto latest = feed_.Latest();
    if (!latest) continue;
    if (!cur || latest->at != cur->at) {
      prev = cur;
      cur = latest;
    }
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string line = "\r" + FormatStatus(*cur, prev.get(), elapsed, Width()) + "\x1b[K";
    std::lock_guard<std::mutex> terminal(g_terminal);
    WriteAll(fd_, line);
    g_drawn = drawn_ = true;
  }
  std::lock_guard<std::mutex> terminal(g_terminal);
  if (g_drawn) WriteAll(fd_, "\r\x1b[K");
  g_drawn = false;
}

}  // namespace gpuwatch::cli

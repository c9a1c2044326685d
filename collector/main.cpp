// gpuwatch-collector: receives the streams of libgpuwatch.so ranks over a Unix socket (and
// TCP when asked, --listen-tcp) and writes one summary per job; with --upstream it also
// forwards them to a root collector that writes the job-wide one (multi-host). The
// stages, one folder each (docs/ARCHITECTURE.md): ingest/ -> interpret/ -> analyze/ ->
// report/, trace/, live/; jobs/ holds the jobs and their ranks, service/ the event loop.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include "collector_main.h"
#include "endpoint.h"
#include "jobs/job_end.h"
#include "jobs/job_table.h"
#include "jobs/live_snapshot.h"
#include "live/http_server.h"
#include "service/server.h"
#include "trace/job_trace.h"

using namespace gpuwatch::collector;

namespace {

// Exit codes.
constexpr int kExitOk = 0;
constexpr int kExitStartFailed = 1;    // bad arguments, socket taken, cannot listen
constexpr int kAutostartNice = 10;     // how much lower an autostarted collector runs
constexpr int kExitSummaryUnwritten = 2;  // ran, but a summary could not be written to disk

void SetUpLogging() {
  if (spdlog::get("gpuwatch")) return;  // `gpuwatch collector`: the command set it up
  auto logger = spdlog::stderr_logger_mt("gpuwatch");  // the metrics thread may log
  logger->set_pattern("[gpuwatch] %^%l%$: %v");
  spdlog::set_default_logger(logger);
}

// --upstream tcp://HOST:PORT, with the token it must present and this host's name.
std::optional<UpstreamOptions> ParseUpstream(const std::string& arg, const std::string& token,
                                             std::string* error) {
  const auto scheme = gpuwatch::wire::kTcpScheme;
  if (arg.compare(0, scheme.size(), scheme) != 0) {
    *error = "\"" + arg + "\" is not tcp://HOST:PORT";
    return std::nullopt;
  }
  UpstreamOptions up;
  if (!gpuwatch::wire::ParseHostPort(std::string_view(arg).substr(scheme.size()), &up.root, error))
    return std::nullopt;
  if (up.root.port == 0) {
    *error = "the root collector's port cannot be 0";
    return std::nullopt;
  }
  if (token.empty()) {
    *error = "the root needs the job token: pass --token or set GPUWATCH_TOKEN";
    return std::nullopt;
  }
  up.token = token;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  up.via = host;
  // Tests only: one machine has one clock, so a host collector pretends its is off.
  if (const char* skew = std::getenv("GPUWATCH_TEST_CLOCK_SKEW_NS"); skew && *skew) {
    up.test_skew_ns = std::strtoll(skew, nullptr, 10);
    spdlog::warn("GPUWATCH_TEST_CLOCK_SKEW_NS: acting as if this host's clock were {} ns ahead",
                 up.test_skew_ns);
  }
  return up;
}

}  // namespace

int CollectorMain(int argc, char** argv) {
  SetUpLogging();

  CLI::App app{"gpuwatch-collector: receives libgpuwatch.so streams and writes job summaries"};
  std::string metrics_addr;
  app.add_option("--metrics", metrics_addr,
                 "Serve Prometheus metrics at http://ADDR:PORT/metrics while running "
                 "(ADDR empty: loopback only), e.g. --metrics :9400");
  std::string listen_path, out_dir;
  bool autostart = false;
  int linger_ms = 500, hello_timeout_ms = 30000, wait_ranks_ms = 10000, idle_exit_ms = 30000;
  app.add_option("--listen", listen_path,
                 "Unix socket path (default: $GPUWATCH_COLLECTOR, else "
                 "$GPUWATCH_SOCKET_DIR or /tmp/gpuwatch-<uid>, + /collector.sock)");
  app.add_option("-o,--out", out_dir,
                 "Output directory for every job (default: the first rank's out_dir, "
                 "else ./gpuwatch-out)");
  app.add_flag("--autostart", autostart,
               "Started by the library: exit once every job is written and nobody is "
               "connected (or nobody connected within --idle-exit-ms)");
  app.add_option("--linger-ms", linger_ms,
                 "How long a job must have no connection before it counts as ended")
      ->check(CLI::Range(0, 3600000));
  CLI::Option* wait_ranks_opt =
      app.add_option("--wait-ranks-ms", wait_ranks_ms,
                     "Extra wait for ranks that have not connected yet (fewer than world_size; "
                     "0 by default with --upstream: the other hosts' ranks never come here)")
          ->check(CLI::Range(0, 3600000));
  app.add_option("--hello-timeout-ms", hello_timeout_ms,
                 "Drop a client that sends no Hello within this time")
      ->check(CLI::Range(1, 3600000));
  app.add_option("--idle-exit-ms", idle_exit_ms,
                 "With --autostart: exit if nobody connects within this time")
      ->check(CLI::Range(1, 3600000));
  JournalOptions journal;  // its numbers: GPUWATCH_JOURNAL_*, else the defaults
  std::string journal_env_error;
  JournalOptionsFromEnv(&journal, &journal_env_error);
  uint64_t journal_max_bytes = journal.max_bytes;
  double journal_checkpoint_s = journal.checkpoint_s;
  bool no_journal = false;
  double hang_s = 300;
  if (const char* env = std::getenv("GPUWATCH_HANG_S"); env && std::atof(env) > 0)
    hang_s = std::atof(env);
  size_t max_buffered_mib = 1024;
  app.add_option("--journal-max-bytes", journal_max_bytes,
                 "Cap of each file of a rank's journal in OUT/.gpuwatch/ (default: "
                 "$GPUWATCH_JOURNAL_MAX_BYTES, else 64 MiB; past it until the next checkpoint: "
                 "counted, not kept, and said in the summary)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--journal-checkpoint-s", journal_checkpoint_s,
                 "Checkpoint each rank's interpretation into its journal this often and drop the "
                 "frames before it, and sooner when a file passes half its cap (default: "
                 "$GPUWATCH_JOURNAL_CHECKPOINT_S, else 60; 0: never)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_flag("--no-journal", no_journal,
               "Keep no journal (a collector crash then loses the job's summary)");
  app.add_option("--hang-s", hang_s,
                 "Report a rank inside a collective or sync for this long "
                 "(default: $GPUWATCH_HANG_S, else 300)")
      ->check(CLI::PositiveNumber);
  app.add_option("--max-buffered-mib", max_buffered_mib,
                 "Memory for partial frames of all clients together; the client that "
                 "exceeds it is dropped")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  std::string listen_tcp, token;
  app.add_option("--listen-tcp", listen_tcp,
                 "Also listen on TCP, for ranks on other hosts (GPUWATCH_COLLECTOR=tcp://HOST:PORT): "
                 "HOST:PORT, or :PORT / PORT for 127.0.0.1 (loopback only); port 0 picks one "
                 "and logs it. Every TCP peer must send the job token");
  app.add_option("--token", token,
                 "The job token TCP peers must present (default: $GPUWATCH_TOKEN; prefer the "
                 "variable: a command line is visible to every user in ps)");
  std::string upstream;
  app.add_option("--upstream", upstream,
                 "Also forward every rank to a root collector (multi-host): tcp://HOST:PORT "
                 "of a collector started with --listen-tcp and the same job token. This "
                 "collector still writes its own summary and trace; the root writes the job-wide "
                 "summary from the figures each host sends (its ranks' results, not their events)");
  bool upstream_raw = false;
  app.add_flag("--upstream-raw", upstream_raw,
               "With --upstream: forward every frame of the ranks unchanged and let the root "
               "interpret them (its trace then has every rank; tens of hosts at most)");
  int digest_ms = 5000;
  app.add_option("--upstream-digest-ms", digest_ms,
                 "With --upstream: send each running rank's figures this often (and once at its end)")
      ->check(CLI::Range(100, 3600000));
  int retry_ms = 5000;
  app.add_option("--upstream-retry-ms", retry_ms,
                 "With --upstream: how often to try the upstream collector again once it is lost")
      ->check(CLI::Range(100, 3600000));
  TraceOptions trace;
  std::string trace_env_error;
  TraceOptionsFromEnv(&trace, &trace_env_error);
  std::string trace_level = TraceLevelName(trace.level);
  uint64_t trace_max_mib = trace.max_bytes >> 20;
  app.add_option("--trace", trace_level,
                 "Perfetto trace OUT/trace.perfetto-trace: off, summary or full "
                 "(default: $GPUWATCH_TRACE, else full)")
      ->check(CLI::IsMember({"off", "summary", "full"}));
  app.add_option("--trace-max-mib", trace_max_mib,
                 "The trace's size: past it only syncs, copies, collectives, counters and "
                 "findings (which detail stays: --trace-keep), up to 1/8 more (default: "
                 "$GPUWATCH_TRACE_MAX_MIB, else 512)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 30));
  std::string trace_keep;
  app.add_option("--trace-keep", trace_keep,
                 "Which detail the size cap keeps: first (the start, then the summary level), "
                 "last (as much of the end as the cap holds; a run that fits keeps all) or "
                 "last:N (the last N minutes, fractions allowed; the summary level before) "
                 "(default: $GPUWATCH_TRACE_KEEP, else last)")
      ->check(TraceKeepError);
  std::string trace_window;
  app.add_option("--trace-window", trace_window,
                 "FROM:TO seconds after each rank's start: full trace detail only then, the "
                 "summary level before and after (default: $GPUWATCH_TRACE_WINDOW, else all)")
      ->check([](const std::string& s) {
        TraceOptions o;
        return ParseTraceWindow(s, &o) ? std::string() : "expected FROM:TO in seconds";
      });
  CLI11_PARSE(app, argc, argv);
  if (!trace_window.empty()) ParseTraceWindow(trace_window, &trace);
  if (!trace_keep.empty()) ParseTraceKeep(trace_keep, &trace);
  if (!metrics_addr.empty()) {  // before the socket is claimed: a typo costs nothing
    std::string host, why;
    int port = 0;
    if (!ParseListenAddress(metrics_addr, &host, &port, &why)) {
      spdlog::error("--metrics: {}", why);
      return kExitStartFailed;
    }
  }
  if (!trace_env_error.empty()) spdlog::warn("{}; using --trace {}", trace_env_error, trace_level);
  ParseTraceLevel(trace_level, &trace.level);
  trace.max_bytes = trace_max_mib << 20;

  if (listen_path.empty()) {
    std::string error;
    listen_path = gpuwatch::wire::CollectorSocketPath(&error);
    if (listen_path.empty()) {
      spdlog::error("no socket path: {}", error);
      return kExitStartFailed;
    }
  }

  std::optional<gpuwatch::wire::HostPort> tcp;
  if (!listen_tcp.empty()) {
    gpuwatch::wire::HostPort hp;
    std::string error;
    if (!gpuwatch::wire::ParseHostPort(listen_tcp, &hp, &error)) {
      spdlog::error("--listen-tcp: {}", error);
      return kExitStartFailed;
    }
    tcp = hp;
  }
  if (const char* env = std::getenv("GPUWATCH_TOKEN"); token.empty() && env) token = env;
  std::optional<UpstreamOptions> up;
  if (!upstream.empty()) {
    std::string error;
    up = ParseUpstream(upstream, token, &error);
    if (!up) {
      spdlog::error("--upstream: {}", error);
      return kExitStartFailed;
    }
    // A host collector sees only its host's ranks: waiting for world_size would only delay
    // its own summary (the root waits for everyone).
    if (wait_ranks_opt->count() == 0) wait_ranks_ms = 0;
    up->raw = upstream_raw;
    up->digest_every = std::chrono::milliseconds(digest_ms);
    up->retry = std::chrono::milliseconds(retry_ms);
    up->trace_dir = out_dir;
    trace.test_clock_skew_ns = up->test_skew_ns;
  }

  JobTable jobs(JobTiming{std::chrono::milliseconds(linger_ms),
                          std::chrono::milliseconds(wait_ranks_ms), hang_s});

  // Jobs that run at once never share a folder (jobs/out_claim.h); the trace factory gets
  // each job's claimed folder.
  jobs.ClaimOutDirs(out_dir);
  if (trace.level != TraceLevel::kOff) jobs.set_trace_factory(MakeTraceFactory("", trace));

  bool any_unwritten = false;
  auto on_job_end = [&](Job& job) {
    const FinishedJob done = FinishJob(job, out_dir);
    if (!done.written) any_unwritten = true;
    const std::string& text = done.summary.text;
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  };

  // Started by the library, the collector is the job's guest on its host: at nice +10, a
  // host whose cores the job keeps busy (its ranks, their DataLoader workers) runs the job's
  // threads first, and the collector catches up from its socket buffers and journal (the
  // library's senders buffer, then spool, and never wait for it). Started by hand (a host
  // collector, `gpuwatch collector`) it keeps the priority it was given.
  if (autostart) {
    errno = 0;
    const int now = getpriority(PRIO_PROCESS, 0);
    if (errno == 0 && setpriority(PRIO_PROCESS, 0, std::min(now + kAutostartNice, 19)) != 0)
      spdlog::debug("could not lower the collector's priority: {}", std::strerror(errno));
  }

  ServerOptions options;
  options.listen_path = listen_path;
  options.autostart = autostart;
  options.linger = std::chrono::milliseconds(linger_ms);
  options.hello_timeout = std::chrono::milliseconds(hello_timeout_ms);
  options.idle_exit = std::chrono::milliseconds(idle_exit_ms);
  options.max_buffered_bytes = max_buffered_mib << 20;
  options.journal.enabled = !no_journal;
  options.journal.out_override = out_dir;
  options.journal.max_bytes = journal_max_bytes;
  options.journal.checkpoint_s = journal_checkpoint_s;
  if (!journal_env_error.empty()) spdlog::warn("{}; using the default", journal_env_error);
  options.listen_tcp = tcp;
  options.token = token;
  options.upstream = up;

  // Live metrics: the server thread publishes snapshots, the HTTP thread serves them.
  LiveFeed feed;
  if (!metrics_addr.empty()) options.on_tick = PublishTo(feed);

  Server server(options, jobs, on_job_end);
  std::string error;
  if (!server.Start(&error)) {
    spdlog::error("{}", error);
    return kExitStartFailed;
  }
  std::unique_ptr<MetricsHttpServer> metrics;
  if (!metrics_addr.empty()) {
    metrics = ServeMetrics(metrics_addr, feed, &error);
    if (!metrics) {
      spdlog::error("{}", error);
      return kExitStartFailed;
    }
    spdlog::info("metrics at {}", metrics->url());
  }
  spdlog::info("listening on {} (pid {})", listen_path, getpid());
  if (tcp)
    spdlog::info("listening on TCP {} (every peer must present the job token)",
                 server.tcp_address());
  if (up)
    spdlog::info("forwarding to the root collector at tcp://{}",
                 gpuwatch::wire::FormatHostPort(up->root));
  server.Run();
  return any_unwritten ? kExitSummaryUnwritten : kExitOk;
}

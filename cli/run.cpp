#include "run.h"

#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "overhead_settings.h"
#include "jobs/job_end.h"
#include "jobs/job_table.h"
#include "jobs/live_snapshot.h"
#include "live/http_server.h"
#include "report/writer.h"
#include "service/server.h"
#include "diff.h"
#include "run_child.h"
#include "status_line.h"
#include "trace/job_trace.h"

extern char** environ;

namespace gpuwatch::cli {

using namespace gpuwatch::collector;
namespace fs = std::filesystem;

namespace {

// How long ranks still connected after COMMAND ended (orphaned workers) may keep sending
// before the summary is written without them; the library's own exit flush is 3 s.
constexpr auto kDrain = std::chrono::seconds(3);

// libgpuwatch.so as installed next to this program: BIN/../lib/libgpuwatch.so.
std::string LibraryPath(std::string* error) {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    *error = "cannot find this program's path: " + ec.message();
    return {};
  }
  const fs::path lib = fs::weakly_canonical(self.parent_path() / ".." / "lib" / "libgpuwatch.so", ec);
  if (ec || !fs::exists(lib)) {
    *error = "libgpuwatch.so not found at " + (self.parent_path() / ".." / "lib").string() +
             " (it must sit in ../lib next to the gpuwatch program)";
    return {};
  }
  return lib.string();
}

// A directory only we can enter, for the socket: mkdtemp makes it 0700.
std::string PrivateDir(std::string* error) {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/gpuwatch-run-XXXXXX";
  if (!mkdtemp(templ.data())) {
    *error = "cannot create a private directory from " + templ + ": " + std::strerror(errno);
    return {};
  }
  return templ;
}

// The folders that creating `dir` makes, deepest first (none when it exists).
std::vector<std::string> MissingDirs(const std::string& dir) {
  std::vector<std::string> missing;
  std::error_code ec;
  for (fs::path p = dir; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    missing.push_back(p.string());
    if (p == p.parent_path()) break;
  }
  return missing;
}

std::string Hostname() {
  char h[HOST_NAME_MAX + 1] = {};
  gethostname(h, sizeof h - 1);
  return h;
}

// An option checked by the parser the library reads its variable with (overhead_settings.h),
// so that what `gpuwatch run` accepts is what the ranks will use.
template <typename T>
CLI::Validator SettingCheck(bool (*parse)(std::string_view, T*, std::string*), const char* name) {
  return CLI::Validator(
      [parse](std::string& v) {
        T value{};
        std::string error;
        return parse(v, &value, &error) ? std::string() : error;
      },
      name);
}

}  // namespace

CLI::App* AddRunCommand(CLI::App& app, RunArgs& args) {
  CLI::App* cmd = app.add_subcommand("run", "Run a command and report where its GPU time goes");
  // This CLI11 (2.1) has no usage(): a formatter gives the real usage line and the long
  // description, while `gpuwatch --help` lists the short one above.
  class RunFormatter : public CLI::Formatter {
   public:
    std::string make_usage(const CLI::App*, std::string) const override {
      return "Usage: gpuwatch run [OPTIONS] [--] COMMAND [ARGS...]\n\n"
             "Runs COMMAND with libgpuwatch.so preloaded into it and every process it starts,\n"
             "collects what they report in this process, and when COMMAND ends writes\n"
             "DIR/summary.json, DIR/summary.txt (every rank's tables), DIR/report.html (the\n"
             "same as a page, with charts: open it in a browser) and DIR/trace.perfetto-trace\n"
             "(ui.perfetto.dev), and prints the verdict, the top findings with their fixes and\n"
             "the ranks that stand out (-v: summary.txt whole), then a last line with where\n"
             "those files are (-q: only that line). While it runs, a status line on stderr\n"
             "(only when stderr is a terminal) shows ranks connected, events/s, GPU busy and\n"
             "dropped records.\n";
    }
    std::string make_description(const CLI::App*) const override { return {}; }
  };
  cmd->formatter(std::make_shared<RunFormatter>());
  cmd->footer(
      "COMMAND gets these variables (launchers must pass them on to every rank):\n"
      "  LD_PRELOAD          libgpuwatch.so, before any preload already set\n"
      "  GPUWATCH_COLLECTOR  this run's private socket\n"
      "  GPUWATCH_OUT        DIR\n"
      "  GPUWATCH_JOB_ID     one job id for everything COMMAND starts (unless already set)\n"
      "  GPUWATCH_AUTOSTART  0 (ranks never start a collector of their own)\n"
      "  GPUWATCH_OVERHEAD, GPUWATCH_CUPTI  with --overhead, --cupti\n"
      "torchrun and srun pass the environment on by themselves; Open MPI needs -x.\n"
      "Ranks must run on this host (one socket); for several hosts, run gpuwatch on each.\n\n"
      "Examples:\n"
      "  gpuwatch run -- python train.py\n"
      "  gpuwatch run -o runs/today -- torchrun --nproc_per_node=8 train.py\n"
      "  gpuwatch run -- mpirun -np 4 -x LD_PRELOAD -x GPUWATCH_COLLECTOR -x GPUWATCH_OUT \\\n"
      "      -x GPUWATCH_JOB_ID -x GPUWATCH_AUTOSTART python train.py\n"
      "  gpuwatch run -- srun --ntasks=4 --gpus-per-task=1 python train.py\n"
      "  gpuwatch run --metrics :9400 --trace summary -- python train.py\n"
      "  gpuwatch run --baseline runs/monday --fail-if 'step_time>+5%' -- python train.py\n\n"
      "Signals: SIGINT and SIGTERM sent to gpuwatch are passed to COMMAND (Ctrl-C at a\n"
      "terminal reaches COMMAND directly); the summary is written when COMMAND ends.\n\n"
      "With --baseline DIR the run is compared with DIR (as 'gpuwatch diff DIR OUT') and\n"
      "the diff printed after the summary; --fail-if RULE (repeatable, rules as in\n"
      "'gpuwatch diff --help') gates it.\n\n"
      "Exit status: COMMAND's exit status; 128+N if COMMAND was killed by signal N;\n"
      "126 COMMAND not executable, 127 COMMAND not found, 125 gpuwatch itself failed.\n"
      "With --fail-if: 3 when COMMAND exited 0 and a rule tripped (a failing COMMAND's\n"
      "own status wins); 2, before anything runs, for a bad rule or an unreadable baseline.");
  if (const char* env = std::getenv("GPUWATCH_OUT"); env && *env) args.out = env;
  cmd->add_option("-o,--out", args.out,
                  "Output directory (default: $GPUWATCH_OUT, else ./gpuwatch-out)");
  cmd->add_option("--trace", args.trace,
                  "Perfetto trace detail: off, summary or full (default: $GPUWATCH_TRACE, "
                  "else full)")
      ->check(CLI::IsMember({"off", "summary", "full"}));
  cmd->add_option("--trace-keep", args.trace_keep,
                  "Which detail the trace's size cap keeps: first (the start), last (as much of "
                  "the end as the cap holds) or last:N (the last N minutes, fractions allowed) "
                  "(default: $GPUWATCH_TRACE_KEEP, else last)")
      ->check(TraceKeepError);
  cmd->add_option("--metrics", args.metrics,
                  "Serve Prometheus metrics at http://ADDR:PORT/metrics while COMMAND runs "
                  "(ADDR empty: loopback only), e.g. --metrics :9400");
  cmd->add_option("--overhead", args.overhead,
                  "What gpuwatch may add to COMMAND's wall time, plus 50 ms over the run: "
                  "CUPTI's device records run in windows that keep it there, e.g. 0.5% "
                  "(default: $GPUWATCH_OVERHEAD, else 1%)")
      ->check(SettingCheck<double>(gpuwatch::wire::ParseOverheadShare, "SHARE"));
  cmd->add_option("--cupti", args.cupti,
                  "CUPTI's device records: budget (in windows, within --overhead), full "
                  "(every kernel, the whole run: ~3 us a launch, for short diagnostic runs) "
                  "or off (default: $GPUWATCH_CUPTI, else budget)")
      ->check(SettingCheck<gpuwatch::wire::CuptiSetting>(gpuwatch::wire::ParseCuptiSetting, "MODE"));
  AddDetailFlags(*cmd, args.print);
  cmd->add_option("--baseline", args.baseline,
                  "When COMMAND ends, compare the run with this one (an output folder or "
                  "summary.json) and print the diff");
  cmd->add_option("--fail-if", args.fail_if,
                  "Exit 3 when this rule of the diff with --baseline trips (repeatable)")
      ->allow_extra_args(false);
  // Everything from COMMAND on is COMMAND's, options included. main() takes what follows
  // `--` away before parsing (this CLI11 mangles it); without `--`, the first word that is
  // not an option of ours starts COMMAND.
  cmd->prefix_command();
  return cmd;
}

int SplitRunCommand(int argc, char** argv, RunArgs& args) {
  if (argc < 2 || std::string(argv[1]) != "run") return argc;
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) != "--") continue;
    args.command.assign(argv + i + 1, argv + argc);
    return i;
  }
  return argc;
}

int RunCommand(RunArgs& args, CLI::App& command_app) {
  if (args.command.empty()) args.command = command_app.remaining();
  if (args.command.empty()) {
    spdlog::error("no command to run; usage: gpuwatch run [OPTIONS] -- COMMAND [ARGS...]");
    return kRunFailed;
  }
  std::string error;
  if (!CheckBaseline(args.baseline, args.fail_if, &error)) {
    spdlog::error("{}", error);
    return kDiffBadInput;
  }
  const std::string lib = LibraryPath(&error);
  if (lib.empty()) {
    spdlog::error("{}", error);
    return kRunFailed;
  }
  TraceOptions trace;
  if (!TraceOptionsFromEnv(&trace, &error) && args.trace.empty()) spdlog::warn("{}", error);
  if (!args.trace.empty()) ParseTraceLevel(args.trace, &trace.level);
  if (!args.trace_keep.empty()) ParseTraceKeep(args.trace_keep, &trace);

  const std::string out = fs::absolute(args.out).lexically_normal().string();
  const std::vector<std::string> new_dirs = MissingDirs(out);
  if (!MakeDirs(out, &error)) {
    spdlog::error("{}", error);
    return kRunFailed;
  }
  const std::string private_dir = PrivateDir(&error);
  if (private_dir.empty()) {
    spdlog::error("{}", error);
    return kRunFailed;
  }
  const std::string socket_path = private_dir + "/collector.sock";
  // The private folder goes when RunCommand returns, after the server (declared below, so
  // destroyed first) has closed its socket; the socket is removed here too, since a
  // folder that still holds it cannot be removed.
  struct RemoveOnReturn {
    std::string socket, dir;
    ~RemoveOnReturn() {
      unlink(socket.c_str());
      rmdir(dir.c_str());
    }
  } remove_private_dir{socket_path, private_dir};

  // SIGINT/SIGTERM wait for this thread (WaitForwardingSignals): blocked here before any
  // thread starts, so every thread inherits the block and none is killed by them.
  sigset_t blocked, old_mask;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGINT);
  sigaddset(&blocked, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &blocked, &old_mask);

  // The collector, as gpuwatch-collector would run it for a job whose output is `out`.
  JobTiming timing;
  if (const char* env = std::getenv("GPUWATCH_HANG_S"); env && std::atof(env) > 0)
    timing.hang_s = std::atof(env);  // as gpuwatch-collector and gpuwatch report read it
  JobTable jobs(timing);
  // Two runs given one -o at once: the second writes to a subfolder (jobs/out_claim.h).
  jobs.ClaimOutDirs(out);
  if (trace.level != TraceLevel::kOff) jobs.set_trace_factory(MakeTraceFactory("", trace));
  std::map<std::string, FinishedJob> finished;  // job id -> its latest summary
  std::vector<std::string> order;
  auto on_job_end = [&](Job& job) {  // on the server thread; read after it is joined
    if (!finished.count(job.id())) order.push_back(job.id());
    finished[job.id()] = FinishJob(job, out);
  };
  LiveFeed feed;
  ServerOptions options;
  options.listen_path = socket_path;
  options.handle_signals = false;
  // Journal on, as in gpuwatch-collector: `gpuwatch report DIR` can rebuild the summary if
  // this process dies before writing it.
  options.journal.enabled = true;
  options.journal.out_override = out;
  if (!JournalOptionsFromEnv(&options.journal, &error)) spdlog::warn("{}; using the default", error);
  // Snapshots cost a pass over every rank's analyses: only when someone looks at them.
  if (isatty(STDERR_FILENO) || !args.metrics.empty()) options.on_tick = PublishTo(feed);
  Server server(options, jobs, on_job_end);
  if (!server.Start(&error)) {
    spdlog::error("{}", error);
    return kRunFailed;
  }
  std::thread server_thread([&server] { server.Run(); });
  auto stop_server = [&] {
    server.RequestStop();
    if (server_thread.joinable()) server_thread.join();
  };

  std::unique_ptr<MetricsHttpServer> metrics;
  if (!args.metrics.empty()) {
    metrics = ServeMetrics(args.metrics, feed, &error);
    if (!metrics) {
      spdlog::error("{}", error);
      stop_server();
      return kRunFailed;
    }
    spdlog::info("metrics at {}", metrics->url());
  }

  std::map<std::string, std::string> set = {
      {"LD_PRELOAD", PrependPreload(lib, std::getenv("LD_PRELOAD"))},
      {"GPUWATCH_COLLECTOR", socket_path},
      {"GPUWATCH_OUT", out},
      {"GPUWATCH_AUTOSTART", "0"}};
  if (const char* id = std::getenv("GPUWATCH_JOB_ID"); !id || !*id)
    set["GPUWATCH_JOB_ID"] = Hostname() + "-run" + std::to_string(getpid());
  if (!args.overhead.empty()) set["GPUWATCH_OVERHEAD"] = args.overhead;
  if (!args.cupti.empty()) set["GPUWATCH_CUPTI"] = args.cupti;
  int code = 0;
  const pid_t pid =
      SpawnCommand(args.command, MergeEnvironment(environ, set), old_mask, &error, &code);
  if (pid < 0) {
    spdlog::error("{}", error);
    // Nothing ran: the folders this run made are taken away again (empty ones only).
    for (const std::string& d : new_dirs) rmdir(d.c_str());
  } else {
    StatusLine status(feed, STDERR_FILENO);
    if (status.active()) StatusLine::RouteLogs(*spdlog::default_logger(), STDERR_FILENO);
    code = ExitCodeOf(WaitForwardingSignals(pid));
    // Ranks that outlive COMMAND (orphans) get a little time to finish sending.
    const auto deadline = std::chrono::steady_clock::now() + kDrain;
    while (server.clients() > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    status.Stop();
  }
  stop_server();  // writes every job not yet written (FinishJob), like gpuwatch-collector
  metrics.reset();

  if (finished.empty() && pid >= 0)
    spdlog::warn("no process of the command reported to gpuwatch: it never used CUDA, or "
                 "LD_PRELOAD/GPUWATCH_* did not reach its ranks (see gpuwatch run --help)");
  for (const std::string& id : order) PrintSummary(finished[id].summary, args.print.detail(), finished[id].written);
  if (!args.baseline.empty() && pid >= 0) {
    const int gate = DiffAfterRun(args.baseline, out, args.fail_if);
    if (code == 0) code = gate;
  }
  // Last, after the diff too: where the files are.
  for (const std::string& id : order) PrintFiles(finished[id].dir, finished[id].written, finished[id].trace);
  return code;
}

}  // namespace gpuwatch::cli

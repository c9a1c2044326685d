// See slurm_cluster.h.
//
// What a container needs, found by trying Debian 12's Slurm 22.05: no cgroup plugin at all
// (proctrack/linuxproc, task/none, jobacct_gather/none), both daemons as root, the node
// named as `hostname -s` with address 127.0.0.1, CPUs=4 with config_overrides (the machine
// may have 2 cores), ReturnToService=2. Authentication is munge, with a munged of the test's
// own (a key it makes, a socket in its directory): auth/none would let anyone reach the
// daemons' ports and run programs as root while the test runs.
#include "slurm_cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>
#include <vector>

#include "subprocess.h"

namespace fs = std::filesystem;

namespace gpuwatch::e2e {
namespace {

// Two distinct ports nobody listens on now (bound together so they differ, then released).
bool FreePorts(int& a, int& b) {
  int fds[2] = {-1, -1}, ports[2] = {0, 0};
  for (int i = 0; i < 2; ++i) {
    fds[i] = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t len = sizeof addr;
    if (fds[i] < 0 || bind(fds[i], reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        getsockname(fds[i], reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      break;
    ports[i] = ntohs(addr.sin_port);
  }
  for (int fd : fds)
    if (fd >= 0) close(fd);
  a = ports[0];
  b = ports[1];
  return a > 0 && b > 0;
}

std::string ShortHostName() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string h = host;
  return h.substr(0, h.find('.'));
}

// Starts a daemon in the foreground with SLURM_CONF set (which is how Stop() finds every
// process of this cluster), output to `log`. It gets SIGTERM if the test dies first.
int StartDaemon(const std::vector<std::string>& argv, const std::string& conf, const std::string& log) {
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (auto& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);
  std::string conf_var = "SLURM_CONF=" + conf;
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(1);
  const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  const int null_fd = open("/dev/null", O_RDONLY);
  dup2(null_fd, 0);
  dup2(fd, 1);
  dup2(fd, 2);
  putenv(conf_var.data());
  execvp(argp[0], argp.data());
  dprintf(2, "cannot start %s: %s\n", argp[0], std::strerror(errno));
  _exit(127);
}

// Processes whose environment holds `entry` (NAME=VALUE), this one excepted.
std::vector<int> ProcessesWithEnv(const std::string& entry) {
  std::vector<int> pids;
  std::error_code ec;
  for (const auto& d : fs::directory_iterator("/proc", ec)) {
    const std::string name = d.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const int pid = std::stoi(name);
    if (pid == getpid()) continue;
    const std::string env = ReadFile(d.path() / "environ");
    size_t at = 0;
    while (at < env.size()) {
      const size_t end = env.find('\0', at);
      if (env.compare(at, (end == std::string::npos ? env.size() : end) - at, entry) == 0) {
        pids.push_back(pid);
        break;
      }
      if (end == std::string::npos) break;
      at = end + 1;
    }
  }
  return pids;
}

std::string Tail(const std::string& path, size_t bytes) {
  const std::string s = ReadFile(path);
  return s.size() > bytes ? s.substr(s.size() - bytes) : s;
}

}  // namespace

bool SlurmCluster::Start(std::string& error) {
  char tmpl[] = "/tmp/gpuwatch-slurm-XXXXXX";  // short: Slurm and munge put sockets in it
  if (!mkdtemp(tmpl)) {
    error = std::string("mkdtemp: ") + std::strerror(errno);
    return false;
  }
  dir_ = tmpl;
  conf_ = dir_ + "/slurm.conf";
  fs::create_directories(dir_ + "/state");
  fs::create_directories(dir_ + "/spool");
  int ctld_port = 0, slurmd_port = 0;
  if (!FreePorts(ctld_port, slurmd_port)) {
    error = "no free TCP port";
    return false;
  }

  // munge: a fresh 1 KiB key, readable by its owner only (munged refuses anything else).
  const std::string key = dir_ + "/munge.key", sock = dir_ + "/munge.sock";
  {
    std::random_device rd;
    std::ofstream k(key, std::ios::binary);
    for (int i = 0; i < 1024; ++i) k.put(static_cast<char>(rd()));
  }
  fs::permissions(key, fs::perms::owner_read | fs::perms::owner_write, fs::perm_options::replace);
  munged_pid_ = StartDaemon({"munged", "--foreground", "--force", "--socket=" + sock, "--key-file=" + key,
                             "--pid-file=" + dir_ + "/munged.pid", "--log-file=" + dir_ + "/munged.log",
                             "--seed-file=" + dir_ + "/munged.seed"},
                            conf_, dir_ + "/munged.out");
  if (!WaitForFile(sock, 10)) {
    error = "munged did not create its socket within 10 s:\n" + Logs();
    return false;
  }

  // The node has four fake GPUs (regular files: slurmd logs that they are not devices and
  // counts them anyway), so that `srun --gpus-per-task=1`, as README.md shows it, runs.
  for (int i = 0; i < 4; ++i) std::ofstream(dir_ + "/gpu" + std::to_string(i));
  std::ofstream(dir_ + "/gres.conf") << "Name=gpu File=" << dir_ << "/gpu[0-3]\n";
  const std::string host = ShortHostName();
  std::ofstream(conf_) << "ClusterName=gpuwatch-test\n"
                       << "SlurmctldHost=" << host << "(127.0.0.1)\n"
                       << "AuthType=auth/munge\nCredType=cred/munge\nAuthInfo=socket=" << sock << "\n"
                       << "SlurmUser=root\nSlurmdUser=root\n"
                       << "SlurmctldPort=" << ctld_port << "\nSlurmdPort=" << slurmd_port << "\n"
                       << "StateSaveLocation=" << dir_ << "/state\nSlurmdSpoolDir=" << dir_ << "/spool\n"
                       << "SlurmctldPidFile=" << dir_ << "/slurmctld.pid\nSlurmdPidFile=" << dir_ << "/slurmd.pid\n"
                       << "SlurmctldLogFile=" << dir_ << "/slurmctld.log\nSlurmdLogFile=" << dir_ << "/slurmd.log\n"
                       << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
                       << "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
                       << "SelectType=select/cons_tres\nMpiDefault=none\nMailProg=/bin/true\n"
                       << "ReturnToService=2\nSlurmdParameters=config_overrides\nGresTypes=gpu\n"
                       << "NodeName=" << host << " NodeAddr=127.0.0.1 CPUs=4 Gres=gpu:4 State=UNKNOWN\n"
                       << "PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n";
  ctld_pid_ = StartDaemon({"slurmctld", "-D", "-f", conf_}, conf_, dir_ + "/slurmctld.out");
  slurmd_pid_ = StartDaemon({"slurmd", "-D", "-f", conf_}, conf_, dir_ + "/slurmd.out");

  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < until) {
    const RunResult r = Run({"sinfo", "-h", "-o", "%t"}, Env(), 10);
    if (r.exit_code == 0 && r.out == "idle\n") return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  error = "the Slurm node was not idle within 20 s (sinfo: " +
          Run({"sinfo", "-h", "-o", "%t %E"}, Env(), 10).out + "):\n" + Logs();
  return false;
}

std::string SlurmCluster::Logs() const {
  std::string out;
  for (const char* f : {"munged.log", "munged.out", "slurmctld.log", "slurmctld.out", "slurmd.log", "slurmd.out"})
    if (fs::exists(dir_ + "/" + f)) out += "--- " + std::string(f) + ":\n" + Tail(dir_ + "/" + f, 1500);
  return out;
}

void SlurmCluster::Stop() {
  // Jobs first, while slurmctld can still end them: a step daemon outlives slurmd.
  if (ctld_pid_ > 0) {
    Run({"sh", "-c", "squeue -h -o %A | xargs -r scancel"}, Env(), 10);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < until && !Run({"squeue", "-h"}, Env(), 5).out.empty())
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (int pid : {slurmd_pid_, ctld_pid_, munged_pid_})
    if (pid > 0) kill(pid, SIGTERM);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (int* pid : {&slurmd_pid_, &ctld_pid_, &munged_pid_}) {
    while (*pid > 0 && waitpid(*pid, nullptr, WNOHANG) != *pid) {
      if (std::chrono::steady_clock::now() > until) {
        kill(*pid, SIGKILL);
        waitpid(*pid, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    *pid = -1;
  }
  // Whatever is left of this cluster (slurmscriptd, a step daemon, a task), found by the
  // SLURM_CONF each of them inherited: never a process of anyone else's.
  if (conf_.empty()) return;
  for (int pid : ProcessesWithEnv("SLURM_CONF=" + conf_)) kill(pid, SIGKILL);
  // ... and gone before the test goes on (a killed process lingers until it is reaped).
  const auto gone_by = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (!ProcessesWithEnv("SLURM_CONF=" + conf_).empty() && std::chrono::steady_clock::now() < gone_by)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

SlurmCluster::~SlurmCluster() {
  Stop();
  std::error_code ec;
  if (!dir_.empty()) fs::remove_all(dir_, ec);
}

}  // namespace gpuwatch::e2e

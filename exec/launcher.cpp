#include "exec/launcher.h"

#include <sched.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace starfish::exec {

int free_loopback_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("launcher: socket: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    const std::string e = std::strerror(errno);
    ::close(fd);
    throw std::runtime_error("launcher: cannot find a free port on 127.0.0.1: " + e);
  }
  ::close(fd);
  return ntohs(a.sin_port);
}

namespace {

std::vector<int> allowed_cpu_list() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) != 0) throw std::runtime_error(std::string("sched_getaffinity: ") + std::strerror(errno));
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

// "0-3,6": runs of consecutive CPUs.
std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string text;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    if (!text.empty()) text += ",";
    text += std::to_string(cpus[i]) + (j > i ? "-" + std::to_string(cpus[j]) : "");
    i = j + 1;
  }
  return text;
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long n = std::strtol(v, &end, 10);
  if (*end != '\0' || n < 0 || n > 1 << 20) throw std::invalid_argument(std::string(name) + " must be a whole number, got '" + v + "'");
  return static_cast<int>(n);
}

}  // namespace

std::string allowed_cpus() { return cpu_list_text(allowed_cpu_list()); }

std::string bind_to_local_rank_cores() {
  const int local_rank = env_int("LOCAL_RANK", -1);
  if (local_rank < 0) throw std::invalid_argument("--bind-cores needs local ranks (--nproc N, or torchrun's LOCAL_RANK)");
  const int local_world = std::max(env_int("LOCAL_WORLD_SIZE", local_rank + 1), local_rank + 1);
  const std::vector<int> cpus = allowed_cpu_list();
  const int n = static_cast<int>(cpus.size());
  std::vector<int> mine;
  if (local_world > n) {
    mine.push_back(cpus[static_cast<size_t>(local_rank % n)]);
  } else {
    const int share = n / local_world;
    for (int i = local_rank * share; i < (local_rank + 1) * share; ++i) mine.push_back(cpus[static_cast<size_t>(i)]);
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : mine) CPU_SET(c, &set);
  if (::sched_setaffinity(0, sizeof set, &set) != 0) throw std::runtime_error(std::string("--bind-cores: sched_setaffinity: ") + std::strerror(errno));
  return cpu_list_text(mine);
}

int launch_local_ranks(const std::string& program, const std::vector<std::string>& args, int nproc) {
  if (nproc < 1) throw std::invalid_argument("launcher: --nproc must be at least 1");
  const std::string port = std::to_string(free_loopback_port());
  std::vector<pid_t> pids;
  for (int r = 0; r < nproc; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      for (pid_t p : pids) ::kill(p, SIGTERM);
      throw std::runtime_error(std::string("launcher: fork: ") + std::strerror(errno));
    }
    if (pid == 0) {
      ::setenv("RANK", std::to_string(r).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      ::setenv("LOCAL_WORLD_SIZE", std::to_string(nproc).c_str(), 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", port.c_str(), 1);
      std::vector<char*> argv;
      std::vector<std::string> storage{program};
      storage.insert(storage.end(), args.begin(), args.end());
      for (std::string& s : storage) argv.push_back(s.data());
      argv.push_back(nullptr);
      ::execv(program.c_str(), argv.data());
      std::cerr << "starfish-run: rank " << r << ": cannot exec " << program << ": " << std::strerror(errno) << "\n";
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  int result = 0;
  size_t alive = pids.size();
  while (alive > 0) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    int rank = -1;
    for (size_t i = 0; i < pids.size(); ++i)
      if (pids[i] == pid) rank = static_cast<int>(i), pids[i] = -1;
    if (rank < 0) continue;
    --alive;
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0) {
      if (WIFSIGNALED(status)) std::cerr << "starfish-run: rank " << rank << " was killed by signal " << WTERMSIG(status) << "\n";
      else std::cerr << "starfish-run: rank " << rank << " exited with status " << code << "\n";
      if (result == 0) {
        result = code;
        for (pid_t p : pids)
          if (p > 0) ::kill(p, SIGTERM);  // the others would wait for the failed rank forever
      }
    }
  }
  return result;
}

}  // namespace starfish::exec

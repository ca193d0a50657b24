#include "exec/launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <stdexcept>

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

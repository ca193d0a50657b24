#pragma once
// Runs a command line through the shell and captures its exit code, stdout and stderr, so tests
// can drive the CLIs as a user would.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace starfish::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline CommandResult run_command(const std::string& command) {
  static int counter = 0;
  const std::string err_path = "/tmp/starfish_test_err_" + std::to_string(::getpid()) + "_" + std::to_string(counter++);
  CommandResult r;
  FILE* pipe = ::popen((command + " 2>" + err_path).c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = slurp(err_path);
  std::remove(err_path.c_str());
  return r;
}

}  // namespace starfish::testing

// starfish-run: trains a plan's model for real. `--nproc N` starts N local ranks of itself.
#include <unistd.h>

#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "exec/launcher.h"
#include "exec/run.h"

int main(int argc, char** argv) {
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    int nproc = 0;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i] == "--nproc" && i + 1 < args.size()) {
        nproc = std::stoi(args[i + 1]);
        args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(i) + 2);
        break;
      }
    }
    if (nproc > 0) {
      starfish::exec::parse_run_options(args);  // fail before starting ranks
      char self[4096];
      const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
      if (n <= 0) throw std::runtime_error("cannot find this program's path (/proc/self/exe)");
      self[n] = '\0';
      return starfish::exec::launch_local_ranks(self, args, nproc);
    }
    return starfish::exec::run_rank(starfish::exec::parse_run_options(args));
  } catch (const std::exception& e) {
    std::cerr << "starfish-run: " << e.what() << "\n";
    return 1;
  }
}

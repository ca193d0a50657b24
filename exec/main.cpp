// starfish-run: trains a plan's model for real. `--nproc N` starts N local ranks of itself.
#include <unistd.h>

#include <algorithm>
#include <exception>
#include <iostream>
#include <string>
#include <vector>

#include "exec/blas_kernels.h"
#include "exec/host_memory.h"
#include "exec/launcher.h"
#include "exec/run.h"
#include "git_revision.h"  // generated: STARFISH_GIT_REVISION
#include "sim/spec/error.h"

namespace {

// --nproc N: a whole number of local ranks, at least 1 (0 or a typo must not silently run one).
int parse_nproc(const std::string& text) {
  size_t used = 0;
  long n = 0;
  try {
    n = std::stol(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || n < 1 || n > 4096)
    throw starfish::SpecError("starfish-run: --nproc expects a whole number of ranks from 1 to 4096, got '" + text + "'");
  return static_cast<int>(n);
}

}  // namespace

int main(int argc, char** argv) {
  // Before anything else: OpenBLAS picked its kernels when it loaded (exec/blas_kernels.h).
  starfish::exec::reexec_with_best_blas_kernels(argv);
  starfish::exec::keep_freed_host_memory();  // exec/host_memory.h
  try {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (std::find(args.begin(), args.end(), "--help") != args.end() || std::find(args.begin(), args.end(), "-h") != args.end()) {
      std::cout << starfish::exec::run_usage() << "\n";
      return 0;
    }
    if (std::find(args.begin(), args.end(), "--version") != args.end()) {
      std::cout << "starfish-run " << STARFISH_VERSION << " (git " << STARFISH_GIT_REVISION << ")\n";
      return 0;
    }
    int nproc = 0;
    for (size_t i = 0; i < args.size(); ++i) {
      if (args[i] == "--nproc") {
        nproc = parse_nproc(i + 1 < args.size() ? args[i + 1] : std::string());
        args.erase(args.begin() + static_cast<long>(i), args.begin() + static_cast<long>(std::min(i + 2, args.size())));
        break;
      }
    }
    if (nproc > 0) {
      starfish::exec::check_run_outputs(starfish::exec::parse_run_options(args));  // fail before starting ranks
      char self[4096];
      const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
      if (n <= 0) throw std::runtime_error("cannot find this program's path (/proc/self/exe)");
      self[n] = '\0';
      return starfish::exec::launch_local_ranks(self, args, nproc);
    }
    const starfish::exec::RunOptions options = starfish::exec::parse_run_options(args);
    if (options.bind_cores) starfish::exec::bind_to_local_rank_cores();  // before LibTorch starts its threads
    return starfish::exec::run_rank(options);
  } catch (const std::exception& e) {
    // One prefix: the option parser's messages carry it already.
    const std::string what = e.what();
    std::cerr << (what.starts_with("starfish-run: ") ? "" : "starfish-run: ") << what << "\n";
    return 1;
  }
}

#pragma once
// `starfish-run --nproc N ...`: starts N local ranks of this very program (fresh processes via
// exec, never a fork of a process that already runs LibTorch threads), each with RANK,
// WORLD_SIZE, LOCAL_RANK, MASTER_ADDR=127.0.0.1 and a free MASTER_PORT, waits for all of them
// and fails when any fails: the first failure terminates the others.
#include <string>
#include <vector>

namespace starfish::exec {

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0 and released).
int free_loopback_port();

// Runs `program` with `args` (argv[1..]) as `nproc` ranks. Returns 0 when every rank exited 0,
// else the first failing rank's exit status (128 + signal when killed). Prints one line per
// failed rank on stderr.
int launch_local_ranks(const std::string& program, const std::vector<std::string>& args, int nproc);

}  // namespace starfish::exec

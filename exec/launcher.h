#pragma once
// `starfish-run --nproc N ...`: starts N local ranks of this very program (fresh processes via
// exec, never a fork of a process that already runs LibTorch threads), each with RANK,
// WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1 and a free MASTER_PORT, waits for all of them
// and fails when any fails: the first failure terminates the others.
#include <string>
#include <vector>

namespace starfish::exec {

// --bind-cores: confines this process (and every thread it starts later) to its local rank's
// share of the CPUs it may run on: LOCAL_WORLD_SIZE equal contiguous shares, LOCAL_RANK taking
// the LOCAL_RANK-th (one CPU each, shared round-robin, when there are more ranks than CPUs), as
// DeepSpeed's launcher does with --bind_cores_to_rank. Without it two local ranks' threads,
// Gloo's included, migrate between the cores and preempt each other's training thread; on the
// CPU host a rank's "GPU" is one core, and binding makes that so. Call first thing in main(),
// before LibTorch starts threads. Returns the CPUs bound ("2-3"), or throws when LOCAL_RANK is
// unset (a single process has nothing to share) or the kernel refuses.
std::string bind_to_local_rank_cores();

// The CPUs this process may run on, as a list ("0-1", "0,2"): what a report records.
std::string allowed_cpus();

// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0 and released).
int free_loopback_port();

// Runs `program` with `args` (argv[1..]) as `nproc` ranks. Returns 0 when every rank exited 0,
// else the first failing rank's exit status (128 + signal when killed). Prints one line per
// failed rank on stderr.
int launch_local_ranks(const std::string& program, const std::vector<std::string>& args, int nproc);

}  // namespace starfish::exec

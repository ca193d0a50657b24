#include "exec/dist.h"

#include <cstdlib>
#include <map>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/torch.h>

#if defined(STARFISH_WITH_CUDA)
#include <c10/core/impl/DeviceGuardImplInterface.h>
#endif
// USE_C10D_NCCL: defined by exec/CMakeLists.txt only when the CUDA paths are on and this
// LibTorch's torch_cuda links ProcessGroupNCCL (Debian's ships the header, not the library).
#if defined(STARFISH_WITH_CUDA) && defined(USE_C10D_NCCL)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#define STARFISH_NCCL 1
#endif

#include "sim/spec/error.h"

namespace starfish::exec {
namespace {

int env_int(const char* name, int fallback, int min) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  if (*end != '\0' || x < min || x > 1 << 30)
    throw SpecError(std::string("environment variable ") + name + "='" + v + "': expected an integer >= " + std::to_string(min));
  return static_cast<int>(x);
}

}  // namespace

RankEnv RankEnv::from_environment() {
  RankEnv e;
  e.world_size = env_int("WORLD_SIZE", 1, 1);
  e.rank = env_int("RANK", 0, 0);
  e.local_rank = env_int("LOCAL_RANK", e.rank, 0);
  if (e.rank >= e.world_size)
    throw SpecError("environment: RANK=" + std::to_string(e.rank) + " is not below WORLD_SIZE=" + std::to_string(e.world_size));
  if (e.world_size > 1) {
    const char* addr = std::getenv("MASTER_ADDR");
    if (!addr || !*addr) throw SpecError("environment: WORLD_SIZE > 1 needs MASTER_ADDR");
    e.master_addr = addr;
    e.master_port = env_int("MASTER_PORT", 0, 1);
    if (e.master_port == 0 || e.master_port > 65535) throw SpecError("environment: WORLD_SIZE > 1 needs MASTER_PORT (1..65535)");
  }
  return e;
}

// Two families of process groups over one TCPStore: Gloo for CPU tensors (always: the trainer's
// loss and norm scalars, barriers) and, where built in and every rank has a CUDA device of its
// own, NCCL for CUDA tensors (the chunk runtime's collectives on the GPU tier). Each family has
// a world group and one subgroup per runtime Group, made on first use by its members only.
struct Comm::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroup> pg;       // Gloo, every rank
  c10::intrusive_ptr<c10d::ProcessGroup> nccl_pg;  // NCCL, every rank (when nccl)
  bool nccl = false;
  std::string hostname;
  std::chrono::milliseconds timeout{0};
  std::map<int, c10::intrusive_ptr<c10d::ProcessGroup>> subgroups, nccl_subgroups;
  int rank = 0;
  // A collective that fails (a peer rank died and closed its connection, or none answered
  // within the timeout) becomes one line that says so, not c10d's multi-line backtrace.
  void wait(const c10::intrusive_ptr<c10d::Work>& w) {
    try {
      w->wait();
    } catch (const c10::Error& e) {
      throw_collective_error(e.what_without_backtrace());
    } catch (const std::exception& e) {
      throw_collective_error(e.what());
    }
  }
  [[noreturn]] void throw_collective_error(const std::string& why) const {
    const std::string first = why.substr(0, why.find('\n'));
    throw std::runtime_error("rank " + std::to_string(rank) + ": a collective failed: another rank died or did not answer within " +
                             std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) +
                             " s (c10d timeout, --timeout): " + first);
  }

  c10::intrusive_ptr<c10d::ProcessGroup> make(bool use_nccl, const std::string& prefix, int rank, int size) {
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>(prefix, store);
#ifdef STARFISH_NCCL
    if (use_nccl) {
      auto opts = c10d::ProcessGroupNCCL::Options::create();
      opts->timeout = timeout;
      return c10::make_intrusive<c10d::ProcessGroupNCCL>(prefixed, rank, size, opts);
    }
#endif
    (void)use_nccl;
    auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
    opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(hostname));
    return c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, rank, size, opts);
  }

  // The group for `g` (nullptr: the world) that carries tensor `t`.
  c10d::ProcessGroup& of(const starfish::Group* g, int world_size, const at::Tensor& t) {
    const bool use_nccl = nccl && t.is_cuda();
    if (!g || g->size() == world_size) return use_nccl ? *nccl_pg : *pg;
    auto& cache = use_nccl ? nccl_subgroups : subgroups;
    auto it = cache.find(g->id);
    if (it == cache.end())
      it = cache.emplace(g->id, make(use_nccl, (use_nccl ? "nccl-group-" : "group-") + std::to_string(g->id), g->index, g->size())).first;
    return *it->second;
  }
};

namespace {

// With CUDA each rank computes on cuda:LOCAL_RANK (the current device, which the chunk backend
// and NCCL use). More local ranks than devices share them round-robin, which NCCL cannot do
// (one rank per GPU), so this rank can use NCCL only when it has a device of its own.
bool select_cuda_device(const RankEnv& env) {
#if defined(STARFISH_WITH_CUDA)
  if (!torch::cuda::is_available()) return false;
  const int devices = static_cast<int>(torch::cuda::device_count());
  c10::impl::VirtualGuardImpl impl(at::kCUDA);
  impl.setDevice(c10::Device(at::kCUDA, static_cast<c10::DeviceIndex>(env.local_rank % devices)));
  return env.local_rank < devices;
#else
  (void)env;
  return false;
#endif
}

// Sends `out` to group member `to` while receiving `in` from member `from` (tag: the step).
void exchange(c10d::ProcessGroup& pg, Comm::Impl& impl, at::Tensor out, int to, at::Tensor in, int from, int tag) {
  std::vector<at::Tensor> send{std::move(out)}, recv{std::move(in)};
  auto sent = pg.send(send, to, tag);
  impl.wait(pg.recv(recv, from, tag));
  impl.wait(sent);
}

// Member i of a ring of n, for any i (negative ones count back from the end).
int ring_slot(int i, int n) { return (i % n + n) % n; }

// Ring all-gather over n members: at step k member r passes piece (r - k) mod n to r + 1 and
// takes piece (r - k - 1) mod n from r - 1; each member sends (n - 1) pieces, as NCCL's ring.
void ring_all_gather(c10d::ProcessGroup& pg, Comm::Impl& impl, std::vector<at::Tensor>& pieces, int own) {
  const int n = static_cast<int>(pieces.size());
  for (int k = 0; k + 1 < n; ++k)
    exchange(pg, impl, pieces[ring_slot(own - k, n)], ring_slot(own + 1, n), pieces[ring_slot(own - k - 1, n)], ring_slot(own - 1, n), k);
}

// Ring reduce-scatter: at step k member r sends its partial sum of piece (r - k - 1) mod n to
// r + 1 and adds its own input to the partial of piece (r - k - 2) mod n it receives from r - 1;
// after n - 1 steps the partial it holds is its own piece's, summed over every member.
void ring_reduce_scatter(c10d::ProcessGroup& pg, Comm::Impl& impl, const std::vector<at::Tensor>& inputs, at::Tensor& output, int own) {
  const int n = static_cast<int>(inputs.size());
  at::Tensor partial = inputs[ring_slot(own - 1, n)];
  at::Tensor received = at::empty_like(output);
  for (int k = 0; k + 1 < n; ++k) {
    exchange(pg, impl, partial, ring_slot(own + 1, n), received, ring_slot(own - 1, n), k);
    at::Tensor sum = k + 2 < n ? at::empty_like(output) : output;
    at::add_out(sum, received, inputs[ring_slot(own - k - 2, n)]);
    partial = sum;
  }
}

}  // namespace

Comm::Comm(const RankEnv& env, std::chrono::seconds timeout) : env_(env) {
  const bool own_device = select_cuda_device(env_);
  if (env_.world_size == 1) return;
  group_ = std::make_unique<Impl>();
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<uint16_t>(env_.master_port);
  opts.isServer = env_.rank == 0;
  opts.numWorkers = env_.world_size;
  opts.waitWorkers = true;
  opts.timeout = timeout;
  group_->store = c10::make_intrusive<c10d::TCPStore>(env_.master_addr, opts);
  auto gloo = c10d::ProcessGroupGloo::Options::create(timeout);
  gloo->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(env_.master_addr));
  group_->pg = c10::make_intrusive<c10d::ProcessGroupGloo>(group_->store, env_.rank, env_.world_size, gloo);
  group_->hostname = env_.master_addr;
  group_->timeout = timeout;
  group_->rank = env_.rank;
#ifdef STARFISH_NCCL
  // Every rank must pick the same family for the same tensor, so NCCL only when all can.
  at::Tensor all_can = at::full({1}, own_device ? 1 : 0, at::kInt);
  std::vector<at::Tensor> v{all_can};
  c10d::AllreduceOptions min;
  min.reduceOp = c10d::ReduceOp::MIN;
  group_->wait(group_->pg->allreduce(v, min));
  group_->nccl = all_can.item<int>() == 1;
  if (group_->nccl) group_->nccl_pg = group_->make(true, "nccl", env_.rank, env_.world_size);
#else
  (void)own_device;
#endif
}

Comm::~Comm() = default;

const char* Comm::backend_name() const {
  if (!group_) return "none";
  return group_->nccl ? "nccl" : "gloo";
}

void Comm::all_reduce_sum(at::Tensor& t, const starfish::Group* g) {
  if (!group_ || (g && g->size() == 1)) return;
  std::vector<at::Tensor> v{t};
  group_->wait(group_->of(g, env_.world_size, t).allreduce(v));
}

void Comm::all_gather(std::vector<at::Tensor>& outputs, const at::Tensor& input, const starfish::Group* g) {
  if (!group_ || (g && g->size() == 1)) {
    if (!outputs.at(0).is_same(input)) outputs.at(0).copy_(input);
    return;
  }
  const int own = g ? g->index : env_.rank;
  c10d::ProcessGroup& pg = group_->of(g, env_.world_size, input);
  if (!(group_->nccl && input.is_cuda())) {
    // Gloo: a ring over point-to-point sends, straight into the caller's buffers. ProcessGroupGloo's
    // allgather allocates a flat output of every member's bytes on each call and copies out of
    // it; exec/bench/gloo_collectives measures what this costs instead.
    if (!outputs.at(static_cast<size_t>(own)).is_same(input)) outputs[static_cast<size_t>(own)].copy_(input);
    ring_all_gather(pg, *group_, outputs, own);
    return;
  }
  std::vector<std::vector<at::Tensor>> out{outputs};
  std::vector<at::Tensor> in{input};
  group_->wait(pg.allgather(out, in));
  for (size_t r = 0; r < outputs.size(); ++r)
    if (!out[0][r].is_same(outputs[r])) outputs[r].copy_(out[0][r]);
}

void Comm::reduce_scatter_sum(const std::vector<at::Tensor>& inputs, at::Tensor& output, const starfish::Group* g) {
  const int own = g ? g->index : env_.rank;
  if (!group_ || (g && g->size() == 1)) {
    if (!output.is_same(inputs.at(0))) output.copy_(inputs.at(0));
    return;
  }
  c10d::ProcessGroup& pg = group_->of(g, env_.world_size, output);
  if (!(group_->nccl && output.is_cuda())) {
    // Gloo in LibTorch 1.13 has no reduce-scatter, and its reduce ran at a quarter of its
    // all-gather's rate here (exec/bench/gloo_collectives): a ring over point-to-point sends,
    // the algorithm the simulator costs (sim/cost/collectives.cpp).
    ring_reduce_scatter(pg, *group_, inputs, output, own);
    return;
  }
  // NCCL: one reduce per member to that member, the same bytes on the wire as a ring
  // reduce-scatter's sum. A reduce leaves a non-root's tensor unspecified, hence the copies.
  for (size_t j = 0; j < inputs.size(); ++j) {
    at::Tensor piece = inputs[j].clone();
    reduce_sum(piece, static_cast<int>(j), g);
    if (static_cast<int>(j) == own) output.copy_(piece);
  }
}

void Comm::reduce_sum(at::Tensor& t, int root, const starfish::Group* g) {
  if (!group_ || (g && g->size() == 1)) return;
  std::vector<at::Tensor> v{t};
  c10d::ReduceOptions o;
  o.rootRank = root;
  group_->wait(group_->of(g, env_.world_size, t).reduce(v, o));
}

void Comm::broadcast(at::Tensor& t, int root, const starfish::Group* g) {
  if (!group_ || (g && g->size() == 1)) return;
  std::vector<at::Tensor> v{t};
  c10d::BroadcastOptions o;
  o.rootRank = root;
  group_->wait(group_->of(g, env_.world_size, t).broadcast(v, o));
}

void Comm::barrier() {
  if (!group_) return;
  group_->wait(group_->pg->barrier());
}

}  // namespace starfish::exec

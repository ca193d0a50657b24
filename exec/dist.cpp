#include "exec/dist.h"

#include <cstdlib>
#include <map>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <torch/torch.h>

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

struct Comm::Impl {
  c10::intrusive_ptr<c10d::Store> store;
  c10::intrusive_ptr<c10d::ProcessGroup> pg;
  std::string hostname;
  std::chrono::milliseconds timeout{0};
  std::map<int, c10::intrusive_ptr<c10d::ProcessGroup>> subgroups;
  void wait(const c10::intrusive_ptr<c10d::Work>& w) { w->wait(); }

  c10d::ProcessGroup& of(const starfish::Group* g, int world_size) {
    if (!g || g->size() == world_size) return *pg;
    auto it = subgroups.find(g->id);
    if (it == subgroups.end()) {
      auto prefixed = c10::make_intrusive<c10d::PrefixStore>("group-" + std::to_string(g->id), store);
      auto opts = c10d::ProcessGroupGloo::Options::create(timeout);
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(hostname));
      it = subgroups.emplace(g->id, c10::make_intrusive<c10d::ProcessGroupGloo>(prefixed, g->index, g->size(), opts)).first;
    }
    return *it->second;
  }
};

Comm::Comm(const RankEnv& env, std::chrono::seconds timeout) : env_(env) {
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
}

Comm::~Comm() = default;

const char* Comm::backend_name() const { return group_ ? "gloo" : "none"; }

void Comm::all_reduce_sum(at::Tensor& t, const starfish::Group* g) {
  if (!group_ || (g && g->size() == 1)) return;
  std::vector<at::Tensor> v{t};
  group_->wait(group_->of(g, env_.world_size).allreduce(v));
}

void Comm::all_gather(std::vector<at::Tensor>& outputs, const at::Tensor& input, const starfish::Group* g) {
  if (!group_ || (g && g->size() == 1)) {
    if (!outputs.at(0).is_same(input)) outputs.at(0).copy_(input);
    return;
  }
  std::vector<std::vector<at::Tensor>> out{outputs};
  std::vector<at::Tensor> in{input};
  group_->wait(group_->of(g, env_.world_size).allgather(out, in));
  for (size_t r = 0; r < outputs.size(); ++r)
    if (!out[0][r].is_same(outputs[r])) outputs[r].copy_(out[0][r]);
}

void Comm::reduce_sum(at::Tensor& t, int root, const starfish::Group* g) {
  if (!group_ || (g && g->size() == 1)) return;
  std::vector<at::Tensor> v{t};
  c10d::ReduceOptions o;
  o.rootRank = root;
  group_->wait(group_->of(g, env_.world_size).reduce(v, o));
}

void Comm::broadcast(at::Tensor& t, int root, const starfish::Group* g) {
  if (!group_ || (g && g->size() == 1)) return;
  std::vector<at::Tensor> v{t};
  c10d::BroadcastOptions o;
  o.rootRank = root;
  group_->wait(group_->of(g, env_.world_size).broadcast(v, o));
}

void Comm::barrier() {
  if (!group_) return;
  group_->wait(group_->pg->barrier());
}

}  // namespace starfish::exec

#include "exec/torch_backend.h"

#include "exec/phase_clock.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include <c10/core/Event.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/torch.h>

#include "exec/dist.h"

namespace starfish::exec {
namespace {

const char* tier_name(Tier t) { return to_string(t); }

[[noreturn]] void fail_errno(const std::string& what) { throw std::runtime_error("torch backend: " + what + ": " + std::strerror(errno)); }

}  // namespace

struct TorchBackend::Slot {
  Buffer buffer;
  at::Tensor bytes;   // GPU and CPU tiers
  std::string path;   // NVMe tier
  int fd = -1;
  ~Slot() {
    if (fd >= 0) {
      ::close(fd);
      ::unlink(path.c_str());
    }
  }
};

// Copy-queue state with CUDA: a side stream and the events of queued moves.
struct CudaQueues {
  std::optional<c10::Stream> copy_stream;
  std::map<uint64_t, c10::Event> events;
  std::vector<at::Tensor> deferred;  // released buffers kept until the pending events complete
  uint64_t next = 1;
};

TorchBackend::TorchBackend(TierCapacity capacity, const std::string& scratch_root, Comm& comm)
    : capacity_(capacity), comm_(comm), start_(std::chrono::steady_clock::now()) {
  if (capacity_.gpu_bytes <= 0) throw std::invalid_argument("torch backend: the GPU tier needs a positive capacity");
#ifdef STARFISH_WITH_CUDA
  cuda_ = torch::cuda::is_available();
  // The current device: cuda:LOCAL_RANK once the rank's Comm has chosen it (exec/dist.h).
  if (cuda_) device_index_ = c10::impl::VirtualGuardImpl(at::kCUDA).getDevice().index();
#endif
  std::string pattern = (std::filesystem::path(scratch_root) / ("starfish-nvme-" + std::to_string(comm.rank()) + "-XXXXXX")).string();
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) fail_errno("cannot make the NVMe scratch directory under " + scratch_root);
  scratch_dir_ = buf.data();
}

TorchBackend::~TorchBackend() {
  slots_.clear();  // closes and unlinks NVMe files
  std::error_code ec;
  std::filesystem::remove_all(scratch_dir_, ec);
}

TorchBackend::Slot& TorchBackend::slot(const Buffer& b) {
  auto it = slots_.find(b.id);
  if (it == slots_.end()) throw std::logic_error("torch backend: unknown buffer " + std::to_string(b.id));
  return *it->second;
}
const TorchBackend::Slot& TorchBackend::slot(const Buffer& b) const { return const_cast<TorchBackend*>(this)->slot(b); }

Buffer TorchBackend::allocate(Tier tier, int64_t bytes) {
  if (bytes <= 0) throw std::invalid_argument("torch backend: allocate needs a positive size");
  TierUsage& u = usage_[static_cast<int>(tier)];
  const int64_t cap = tier == Tier::gpu ? capacity_.gpu_bytes : tier == Tier::cpu ? capacity_.cpu_bytes : capacity_.nvme_bytes;
  if (cap > 0 && u.in_use_bytes + bytes > cap)
    throw std::runtime_error(std::string("torch backend: out of memory on the ") + tier_name(tier) + " tier" +
                             (tier == Tier::gpu && !cuda_ ? " (CPU pool)" : "") + ": " + std::to_string(bytes) +
                             " bytes requested, " + std::to_string(u.in_use_bytes) + " of " + std::to_string(cap) + " in use");
  auto s = std::make_unique<Slot>();
  s->buffer = Buffer{next_id_++, tier, bytes};
  if (tier == Tier::nvme) {
    s->path = scratch_dir_ + "/buffer-" + std::to_string(s->buffer.id) + ".bin";
    s->fd = ::open(s->path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (s->fd < 0) fail_errno("cannot create " + s->path);
    if (::ftruncate(s->fd, bytes) != 0) fail_errno("cannot size " + s->path);
  } else {
    at::TensorOptions o = at::TensorOptions().dtype(at::kByte);
    if (tier == Tier::gpu && cuda_) o = o.device(compute_device());
    if (tier == Tier::cpu && cuda_) o = o.pinned_memory(true);
    s->bytes = at::empty({bytes}, o);
  }
  u.in_use_bytes += bytes;
  u.peak_bytes = std::max(u.peak_bytes, u.in_use_bytes);
  ++u.buffers;
  const Buffer b = s->buffer;
  slots_.emplace(b.id, std::move(s));
  return b;
}

void TorchBackend::release(const Buffer& buffer) {
  Slot& s = slot(buffer);
  TierUsage& u = usage_[static_cast<int>(s.buffer.tier)];
  u.in_use_bytes -= s.buffer.bytes;
  --u.buffers;
  // With CUDA a copy-queue move may still read the buffer: its memory goes back to the caching
  // allocator only once every pending move has completed (CPU moves are done already).
  if (cuda_queues_ && !cuda_queues_->events.empty() && s.bytes.defined()) cuda_queues_->deferred.push_back(s.bytes);
  slots_.erase(buffer.id);
}

at::Tensor TorchBackend::bytes(const Buffer& buffer) const {
  const Slot& s = slot(buffer);
  if (s.buffer.tier == Tier::nvme) throw std::logic_error("torch backend: NVMe buffer " + std::to_string(buffer.id) + " has no tensor");
  return s.bytes;
}

void TorchBackend::read_nvme(const Slot& s, at::Tensor& into, int64_t bytes) {
  at::Tensor host = into.is_cpu() ? into : at::empty({bytes}, at::kByte);
  auto* p = static_cast<char*>(host.data_ptr());
  for (int64_t done = 0; done < bytes;) {
    const ssize_t n = ::pread(s.fd, p + done, static_cast<size_t>(bytes - done), done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail_errno("pread " + s.path);
    done += n;
  }
  if (!host.is_same(into)) into.narrow(0, 0, bytes).copy_(host);
}

void TorchBackend::write_nvme(const Slot& s, const at::Tensor& from, int64_t bytes) {
  at::Tensor host = from.is_cpu() ? from : from.narrow(0, 0, bytes).cpu();
  const auto* p = static_cast<const char*>(host.data_ptr());
  for (int64_t done = 0; done < bytes;) {
    const ssize_t n = ::pwrite(s.fd, p + done, static_cast<size_t>(bytes - done), done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail_errno("pwrite " + s.path);
    done += n;
  }
}

Completion TorchBackend::copy(const Buffer& src, const Buffer& dst, int64_t bytes, const MoveTag& tag) {
  Slot& a = slot(src);
  Slot& b = slot(dst);
  if (bytes < 0 || bytes > a.buffer.bytes || bytes > b.buffer.bytes)
    throw std::out_of_range("torch backend: copy of " + std::to_string(bytes) + " bytes between buffers of " +
                            std::to_string(a.buffer.bytes) + " and " + std::to_string(b.buffer.bytes));
  copied_[static_cast<int>(a.buffer.tier)][static_cast<int>(b.buffer.tier)] += bytes;
  ++copies_;
  if (bytes == 0) return {};
  const PhaseScope timed(report::PhaseId::moves);  // the report's breakdown
  if (a.buffer.tier == Tier::nvme && b.buffer.tier == Tier::nvme) {
    at::Tensor staging = at::empty({bytes}, at::kByte);
    read_nvme(a, staging, bytes);
    write_nvme(b, staging, bytes);
  } else if (a.buffer.tier == Tier::nvme) {
    read_nvme(a, b.bytes, bytes);
  } else if (b.buffer.tier == Tier::nvme) {
    write_nvme(b, a.bytes, bytes);
  } else if (cuda_ && tag.queue == Queue::copy) {
    // Overlapping move: on the copy stream, ordered after the compute stream's work so far, with an
    // event the caller waits on before using the destination.
    static_cast<void>(tag);
    const c10::Device dev = compute_device();
    c10::impl::VirtualGuardImpl impl(at::kCUDA);
    const c10::Stream compute = impl.getStream(dev);
    if (!cuda_queues_) cuda_queues_ = std::make_shared<CudaQueues>();
    if (!cuda_queues_->copy_stream) cuda_queues_->copy_stream = impl.getStreamFromGlobalPool(dev);
    c10::Event ready(at::kCUDA);
    ready.record(compute);
    ready.block(*cuda_queues_->copy_stream);
    {
      c10::StreamGuard guard(*cuda_queues_->copy_stream);
      b.bytes.narrow(0, 0, bytes).copy_(a.bytes.narrow(0, 0, bytes), /*non_blocking=*/true);
    }
    c10::Event done(at::kCUDA);
    done.record(*cuda_queues_->copy_stream);
    const uint64_t id = cuda_queues_->next++;
    cuda_queues_->events.emplace(id, std::move(done));
    return Completion{id};
  } else {
    b.bytes.narrow(0, 0, bytes).copy_(a.bytes.narrow(0, 0, bytes), /*non_blocking=*/cuda_);
  }
  return {};
}

Completion TorchBackend::collective(CollectiveKind kind, const Group& group, const std::vector<Buffer>& inputs,
                                    const std::vector<Buffer>& outputs, DType dtype, const MoveTag&) {
  const at::ScalarType st = torch_scalar_type(dtype);
  auto typed = [&](const Buffer& b) {
    const Slot& s = slot(b);
    if (s.buffer.tier == Tier::nvme) throw std::logic_error("torch backend: collectives need GPU or CPU buffers, not NVMe");
    return s.bytes.view(st);
  };
  auto need = [&](size_t n_in, size_t n_out) {
    if (inputs.size() != n_in || outputs.size() != n_out)
      throw std::invalid_argument(std::string("torch backend: ") + to_string(kind) + " over " + std::to_string(group.size()) +
                                  " ranks needs " + std::to_string(n_in) + " inputs and " + std::to_string(n_out) + " outputs");
  };
  const size_t w = static_cast<size_t>(group.size());
  const PhaseScope timed(report::PhaseId::collectives);  // the report's breakdown
  switch (kind) {
    case CollectiveKind::all_gather: {
      need(1, w);
      std::vector<at::Tensor> outs;
      for (const Buffer& b : outputs) outs.push_back(typed(b));
      comm_.all_gather(outs, typed(inputs[0]), &group);
      collective_bytes_ += inputs[0].bytes * static_cast<int64_t>(w);
      break;
    }
    case CollectiveKind::reduce_scatter: {
      need(w, 1);
      std::vector<at::Tensor> ins;
      for (const Buffer& b : inputs) ins.push_back(typed(b));
      at::Tensor mine = typed(outputs[0]);
      comm_.reduce_scatter_sum(ins, mine, &group);
      collective_bytes_ += inputs[0].bytes * static_cast<int64_t>(w);
      break;
    }
    case CollectiveKind::broadcast:
    case CollectiveKind::reduce:
    case CollectiveKind::all_reduce: {
      need(1, 1);
      if (!(inputs[0] == outputs[0])) throw std::invalid_argument(std::string("torch backend: ") + to_string(kind) + " works in place");
      at::Tensor t = typed(inputs[0]);
      if (kind == CollectiveKind::broadcast) comm_.broadcast(t, group.root, &group);
      else if (kind == CollectiveKind::reduce) comm_.reduce_sum(t, group.root, &group);
      else comm_.all_reduce_sum(t, &group);
      collective_bytes_ += inputs[0].bytes;
      break;
    }
    case CollectiveKind::all_to_all:
    case CollectiveKind::send_recv:
      throw std::invalid_argument(std::string("torch backend: ") + to_string(kind) + " is not a chunk-runtime collective");
  }
  return {};
}

void TorchBackend::wait(Completion done) {
  if (done.id == 0 || !cuda_queues_) return;
  auto it = cuda_queues_->events.find(done.id);
  if (it == cuda_queues_->events.end()) return;  // already waited on
  c10::impl::VirtualGuardImpl impl(at::kCUDA);
  it->second.block(impl.getStream(compute_device()));
  cuda_queues_->events.erase(it);
  bool all_done = true;
  for (const auto& [id, ev] : cuda_queues_->events) all_done = all_done && ev.query();
  if (all_done) cuda_queues_->deferred.clear();
}

void TorchBackend::write_host(const Buffer& buffer, int64_t offset, const at::Tensor& host) {
  Slot& s = slot(buffer);
  const at::Tensor src = host.contiguous();
  const int64_t n = src.numel() * static_cast<int64_t>(src.element_size());
  if (offset < 0 || offset + n > s.buffer.bytes) throw std::out_of_range("torch backend: write_host beyond buffer " + std::to_string(buffer.id));
  if (s.buffer.tier != Tier::nvme) {
    s.bytes.narrow(0, offset, n).copy_(at::from_blob(src.data_ptr(), {n}, at::kByte));
    return;
  }
  const char* p = static_cast<const char*>(src.data_ptr());
  for (int64_t done = 0; done < n;) {
    const ssize_t w = ::pwrite(s.fd, p + done, static_cast<size_t>(n - done), offset + done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail_errno("pwrite " + s.path);
    done += w;
  }
}

void TorchBackend::read_host(const Buffer& buffer, int64_t offset, at::Tensor& host) {
  const Slot& s = slot(buffer);
  const int64_t n = host.numel() * static_cast<int64_t>(host.element_size());
  if (!host.is_contiguous() || !host.is_cpu()) throw std::invalid_argument("torch backend: read_host needs a contiguous CPU tensor");
  if (offset < 0 || offset + n > s.buffer.bytes) throw std::out_of_range("torch backend: read_host beyond buffer " + std::to_string(buffer.id));
  if (s.buffer.tier != Tier::nvme) {
    at::from_blob(host.data_ptr(), {n}, at::kByte).copy_(s.bytes.narrow(0, offset, n));
    return;
  }
  char* p = static_cast<char*>(host.data_ptr());
  for (int64_t done = 0; done < n;) {
    const ssize_t r = ::pread(s.fd, p + done, static_cast<size_t>(n - done), offset + done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) fail_errno("pread " + s.path);
    done += r;
  }
}

double TorchBackend::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

std::string TorchBackend::gpu_tier_description() const {
  if (cuda_) return "gpu tier: cuda:" + std::to_string(device_index_);
  return "gpu tier: CPU pool (no CUDA)";
}

at::ScalarType torch_scalar_type(DType d) {
  switch (d) {
    case DType::fp32:
    case DType::tf32: return at::kFloat;
    case DType::fp16: return at::kHalf;
    case DType::bf16: return at::kBFloat16;
    case DType::fp8: break;
  }
  throw std::invalid_argument("starfish-run: fp8 tensors are not supported by the executor");
}

}  // namespace starfish::exec

#include "exec/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <ATen/ATen.h>
#include <fmt/core.h>

#include "exec/dist.h"
#include "sim/spec/error.h"

namespace fs = std::filesystem;

namespace starfish::exec {
namespace {

constexpr char kMagic[] = "STARFISH-CHECKPOINT 3\n";
constexpr char kMagicFormat2[] = "STARFISH-CHECKPOINT 2\n";  // before the identity lines
constexpr char kMagicFormat1[] = "STARFISH-CHECKPOINT 1\n";  // before the loss_scale line
static_assert(sizeof kMagic == sizeof kMagicFormat1 && sizeof kMagic == sizeof kMagicFormat2);
constexpr int64_t kPieceBytes = 1 << 20;

[[noreturn]] void fail_errno(const std::string& what) { throw std::runtime_error("checkpoint: " + what + ": " + std::strerror(errno)); }

uint64_t fnv1a(const char* p, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 1099511628211ULL;
  return h;
}

// False (errno set) when a write fails: ENOSPC on a full disk.
bool write_fully(int fd, const char* p, int64_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, p, static_cast<size_t>(n));
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return false;
    p += w;
    n -= w;
  }
  return true;
}

void write_all(int fd, const char* p, int64_t n, const std::string& path) {
  if (!write_fully(fd, p, n)) fail_errno("write " + path);
}

// The folder holding `path`: "." for a bare file name ("p0.ckpt").
std::string folder_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

void fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail_errno("open folder " + dir);
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail_errno("fsync folder " + dir);
  }
  ::close(fd);
}

std::string header_of(const CheckpointInfo& info, const NamedTensors& tensors) {
  std::ostringstream h;
  h << kMagic << "steps " << info.steps << "\n";
  if (info.loss_scale) {
    h << "loss_scale " << fmt::format("{:.17g}", info.loss_scale->scale)  // round-trips exactly
      << " " << info.loss_scale->good_steps << "\n";
  } else {
    h << "loss_scale none\n";
  }
  h << "identity " << info.identity.size() << "\n";
  for (const auto& [key, value] : info.identity) h << key << " " << value << "\n";
  h << "tensors " << tensors.size() << "\n";
  for (const auto& [name, t] : tensors) h << name << " " << c10::toString(t.scalar_type()) << " " << t.numel() << "\n";
  h << "end\n";
  return h.str();
}

// Atomically replaces `path` with `text`.
void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail_errno("create " + tmp);
  if (!write_fully(fd, text.data(), static_cast<int64_t>(text.size())) || ::fsync(fd) != 0) {
    const int saved = errno;
    ::close(fd);
    ::unlink(tmp.c_str());  // the old file stays as it was
    errno = saved;
    fail_errno("write " + tmp);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail_errno("rename " + tmp + " to " + path);
  fsync_dir(folder_of(path));
}

std::string rank_file(const std::string& step_dir, int rank) { return step_dir + "/rank-" + std::to_string(rank) + ".ckpt"; }

// Header, tensors in pieces (the hook after each) and checksum into the open temp file, synced.
void write_tensors(int fd, const std::string& tmp, const std::string& header, int64_t total, const NamedTensors& tensors,
                   const CheckpointHooks& hooks) {
  int64_t written = 0;
  auto put = [&](const char* p, int64_t n) {
    write_all(fd, p, n, tmp);
    written += n;
    if (hooks.after_write) hooks.after_write(written, total);
  };
  put(header.data(), static_cast<int64_t>(header.size()));
  uint64_t sum = 1469598103934665603ULL;
  for (const auto& [name, t] : tensors) {
    const at::Tensor c = t.detach().cpu().contiguous();
    const char* p = static_cast<const char*>(c.data_ptr());
    const int64_t n = c.numel() * static_cast<int64_t>(c.element_size());
    for (int64_t off = 0; off < n; off += kPieceBytes) {
      const int64_t k = std::min(kPieceBytes, n - off);
      sum = fnv1a(p + off, static_cast<size_t>(k), sum);
      put(p + off, k);
    }
  }
  put(reinterpret_cast<const char*>(&sum), 8);
  if (::fsync(fd) != 0) fail_errno("fsync " + tmp);
}

// Magic, steps, loss scale and identity; leaves `in` before the "tensors" line.
CheckpointInfo read_header_start(std::istream& in, const std::string& path) {
  CheckpointInfo info;
  info.file = path;
  std::string magic(sizeof kMagic - 1, '\0');
  in.read(magic.data(), static_cast<std::streamsize>(magic.size()));
  if (!in || (magic != kMagic && magic != kMagicFormat2 && magic != kMagicFormat1))
    throw SpecError(path + ": not a Starfish checkpoint");
  info.format = magic == kMagic ? 3 : magic == kMagicFormat2 ? 2 : 1;
  std::string word;
  int64_t steps = -1;
  in >> word >> steps;
  if (word != "steps" || steps < 0) throw SpecError(path + ": malformed checkpoint header");
  info.steps = steps;
  if (info.format >= 2) {
    std::string scale;
    in >> word >> scale;
    if (word != "loss_scale") throw SpecError(path + ": malformed checkpoint header (no loss_scale line)");
    if (scale != "none") {
      LossScalerState st;
      char* end = nullptr;
      st.scale = std::strtod(scale.c_str(), &end);
      in >> st.good_steps;
      if (*end != '\0' || !in || !(st.scale > 0) || st.good_steps < 0)
        throw SpecError(path + ": malformed checkpoint header (loss_scale " + scale + ")");
      info.loss_scale = st;
    }
  }
  if (info.format >= 3) {
    size_t keys = 0;
    in >> word >> keys;
    if (word != "identity" || !in || keys > 1000) throw SpecError(path + ": malformed checkpoint header (identity)");
    for (size_t k = 0; k < keys; ++k) {
      std::string key, value;
      if (!(in >> key >> value)) throw SpecError(path + ": malformed checkpoint header (identity)");
      info.identity.emplace_back(key, value);
    }
  }
  return info;
}

}  // namespace

void write_checkpoint_file(const std::string& path, const CheckpointInfo& info, const NamedTensors& tensors, const CheckpointHooks& hooks) {
  const std::string header = header_of(info, tensors);
  int64_t total = static_cast<int64_t>(header.size()) + 8;
  for (const auto& [name, t] : tensors) total += t.numel() * static_cast<int64_t>(t.element_size());

  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail_errno("create " + tmp);
  try {
    write_tensors(fd, tmp, header, total, tensors, hooks);
  } catch (const std::exception& e) {
    // A full disk (ENOSPC) or any other failure: no partial file stays behind, and nothing was
    // renamed, so `latest` still names the previous complete checkpoint.
    ::close(fd);
    ::unlink(tmp.c_str());
    throw std::runtime_error(std::string(e.what()) + " (nothing of " + path + " kept; the previous checkpoint is intact)");
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail_errno("rename " + tmp + " to " + path);
  fsync_dir(folder_of(path));
}


CheckpointInfo read_checkpoint_header(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SpecError(path + ": cannot open the checkpoint");
  return read_header_start(in, path);
}

CheckpointInfo read_checkpoint_file(const std::string& path, const NamedTensors& tensors) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SpecError(path + ": cannot open the checkpoint");
  CheckpointInfo info = read_header_start(in, path);
  std::string word;
  size_t count = 0;
  in >> word >> count;
  if (word != "tensors") throw SpecError(path + ": malformed checkpoint header");
  if (count != tensors.size())
    throw SpecError(path + ": holds " + std::to_string(count) + " tensors, this run has " + std::to_string(tensors.size()));
  for (const auto& [name, t] : tensors) {
    std::string n, dtype;
    int64_t numel = -1;
    in >> n >> dtype >> numel;
    if (n != name || dtype != c10::toString(t.scalar_type()) || numel != t.numel())
      throw SpecError(path + ": tensor '" + n + "' (" + dtype + ", " + std::to_string(numel) + " elements) does not match this run's '" +
                      name + "' (" + c10::toString(t.scalar_type()) + ", " + std::to_string(t.numel()) + ")");
  }
  in >> word;
  if (word != "end") throw SpecError(path + ": malformed checkpoint header");
  in.get();  // the newline after "end"
  // The size first: a truncated file (a save cut short, a copy that stopped) is named as such.
  int64_t expected = static_cast<int64_t>(in.tellg()) + 8;
  for (const auto& [name, t] : tensors) expected += t.numel() * static_cast<int64_t>(t.element_size());
  std::error_code ec;
  const auto actual = static_cast<int64_t>(fs::file_size(path, ec));
  if (ec || actual != expected)
    throw SpecError(path + ": " + (actual < expected ? "truncated checkpoint" : "checkpoint with trailing bytes") + ": " +
                    std::to_string(actual) + " bytes, its header describes " + std::to_string(expected));
  uint64_t sum = 1469598103934665603ULL;
  std::vector<at::Tensor> loaded;
  for (const auto& [name, t] : tensors) {
    at::Tensor c = at::empty({t.numel()}, at::TensorOptions().dtype(t.scalar_type()));
    const int64_t n = c.numel() * static_cast<int64_t>(c.element_size());
    in.read(static_cast<char*>(c.data_ptr()), n);
    if (in.gcount() != n) throw SpecError(path + ": truncated checkpoint (in tensor '" + name + "')");
    sum = fnv1a(static_cast<const char*>(c.data_ptr()), static_cast<size_t>(n), sum);
    loaded.push_back(c);
  }
  uint64_t stored = 0;
  in.read(reinterpret_cast<char*>(&stored), 8);
  if (in.gcount() != 8) throw SpecError(path + ": truncated checkpoint (no checksum)");
  if (stored != sum) throw SpecError(path + ": checksum mismatch, the checkpoint is corrupt");
  // Only a fully verified file touches the run's state.
  for (size_t i = 0; i < tensors.size(); ++i) {
    at::Tensor dst = tensors[i].second;
    at::NoGradGuard no_grad;
    dst.copy_(loaded[i].view(dst.sizes()));
  }
  return info;
}

void save_checkpoint(const std::string& dir, const CheckpointInfo& info, const NamedTensors& tensors, Comm& comm, const CheckpointHooks& hooks) {
  const std::string step_name = "step-" + std::to_string(info.steps);
  const std::string step_dir = dir + "/" + step_name;
  fs::create_directories(step_dir);
  write_checkpoint_file(rank_file(step_dir, comm.rank()), info, tensors, hooks);
  comm.barrier();  // every rank's file is durable before `latest` names the step
  if (comm.rank() == 0) {
    fsync_dir(dir);
    write_text_atomically(dir + "/latest", step_name + "\n");
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string n = e.path().filename().string();
      if (e.is_directory() && n.starts_with("step-") && n != step_name) fs::remove_all(e.path());
    }
  }
  comm.barrier();
}

bool has_checkpoint(const std::string& dir) { return fs::exists(dir + "/latest"); }

std::string identity_difference(const CheckpointIdentity& saved, const CheckpointIdentity& current) {
  std::map<std::string, std::pair<std::string, std::string>> both;
  for (const auto& [k, v] : saved) both[k].first = v;
  for (const auto& [k, v] : current) both[k].second = v;
  std::string out;
  for (const auto& [k, v] : both) {
    if (v.first == v.second) continue;
    out += (out.empty() ? "" : "; ") + k + " " + (v.first.empty() ? "(absent)" : v.first) + " in the checkpoint, " +
           (v.second.empty() ? "(absent)" : v.second) + " in this run";
  }
  return out;
}

CheckpointInfo load_checkpoint(const std::string& dir, const NamedTensors& tensors, Comm& comm,
                               const CheckpointIdentity& identity) {
  std::ifstream in(dir + "/latest");
  std::string step_name;
  if (!in || !(in >> step_name)) throw SpecError(dir + ": no checkpoint to resume from (no 'latest')");
  const std::string step_dir = dir + "/" + step_name;
  int ranks = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(step_dir, ec))
    ranks += e.path().filename().string().starts_with("rank-") && e.path().extension() == ".ckpt";
  if (ranks != comm.world_size())
    throw SpecError(step_dir + ": written by " + std::to_string(ranks) + " rank(s), this run has " +
                    std::to_string(comm.world_size()) + ": resume with the same number of ranks");
  const std::string file = rank_file(step_dir, comm.rank());
  // The identity before the tensors: "another plan" says more than "tensor 3 has another size".
  if (!identity.empty()) {
    const CheckpointInfo header = read_checkpoint_header(file);
    if (!header.identity.empty())
      if (const std::string d = identity_difference(header.identity, identity); !d.empty())
        throw SpecError(file + ": written by another run: " + d + "; resume with the run that wrote it, or start afresh");
  }
  const CheckpointInfo info = read_checkpoint_file(file, tensors);
  // Every rank decides the same loss scale (from the same global norm), so their files agree.
  const double mine[3] = {double(info.steps), info.loss_scale ? info.loss_scale->scale : 0.0,
                          info.loss_scale ? double(info.loss_scale->good_steps) : -1.0};
  at::Tensor all = at::tensor({mine[0], mine[1], mine[2]}, at::kDouble);
  comm.all_reduce_sum(all);
  for (int i = 0; i < 3; ++i)
    if (all[i].item<double>() != mine[i] * comm.world_size())
      throw SpecError(dir + ": the ranks' checkpoints are of different " + (i == 0 ? "steps" : "loss scales"));
  return info;
}

}  // namespace starfish::exec

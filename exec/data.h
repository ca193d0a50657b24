#pragma once
// Training data: byte-level tokens (vocab 256) of a text file, or of a default corpus made in
// code (so a run needs no download). Batches are a pure function of (seed, iteration, sequence
// index), so a rank picks its own slice of the global batch and a resumed run sees exactly the
// batches the interrupted one would have.
#include <cstdint>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

namespace starfish::exec {

struct Batch {
  at::Tensor tokens;   // [sequences, seq_len] int64
  at::Tensor targets;  // [sequences, seq_len] int64: tokens shifted by one
};

class ByteCorpus {
 public:
  explicit ByteCorpus(std::vector<uint8_t> bytes);
  static ByteCorpus from_file(const std::string& path);  // throws SpecError when unreadable or empty
  // English-like sentences from a small fixed grammar, `bytes` long, the same for every seed.
  static ByteCorpus generated(int64_t bytes);

  int64_t size() const { return static_cast<int64_t>(bytes_.size()); }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

  // Sequences [first, first + count) of iteration `iteration`'s global batch.
  Batch batch(uint64_t seed, int64_t iteration, int64_t first, int64_t count, int seq_len) const;

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace starfish::exec

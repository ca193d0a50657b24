#include "exec/data.h"

#include <fstream>
#include <iterator>

#include <ATen/ATen.h>

#include "sim/spec/error.h"

namespace starfish::exec {
namespace {

// splitmix64: a fixed, portable mixing function (std:: distributions differ between libraries).
uint64_t mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

}  // namespace

ByteCorpus::ByteCorpus(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}

ByteCorpus ByteCorpus::from_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SpecError(path + ": cannot open the data file");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.empty()) throw SpecError(path + ": the data file is empty");
  return ByteCorpus(std::move(bytes));
}

ByteCorpus ByteCorpus::generated(int64_t size) {
  // A tiny grammar: subject, verb, object, an optional place, and punctuation. Regular enough for
  // a small model to learn quickly (the loss falls well below log(256) = 5.55), varied enough
  // not to be memorised in a few steps.
  static constexpr const char* kSubjects[] = {"the old sailor", "a young fox", "the miller", "my sister", "the tired horse",
                                              "a grey cat", "the river", "our teacher", "the small boy", "a quiet owl"};
  static constexpr const char* kVerbs[] = {"watches", "carries", "finds", "follows", "remembers", "paints", "hears", "keeps"};
  static constexpr const char* kObjects[] = {"the lantern", "a silver coin", "the long road", "an open door", "the morning bell",
                                             "a basket of apples", "the northern star", "a letter"};
  static constexpr const char* kPlaces[] = {" by the sea", " in the valley", " at dawn", " under the bridge", " near the mill", ""};
  std::string text;
  uint64_t state = 42;
  auto pick = [&](auto& list) {
    state = mix(state);
    return std::string(list[state % std::size(list)]);
  };
  while (static_cast<int64_t>(text.size()) < size) {
    std::string s = pick(kSubjects) + " " + pick(kVerbs) + " " + pick(kObjects) + pick(kPlaces);
    state = mix(state);
    s += (state % 4 == 0) ? "!\n" : ". ";
    s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
    text += s;
  }
  text.resize(size);
  return ByteCorpus(std::vector<uint8_t>(text.begin(), text.end()));
}

Batch ByteCorpus::batch(uint64_t seed, int64_t iteration, int64_t first, int64_t count, int seq_len) const {
  const int64_t window = int64_t{seq_len} + 1;
  if (size() < window)
    throw SpecError("data: " + std::to_string(size()) + " bytes are fewer than one sequence of " + std::to_string(window));
  at::Tensor all = at::empty({count, window}, at::kLong);
  int64_t* out = all.data_ptr<int64_t>();
  for (int64_t i = 0; i < count; ++i) {
    const uint64_t r = mix(mix(seed ^ 0xDA7A) ^ mix(static_cast<uint64_t>(iteration)) ^ mix(static_cast<uint64_t>(first + i) << 20));
    const int64_t offset = static_cast<int64_t>(r % static_cast<uint64_t>(size() - window + 1));
    for (int64_t j = 0; j < window; ++j) out[i * window + j] = bytes_[offset + j];
  }
  return Batch{all.narrow(1, 0, seq_len).contiguous(), all.narrow(1, 1, seq_len).contiguous()};
}

}  // namespace starfish::exec

// Without libFuzzer (a GCC build): runs a fuzz target once on each input file, or each file of
// each folder, named on the command line (options starting with '-' are libFuzzer's, ignored),
// so the seed corpus and every past finding replay in the ordinary test run.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {
int run_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "replay: cannot read %s\n", p.c_str());
    return 1;
  }
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  return 0;
}
}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  int inputs = 0, failures = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.starts_with("-")) continue;
    if (fs::is_directory(arg)) {
      for (const auto& e : fs::recursive_directory_iterator(arg))
        if (e.is_regular_file()) failures += run_file(e.path()), ++inputs;
    } else {
      failures += run_file(arg), ++inputs;
    }
  }
  std::printf("replay: %d inputs, none crashed\n", inputs);
  return failures == 0 && inputs > 0 ? 0 : 1;
}

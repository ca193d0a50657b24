#pragma once
// Reading a file a user named (a spec, a report, a move log, a Hugging Face config), with one
// clear error for each way it can fail instead of a stream exception or an endless read.
#include <cstdint>
#include <string>

#include "sim/spec/error.h"

namespace starfish {

// No input Starfish reads is near this size; a larger one is a mistake (a dataset, a device).
inline constexpr int64_t kMaxInputFileBytes = int64_t{64} << 20;

// A file that cannot be read at all (as opposed to one whose content is wrong): a caller that
// took the path from another file adds where ("plan.yaml:2:8: field 'model': ...").
class InputFileError : public SpecError {
 public:
  InputFileError(const std::string& path, const std::string& why) : SpecError(path + ": " + why), why_(why) {}
  const std::string& why() const { return why_; }

 private:
  std::string why_;
};

// The whole file; "-" is standard input (read once per process, bounded the same way). Throws
// InputFileError "path: <why>" when it does not exist, is a folder or not a regular file (a FIFO
// or a device would block or never end), cannot be read, or is larger than kMaxInputFileBytes.
std::string read_input_file(const std::string& path);

// How errors name an input: "<stdin>" for "-", else the path.
inline constexpr const char* kStdinName = "<stdin>";
std::string input_name(const std::string& path);

// A path one file names inside it (a plan's model and hardware, a profile's base): as given when
// absolute, else relative to the folder of the file that names it, as a user reads it.
std::string path_named_in(const std::string& naming_file, const std::string& named);

}  // namespace starfish

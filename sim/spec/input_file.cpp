#include "sim/spec/input_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/spec/error.h"

namespace starfish {

std::string read_input_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) throw InputFileError(path, "no such file");
  if (fs::is_directory(st)) throw InputFileError(path, "is a folder, not a file");
  if (!fs::is_regular_file(st)) throw InputFileError(path, "not a regular file (a device, pipe or socket)");
  const auto size = fs::file_size(path, ec);
  if (ec) throw InputFileError(path, "cannot read: " + ec.message());
  if (size > static_cast<uintmax_t>(kMaxInputFileBytes))
    throw InputFileError(path, std::to_string(size) + " bytes is larger than any input Starfish reads (limit " +
                    std::to_string(kMaxInputFileBytes >> 20) + " MiB)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputFileError(path, std::string("cannot open: ") + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw InputFileError(path, std::string("cannot read: ") + std::strerror(errno));
  return text.str();
}

}  // namespace starfish

#include "sim/spec/input_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "sim/spec/error.h"

namespace starfish {
namespace {

// Standard input, bounded like a file; it can be read once per process (a second "-" would
// silently read nothing).
std::string read_stdin() {
  static bool consumed = false;
  if (consumed) throw InputFileError(kStdinName, "already read: only one input can be '-'");
  consumed = true;
  std::string text;
  char buf[1 << 16];
  while (std::cin.read(buf, sizeof buf) || std::cin.gcount() > 0) {
    text.append(buf, static_cast<size_t>(std::cin.gcount()));
    if (static_cast<int64_t>(text.size()) > kMaxInputFileBytes)
      throw InputFileError(kStdinName, "more than " + std::to_string(kMaxInputFileBytes >> 20) +
                                           " MiB, larger than any input Starfish reads");
  }
  if (std::cin.bad()) throw InputFileError(kStdinName, std::string("cannot read: ") + std::strerror(errno));
  return text;
}

}  // namespace

std::string input_name(const std::string& path) { return path == "-" ? kStdinName : path; }

std::string path_named_in(const std::string& naming_file, const std::string& named) {
  namespace fs = std::filesystem;
  if (fs::path(named).is_absolute()) return named;
  return (fs::path(naming_file).parent_path() / named).lexically_normal().string();
}

std::string read_input_file(const std::string& path) {
  if (path == "-") return read_stdin();
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

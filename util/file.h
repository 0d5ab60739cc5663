// Reading a whole input file, declared once. The error type is the caller's (ConfigError for configuration
// files, InputError for command-line inputs); its message names the path and what the file was expected to
// be.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace strata::util {

// The bytes of `path`. Throws Error "<path>: is a directory, expected <what>" or "<path>: cannot open <what>"
// (e.g. what = "a profile database (JSON)"), and "<path>: read failed" for an I/O error while reading.
template <class Error>
std::string read_file(const std::filesystem::path& path, std::string_view what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(fmt::format("{}: is a directory, expected {}", path.string(), what));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open {}", path.string(), what));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(fmt::format("{}: read failed", path.string()));
  return text.str();
}

}  // namespace strata::util

#include "util/atomic_file.h"

#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>

#include <fmt/format.h>

#include "util/error.h"

namespace strata::util {
namespace fs = std::filesystem;

void check_output_path(const fs::path& path) {
  std::error_code ec;
  const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
  if (!fs::is_directory(folder, ec))
    throw InputError(fmt::format("{}: cannot write: folder '{}' does not exist (create it first)",
                                 path.string(), folder.string()));
  if (fs::is_directory(path, ec))
    throw InputError(
        fmt::format("{}: cannot write: it is a directory (expected a file name)", path.string()));
}

void write_file_atomically(const fs::path& path, std::string_view text) {
  check_output_path(path);
  std::error_code ec;
  const fs::path tmp = path.string() + ".tmp";
  const auto fail = [&](std::string_view why) {
    fs::remove(tmp, ec);
    return std::runtime_error(fmt::format("{}: {}", path.string(), why));
  };
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out)  // the user's folder is not writable: an input error, not an internal one
      throw InputError(
          fmt::format("{}: cannot write: cannot create '{}' in its folder", path.string(), tmp.string()));
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    out.flush();
    if (!out) throw fail("write failed (disk full?)");
  }
  fs::rename(tmp, path, ec);
  if (ec) throw fail(fmt::format("cannot rename '{}' over it: {}", tmp.string(), ec.message()));
}

}  // namespace strata::util

#include "util/path.h"

#include <unistd.h>

#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "util/error.h"

namespace strata::util {
namespace fs = std::filesystem;

fs::path resolve_relative_to(const fs::path& file, std::string_view path) {
  const fs::path p(path);
  if (p.is_absolute()) return p;
  return (file.parent_path() / p).lexically_normal();
}

namespace {

// Set once by a host at load time (set_executable_path), before any lookup.
fs::path& executable_override() {
  static fs::path path;
  return path;
}

}  // namespace

void set_executable_path(fs::path path) {
  executable_override() = std::move(path);
}

fs::path executable_path() {
  if (!executable_override().empty()) return executable_override();
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    throw std::runtime_error(
        fmt::format("cannot locate the running program (/proc/self/exe): {}", ec.message()));
  return p;
}

namespace {

// `p` lies inside folder `dir` (both absolute and normalized).
bool is_inside(const fs::path& p, const fs::path& dir) {
  const auto rel = p.lexically_relative(dir);
  return !rel.empty() && *rel.begin() != "..";
}

}  // namespace

fs::path find_data_file(std::string_view relative, const fs::path& executable) {
  std::error_code ec;
  std::vector<fs::path> tried;
  const fs::path exe = executable.lexically_normal();
  // <prefix>/<bindir>/strata -> <prefix>/<datadir>/strata/<relative>
  tried.push_back((exe.parent_path() / STRATA_DATA_FROM_BINDIR / relative).lexically_normal());
  const fs::path build_dir = fs::path(STRATA_BINARY_DIR).lexically_normal();
  if (is_inside(exe, build_dir)) tried.push_back(fs::path(STRATA_SOURCE_DIR) / relative);
  for (const auto& p : tried)
    if (fs::exists(p, ec)) return p;
  std::string where;
  for (const auto& p : tried) where += (where.empty() ? "" : ", ") + p.string();
  throw InputError(
      fmt::format("data file '{}' not found (looked in: {}); is strata installed with "
                  "`cmake --install`?",
                  relative, where));
}

ScopedTempDir::ScopedTempDir(std::string_view prefix)
    : path_(std::filesystem::temp_directory_path() /
            (std::string(prefix) + "-" + std::to_string(::getpid()))) {
  std::filesystem::create_directories(path_);
}

ScopedTempDir::~ScopedTempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace strata::util

// Where files named by users and shipped with strata are found.
#pragma once

#include <filesystem>
#include <string_view>

namespace strata::util {

// A path written inside `file` (an experiment YAML naming its hardware file, say): absolute paths stay as
// they are, relative ones resolve against the folder of `file`, so the result does not depend on the
// directory strata was started from.
std::filesystem::path resolve_relative_to(const std::filesystem::path& file, std::string_view path);

// The running program (/proc/self/exe), or the path set by set_executable_path.
std::filesystem::path executable_path();
// Makes executable_path() return `path` from now on: a host that loads strata as a library (the Python
// module, python/) names the program strata's data files are found from, since /proc/self/exe is the host's.
void set_executable_path(std::filesystem::path path);

// A data file shipped with strata, named relative to the source tree ("configs/hw/dgx-a100.yaml",
// "experiments/plots/collective_sweep.py"), located from `executable` (default: the running program):
//  1. installed layout: <prefix>/bin/strata finds <prefix>/share/strata/<relative> (the folders are those of
//     the install configured with `cmake --install`, GNUInstallDirs);
//  2. build tree: a program inside the build folder configured from a source tree finds
//     <source>/<relative> (the source folder is recorded at configure time).
// Throws InputError listing the places it looked when the file is in neither.
std::filesystem::path find_data_file(std::string_view relative,
                                     const std::filesystem::path& executable = executable_path());

// A folder of its own under the system's temporary directory (<tmp>/<prefix>-<pid>), created on construction
// and removed with everything in it on destruction (a failure to remove is ignored: nothing to report it to).
class ScopedTempDir {
 public:
  explicit ScopedTempDir(std::string_view prefix);
  ~ScopedTempDir();
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace strata::util

#include "experiments/experiment.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>

#include <fmt/format.h>

#include "experiments/sweep.h"
#include "experiments/sweep_mpi.h"
#include "hw/system_loader_tree.h"
#include "hw/what_if.h"
#include "hw/yaml_patch.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/interrupt.h"
#include "util/path.h"
#include "util/subprocess.h"

extern char** environ;

namespace strata::experiments {
namespace fs = std::filesystem;
namespace {

std::string random_suffix() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}", rd(), rd());
}

enum class LockWait : bool { kNo, kYes };

// Opens `folder` (not following a link) and takes an exclusive flock(2) on it: the descriptor, or -1 when
// the folder cannot be opened or (without waiting) another process holds the lock. `unlockable` is set when
// the file system does not support flock at all (the folder is then open but unlocked).
int open_locked_folder(const fs::path& folder, LockWait wait, bool* unlockable = nullptr) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -1;
  int rc = 0;
  while ((rc = ::flock(fd, LOCK_EX | (wait == LockWait::kYes ? 0 : LOCK_NB))) != 0 && errno == EINTR) {
  }
  if (rc == 0) return fd;
  if (unlockable && errno != EWOULDBLOCK) {
    *unlockable = true;
    return fd;
  }
  ::close(fd);
  return -1;
}

// Whether `path` still names the folder open as `fd` (same device and inode).
bool names_open_folder(const fs::path& path, int fd) {
  struct stat open_folder = {};
  struct stat named = {};
  return ::fstat(fd, &open_folder) == 0 && ::lstat(path.c_str(), &named) == 0 &&
         open_folder.st_dev == named.st_dev && open_folder.st_ino == named.st_ino;
}

// Removes the `.<name>.partial-*` folders in `parent` that no process holds locked: staging folders of runs
// that were killed (SIGKILL cannot be handled) or the previous set of a run killed while removing it. A
// folder a live run holds is left alone.
void remove_stale_staging(const fs::path& parent, const std::string& name) {
  const std::string prefix = fmt::format(".{}.partial-", name);
  std::error_code ec;
  std::vector<fs::path> candidates;
  for (auto it = fs::directory_iterator(parent, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (it->path().filename().string().starts_with(prefix)) candidates.push_back(it->path());
  for (const auto& folder : candidates) {
    const int fd = open_locked_folder(folder, LockWait::kNo);
    if (fd < 0) continue;
    if (names_open_folder(folder, fd)) {
      fs::remove_all(folder, ec);
      if (ec)
        std::cerr << fmt::format("warning: cannot remove '{}', left by an interrupted run: {}\n",
                                 folder.string(), ec.message());
      else
        std::cerr << fmt::format("note: removed '{}', left by an interrupted run\n", folder.string());
    }
    ::close(fd);
  }
}

}  // namespace

ExperimentFile ExperimentFile::load(const std::string& path) {
  return from_root(path, YamlReader::from_file(path));
}

ExperimentFile ExperimentFile::from_string(std::string_view text, const std::string& path) {
  return from_root(path, YamlReader::from_string(text, path));
}

ExperimentFile ExperimentFile::from_root(const std::string& path, YamlReader root) {
  ExperimentFile f(path, std::move(root));
  const YamlReader name = f.root_.at("experiment");
  f.name_ = name.as_string();
  if (f.name_.empty() || f.name_ == "." || f.name_.find('/') != std::string::npos ||
      f.name_.find("..") != std::string::npos || f.name_.front() == '.')
    throw name.error(
        "expected a plain name (it becomes the results folder): no '/', no '..', no leading '.'");
  f.description_ = f.root_.has("description") ? f.root_.at("description").as_string() : "";
  const YamlReader kind = f.root_.at("kind");
  f.kind_ = kind.as_string();
  if (!find_experiment_kind(f.kind_))
    throw kind.error(
        fmt::format("unknown experiment kind '{}' (expected one of: {})", f.kind_, experiment_kind_names()));
  return f;
}

ExperimentFile ExperimentFile::for_point(const std::string& path, YamlReader root, HardwarePatch hardware) {
  ExperimentFile f = from_root(path, std::move(root));
  f.hardware_ = std::make_shared<const HardwarePatch>(std::move(hardware));
  return f;
}

void ExperimentFile::record_input(InputFile input) const {
  for (auto& known : *inputs_)
    if (known.path == input.path) {
      if (input.hardware) known = std::move(input);
      return;
    }
  inputs_->push_back(std::move(input));
}

void ExperimentFile::expect_keys(std::initializer_list<std::string_view> kind_keys) const {
  if (!root_.is_map()) throw root_.error("expected a mapping");
  for (const auto& entry : root_.node()) {
    if (!entry.first.IsScalar())
      throw config_error(ConfigLocation{path_, "<top level>"}, entry.first, "expected a text key");
    const auto key = entry.first.as<std::string>();
    if (key == "experiment" || key == "description" || key == "kind" || key == "sweep") continue;
    bool known = false;
    for (auto k : kind_keys) known = known || k == key;
    if (!known) {
      std::string expected = "experiment, description, kind, sweep";
      for (auto k : kind_keys) expected += fmt::format(", {}", k);
      throw config_error(ConfigLocation{path_, key}, entry.first,
                         fmt::format("unknown field for kind {} (expected: {})", kind_, expected));
    }
  }
}

std::string ExperimentFile::resolve_path(const YamlReader& field) const {
  const std::string written = field.as_string();
  if (written.empty()) throw field.error("expected a file path");
  // Relative to the experiment file, not the working directory: `strata run /abs/x.yaml` works from anywhere.
  const fs::path resolved = util::resolve_relative_to(path_, written);
  std::error_code ec;
  if (!fs::is_regular_file(resolved, ec))
    throw field.error(
        fmt::format("cannot open '{}' (relative paths are taken from the directory of {}; "
                    "resolved to '{}')",
                    written, path_, fs::absolute(resolved, ec).string()));
  record_input({resolved.string(), false, ""});
  return resolved.string();
}

std::string ExperimentFile::model_reference(const YamlReader& field) const {
  if (field.is_map()) {
    if (field.size() == 0)
      throw field.error("expected transformer keys, e.g. {layers: 24, hidden: 2048, ...}");
    std::string ref = "transformer:";
    for (const auto& kv : field.node()) {
      const auto key = kv.first.as<std::string>();
      ref += fmt::format("{}{}={}", ref.back() == ':' ? "" : ",", key, field.at(key).as_string());
    }
    return ref;
  }
  const std::string text = field.as_string();
  const bool file = text.ends_with(".yaml") || text.ends_with(".yml") || text.ends_with(".onnx") ||
                    text.find('/') != std::string::npos;
  return file ? resolve_path(field) : text;
}

hw::Topology ExperimentFile::load_system(const YamlReader& field, std::optional<int> nodes) const {
  const std::string file = resolve_path(field);
  const auto in_hardware = [&](const ConfigError& e) {
    return field.error(fmt::format("in the hardware description it names: {}", e.what()));
  };
  const YamlReader tree = [&] {
    try {
      return YamlReader::from_file(file);
    } catch (const ConfigError& e) {
      throw in_hardware(e);
    }
  }();
  YAML::Node root = tree.node();  // a handle on the tree just read: the changes below are its own
  if (hardware_) {
    // Errors name the sweep axis (its line in this file) and the hardware file.
    for (const auto& set : hardware_->sets)
      if (const std::string why = hw::set_at_path(root, set.path, set.value); !why.empty())
        throw set.where.error(fmt::format("in the hardware description {}: {}", file, why));
    for (const auto& scale : hardware_->scales) {
      try {
        hw::apply_scale(root, file, scale.name, scale.factor);
      } catch (const ConfigError& e) {
        throw scale.where.error(e.what());
      }
    }
  }
  YAML::Emitter effective;
  effective << root;
  record_input({file, true, std::string(effective.c_str()) + "\n"});
  try {
    return hw::load_system(tree, hw::LoadOptions{nodes});
  } catch (const ConfigError& e) {
    throw in_hardware(e);
  }
}

ResultsDir::ResultsDir(fs::path destination) : destination_(std::move(destination)) {
  const fs::path parent = destination_.parent_path().empty() ? fs::path(".") : destination_.parent_path();
  const std::string name = destination_.filename().string();
  const auto cannot_create = [&](const std::error_code& ec) {
    return ConfigError(fmt::format("--output: cannot create the results folder under '{}': {}",
                                   parent.string(), ec.message()));
  };
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw cannot_create(ec);
  remove_stale_staging(parent, name);
  // Another run cleaning up could take a folder made here for stale between mkdir and flock (it gets the
  // lock first and removes the folder); the folder is then gone once the lock is ours, and a new one is made.
  for (int attempt = 0; staging_lock_ < 0; ++attempt) {
    if (attempt == 100) throw cannot_create(std::make_error_code(std::errc::resource_unavailable_try_again));
    staging_ = parent / fmt::format(".{}.partial-{}", name, random_suffix());
    // Registered before it exists: an interrupt right after the folder appears (and before the lock below is
    // taken) removes it too. Were the name taken, another run's folder would be registered until the reset
    // below; with 64 random bits in the name that is not a case to plan for.
    removed_on_interrupt_.emplace(staging_, fmt::format("'{}' was left as it was", destination_.string()));
    if (!fs::create_directory(staging_, ec)) {
      removed_on_interrupt_.reset();
      if (ec) throw cannot_create(ec);
      continue;  // the name is taken
    }
    bool unlockable = false;
    staging_lock_ = open_locked_folder(staging_, LockWait::kYes, &unlockable);
    if (staging_lock_ >= 0 && !names_open_folder(staging_, staging_lock_)) {
      ::close(staging_lock_);
      staging_lock_ = -1;
    } else if (staging_lock_ < 0) {
      const std::error_code why(errno, std::generic_category());
      fs::remove_all(staging_, ec);
      throw cannot_create(why);
    }
    // On a file system without flock the folder stays unlocked, and no run can lock it to remove it either.
  }
}

ResultsDir::~ResultsDir() {
  std::error_code ec;
  // An exception left the set unfinished: drop it, the previous results stay in place.
  if (!committed_) fs::remove_all(staging_, ec);
  removed_on_interrupt_.reset();
  if (staging_lock_ >= 0) ::close(staging_lock_);
}

void ResultsDir::write(std::string_view file, std::string_view text) const {
  util::write_file_atomically(staged(file), text);
}

fs::path ResultsDir::commit() {
  std::error_code ec;
  fs::path previous;  // the previous set, removed once the new one is in place
  try {
    // An interrupt waits until the set is in place: between the two renames of the fallback below the
    // destination is missing, and removing the staging path during an exchange could hit either set.
    const auto hold = util::hold_interrupts();
    if (!fs::exists(destination_, ec)) {
      fs::rename(staging_, destination_);
    } else if (!fs::is_directory(destination_, ec)) {
      throw ConfigError(fmt::format("--output: '{}' exists and is not a folder", destination_.string()));
    } else if (renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, destination_.c_str(), RENAME_EXCHANGE) == 0) {
      // The complete new set swapped with the old one in one step (Linux renameat2); the old one is now at
      // the staging path, which an interrupt still removes.
      previous = staging_;
    } else {
      // The file system cannot exchange: move the old set aside first.
      previous = staging_.string() + ".old";
      fs::rename(destination_, previous);
      fs::rename(staging_, destination_);
    }
    committed_ = true;
  } catch (const fs::filesystem_error& e) {
    throw ConfigError(fmt::format("--output: cannot put the results in place at '{}': {}",
                                  destination_.string(), e.code().message()));
  }
  // Killed here, the previous set stays under a `.<name>.partial-*` name nobody holds: the next run removes
  // it.
  if (!previous.empty()) fs::remove_all(previous, ec);
  removed_on_interrupt_.reset();
  ::close(staging_lock_);
  staging_lock_ = -1;
  return destination_;
}

void draw_figures(std::string& summary, const RunOptions& options, const std::string& script,
                  const std::vector<std::string>& args) {
  if (options.plots && !run_plot_script(script, args))
    summary += "\n(The figures could not be drawn: /usr/bin/python3 with matplotlib is needed.)\n";
}

bool run_plot_script(const std::string& script, const std::vector<std::string>& args) {
  const std::string python = "/usr/bin/python3";
  fs::path script_path;
  try {
    // Beside the installed binary (share/strata) or in the source tree of a build (util/path.h).
    script_path = util::find_data_file("experiments/plots/" + script);
  } catch (const util::InputError& e) {
    std::cerr << fmt::format("warning: plotting skipped: {}\n", e.what());
    return false;
  }
  std::vector<std::string> argv_text{python, script_path.string()};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  // Ctrl-C or kill while plotting stops strata too (util::run_process), instead of being reported as a
  // missing matplotlib; the staging folder is removed and the previous results stay in place.
  if (util::run_process(argv_text, util::ProcessOptions{.capture = false, .stdin_text = {}}).ok())
    return true;
  std::cerr << "warning: plotting failed (needs /usr/bin/python3 with matplotlib); CSV and summary are "
               "written\n";
  return false;
}

const ExperimentKind* find_experiment_kind(std::string_view name) {
  for (const auto& k : experiment_kinds())
    if (k.name == name) return &k;
  return nullptr;
}

std::string experiment_kind_names() {
  std::string names;
  for (const auto& k : experiment_kinds()) names += (names.empty() ? "" : ", ") + k.name;
  return names;
}

ExperimentFile check_experiment(const std::string& path) {
  ExperimentFile file = ExperimentFile::load(path);
  if (has_sweep(file))
    check_sweep(file);
  else
    find_experiment_kind(file.kind())->parse(file);
  return file;
}

void check_experiment_text(std::string_view text, const std::string& path) {
  const ExperimentFile file = ExperimentFile::from_string(text, path);
  if (has_sweep(file))
    check_sweep(file, text);
  else
    find_experiment_kind(file.kind())->parse(file);
}

std::string run_experiment(const std::string& path, const RunOptions& options) {
  const ExperimentFile file = ExperimentFile::load(path);
  if (has_sweep(file)) return run_sweep(file, options).folder;
  if (const MpiLaunch launch = mpi_launch(); launch.launched && launch.size != 1)
    throw ConfigError(
        fmt::format("{}: only the points of a sweep (a `sweep:` section) are shared between MPI "
                    "ranks; this {} experiment is one run: start it without mpirun",
                    path, file.kind()));
  // The whole file is validated (and its hardware files loaded) before anything runs or is written.
  const auto run_and_report = find_experiment_kind(file.kind())->parse(file);
  ResultsDir out(fs::path(options.output_root) / file.name());
  run_and_report(out, options);
  return out.commit().string();
}

}  // namespace strata::experiments

#include "experiments/experiment.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <random>

#include <fmt/format.h>

#include "hw/system_loader.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/path.h"

extern char** environ;

namespace strata::experiments {
namespace fs = std::filesystem;
namespace {

std::string random_suffix() {
  std::random_device rd;
  return fmt::format("{:08x}", rd());
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

void ExperimentFile::expect_keys(std::initializer_list<std::string_view> kind_keys) const {
  if (!root_.is_map()) throw root_.error("expected a mapping");
  for (const auto& entry : root_.node()) {
    if (!entry.first.IsScalar())
      throw config_error(ConfigLocation{path_, "<top level>"}, entry.first, "expected a text key");
    const auto key = entry.first.as<std::string>();
    if (key == "experiment" || key == "description" || key == "kind") continue;
    bool known = false;
    for (auto k : kind_keys) known = known || k == key;
    if (!known) {
      std::string expected = "experiment, description, kind";
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
  return resolved.string();
}

hw::Topology ExperimentFile::load_system(const YamlReader& field, std::optional<int> nodes) const {
  const std::string file = resolve_path(field);
  try {
    return hw::load_system(file, hw::LoadOptions{nodes});
  } catch (const ConfigError& e) {
    throw field.error(fmt::format("in the hardware description it names: {}", e.what()));
  }
}

ResultsDir::ResultsDir(fs::path destination) : destination_(std::move(destination)) {
  const fs::path parent = destination_.parent_path().empty() ? fs::path(".") : destination_.parent_path();
  try {
    fs::create_directories(parent);
    staging_ = parent / fmt::format(".{}.partial-{}", destination_.filename().string(), random_suffix());
    fs::create_directory(staging_);
  } catch (const fs::filesystem_error& e) {
    throw ConfigError(fmt::format("--output: cannot create the results folder under '{}': {}",
                                  parent.string(), e.code().message()));
  }
}

ResultsDir::~ResultsDir() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);  // best effort: an interrupted run leaves the previous results in place
}

void ResultsDir::write(std::string_view file, std::string_view text) const {
  util::write_file_atomically(staged(file), text);
}

fs::path ResultsDir::commit() {
  std::error_code ec;
  try {
    if (!fs::exists(destination_, ec)) {
      fs::rename(staging_, destination_);
    } else if (!fs::is_directory(destination_, ec)) {
      throw ConfigError(fmt::format("--output: '{}' exists and is not a folder", destination_.string()));
    } else if (renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, destination_.c_str(), RENAME_EXCHANGE) == 0) {
      // The complete new set swapped with the old one in one step (Linux renameat2); drop the old one.
      fs::remove_all(staging_, ec);
    } else {
      // The file system cannot exchange: move the old set aside first.
      const fs::path old = staging_.string() + ".old";
      fs::rename(destination_, old);
      fs::rename(staging_, destination_);
      fs::remove_all(old, ec);
    }
  } catch (const fs::filesystem_error& e) {
    throw ConfigError(fmt::format("--output: cannot put the results in place at '{}': {}",
                                  destination_.string(), e.code().message()));
  }
  committed_ = true;
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
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, python.c_str(), nullptr, nullptr, argv.data(), environ);
  int status = 0;
  if (spawned == 0) {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
    // Ctrl-C or kill while plotting stops strata too (with the signal's exit status), instead of being
    // reported as a missing matplotlib; the staging folder is left and the previous results stay in place.
    if (WIFSIGNALED(status) && (WTERMSIG(status) == SIGINT || WTERMSIG(status) == SIGTERM)) {
      std::signal(WTERMSIG(status), SIG_DFL);
      std::raise(WTERMSIG(status));
    }
  }
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
  find_experiment_kind(file.kind())->parse(file);
  return file;
}

void check_experiment_text(std::string_view text, const std::string& path) {
  const ExperimentFile file = ExperimentFile::from_string(text, path);
  find_experiment_kind(file.kind())->parse(file);
}

std::string run_experiment(const std::string& path, const RunOptions& options) {
  const ExperimentFile file = ExperimentFile::load(path);
  // The whole file is validated (and its hardware files loaded) before anything runs or is written.
  const auto run_and_report = find_experiment_kind(file.kind())->parse(file);
  ResultsDir out(fs::path(options.output_root) / file.name());
  run_and_report(out, options);
  return out.commit().string();
}

}  // namespace strata::experiments

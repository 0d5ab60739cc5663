// YAML-configured experiments (`strata run <experiment.yaml>`). Results go to <output>/<experiment>/ as CSV,
// a markdown summary and PNG figures (drawn by experiments/plots/*.py with /usr/bin/python3 + matplotlib).
//
// An experiment kind registers itself (experiment_kinds.cc, one line per kind) and is written in three steps:
//   parse  - validate the YAML into a typed config; every error names file, line, field and what was
//   expected;
//            nothing is computed before the whole file is known to be good;
//   run    - compute the results from the config;
//   report - write CSV / summary.md / figures into a ResultsDir.
// make_kind() binds the three typed functions into an ExperimentKind. See README.md ("Adding an experiment
// kind").
#pragma once

#include <filesystem>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "hw/topology.h"
#include "hw/yaml_reader.h"
#include "util/interrupt.h"

namespace strata::experiments {

// What a sweep point changes in every hardware file the experiment loads through ExperimentFile::load_system
// (experiments/sweep_spec.h): values set at dot paths (hw/yaml_patch.h), then what-if scale factors
// (hw/what_if.h). `where` is the axis in the sweep section, named by errors.
struct HardwarePatch {
  struct Set {
    std::vector<std::string> path;
    YAML::Node value;
    YamlReader where;
  };
  struct Scale {
    std::string name;
    double factor = 1;
    YamlReader where;
  };
  std::vector<Set> sets;
  std::vector<Scale> scales;
};

// A file the parse step read through ExperimentFile (resolve_path, load_system): the inputs of a sweep
// point's store key. Hardware files carry the text of their effective tree (after the point's patch).
struct InputFile {
  std::string path;
  bool hardware = false;
  std::string effective_yaml;  // hardware files only
};

struct RunOptions {
  std::string output_root = "results";  // results/<experiment>/
  bool plots = true;
};

// The experiment file being parsed: its root mapping, the common fields every kind has, and path resolution
// relative to the file itself.
class ExperimentFile {
 public:
  // Reads and checks the common fields (experiment, description, kind). Throws ConfigError.
  static ExperimentFile load(const std::string& path);
  // The same for text that stands for the file at `path` (relative paths resolve from its directory).
  static ExperimentFile from_string(std::string_view text, const std::string& path);
  // One point of a sweep (experiments/sweep.h): `root` is the file's tree with the point's values written in
  // and no `sweep:` section; `hardware` is applied to every hardware file load_system reads.
  static ExperimentFile for_point(const std::string& path, YamlReader root, HardwarePatch hardware);

  const YamlReader& root() const { return root_; }
  const std::string& path() const { return path_; }
  const std::string& name() const { return name_; }  // `experiment:`, a plain name (the results folder)
  const std::string& description() const { return description_; }
  const std::string& kind() const { return kind_; }

  // Every file resolve_path and load_system were asked for, in first-use order (each once).
  const std::vector<InputFile>& inputs() const { return *inputs_; }

  // Requires the top level to hold only the common keys (experiment, description, kind, sweep) and
  // `kind_keys`.
  void expect_keys(std::initializer_list<std::string_view> kind_keys) const;
  // A path written in the file (the scalar at `field`), resolved relative to the experiment file's directory
  // (absolute paths stay as they are). Throws ConfigError naming file, line and field when it does not exist.
  std::string resolve_path(const YamlReader& field) const;
  // A model reference written in the file (models/zoo/model_ref.h): a zoo name or `transformer:...` as
  // written, a model YAML or ONNX file resolved as above, or a mapping of transformer keys ({layers: 24,
  // hidden: 2048,
  // ...}: `transformer:` with those keys in order), so that a sweep can vary one key (`model.layers`).
  std::string model_reference(const YamlReader& field) const;
  // Loads the hardware description at `field` (a path, resolved as above); errors in that file are reported
  // with this file's line and field in front. A sweep point's hardware patch is applied to the tree first.
  hw::Topology load_system(const YamlReader& field, std::optional<int> nodes = std::nullopt) const;

 private:
  ExperimentFile(std::string path, YamlReader root) : path_(std::move(path)), root_(std::move(root)) {}
  static ExperimentFile from_root(const std::string& path, YamlReader root);
  void record_input(InputFile input) const;
  std::string path_;
  YamlReader root_;
  std::string name_, description_, kind_;
  std::shared_ptr<const HardwarePatch> hardware_;  // null outside sweeps
  std::shared_ptr<std::vector<InputFile>> inputs_ = std::make_shared<std::vector<InputFile>>();
};

// The folder one run writes. Files go to a staging folder beside the destination (<output>/.<name>.partial-*)
// and commit() swaps it into place, so <output>/<name>/ always holds one complete result set: the previous
// one until the new one is complete. An uncommitted staging folder is removed by the destructor, and by an
// interrupt (SIGINT, SIGTERM: util/interrupt.h). The run holds an exclusive flock(2) on its staging folder
// for its whole life, so a staging folder nobody holds was left by a run that is gone (killed with SIGKILL,
// power loss): the constructor removes such stale `.<name>.partial-*` folders and never one a live run holds.
class ResultsDir {
 public:
  explicit ResultsDir(std::filesystem::path destination);
  ~ResultsDir();
  ResultsDir(const ResultsDir&) = delete;
  ResultsDir& operator=(const ResultsDir&) = delete;

  const std::filesystem::path& destination() const { return destination_; }
  // Where `file` is written now (inside the staging folder); hand this to plot scripts.
  std::filesystem::path staged(std::string_view file) const { return staging_ / file; }
  const std::filesystem::path& staging() const { return staging_; }
  void write(std::string_view file, std::string_view text) const;
  // Puts the staged set in place of the destination; returns the destination.
  std::filesystem::path commit();

 private:
  std::filesystem::path destination_, staging_;
  int staging_lock_ = -1;  // open descriptor of staging_ holding the flock; closed by the destructor
  std::optional<util::RemovedOnInterrupt> removed_on_interrupt_;
  bool committed_ = false;
};

// Runs experiments/plots/<script> as /usr/bin/python3 <script> <args...> (an argument vector, no shell). On
// failure warns on stderr and returns false; the caller notes the missing figures in its summary.
bool run_plot_script(const std::string& script, const std::vector<std::string>& args);
// The figures step of a report: runs the script when options.plots is set and, when it fails, says in the
// summary that the figures are missing and why.
void draw_figures(std::string& summary, const RunOptions& options, const std::string& script,
                  const std::vector<std::string>& args);

// A registered experiment kind. parse() validates the file and returns the rest of the work (run, then report
// into the folder) bound to the typed config.
struct ExperimentKind {
  std::string name;     // the YAML `kind:` value
  std::string summary;  // one line, for `strata run --help` and error messages
  std::function<std::function<void(ResultsDir&, const RunOptions&)>(const ExperimentFile&)> parse;
};

// Builds an ExperimentKind from its three typed steps.
template <class Config, class Results>
ExperimentKind make_kind(std::string name, std::string summary, Config (*parse)(const ExperimentFile&),
                         Results (*run)(const Config&),
                         void (*report)(const Config&, const Results&, ResultsDir&, const RunOptions&)) {
  return ExperimentKind{std::move(name), std::move(summary),
                        [parse, run, report](const ExperimentFile& file) {
                          auto config = std::make_shared<const Config>(parse(file));
                          return std::function<void(ResultsDir&, const RunOptions&)>(
                              [config, run, report](ResultsDir& out, const RunOptions& options) {
                                report(*config, run(*config), out, options);
                              });
                        }};
}

// Every registered kind, in registration order (experiment_kinds.cc).
const std::vector<ExperimentKind>& experiment_kinds();
const ExperimentKind* find_experiment_kind(std::string_view name);
std::string experiment_kind_names();  // "collective-sweep, p2-reproduction, ..."

// Parses the file completely, runs it, writes the results set atomically; returns the folder it wrote. Throws
// ConfigError on a bad file.
std::string run_experiment(const std::string& path, const RunOptions& options = {});
// Only the parse step (the file and every file it names); returns the experiment file. Throws ConfigError.
ExperimentFile check_experiment(const std::string& path);
// The same for text standing for the file at `path` (the experiment_yaml fuzz target).
void check_experiment_text(std::string_view text, const std::string& path);

}  // namespace strata::experiments

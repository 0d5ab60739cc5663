// The rule generator's driver (TASO's generator, src/generator/generator.cc): enumerate graphs, group them
// by fingerprint, pair and prune, confirm in double precision. The stages live in generator_*.cc.
#include "search/subst/generator.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "search/subst/generator_internal.h"

namespace strata::search::subst {
namespace generator_detail {

std::size_t peak_rss_kib() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return static_cast<std::size_t>(std::stoull(line.substr(6)));
  return 0;
}

}  // namespace generator_detail

namespace {
bool enumerable_by_name(Op op) {
  const OpInfo& info = op_info(op);
  return static_cast<int>(op) >= kNumNamedOps && info.params.empty() && info.tensor_args > 0;
}
}  // namespace

std::string extra_operator_names() {
  std::string out;
  for (const OpInfo& info : all_ops())
    if (enumerable_by_name(info.op)) out += fmt::format("{}{}", out.empty() ? "" : ", ", info.name);
  return out;
}

std::vector<OpInstance> parse_operator_set(std::string_view spec) {
  std::vector<OpInstance> out;
  auto add = [&](Op op, std::vector<std::int64_t> p = {}) {
    OpInstance inst{op, std::move(p)};
    if (std::find(out.begin(), out.end(), inst) == out.end()) out.push_back(std::move(inst));
  };
  auto add_name = [&](std::string_view n) {
    if (n == "ewadd")
      add(Op::kEwadd);
    else if (n == "ewmul")
      add(Op::kEwmul);
    else if (n == "smul")
      add(Op::kSmul);
    else if (n == "matmul")
      add(Op::kMatmul);
    else if (n == "transpose")
      add(Op::kTranspose);
    else if (n == "transpose_layout")
      add(Op::kTranspose, {0});
    else if (n == "relu")
      add(Op::kRelu);
    else if (n == "conv2d")
      add(Op::kConv2d, {1, 1, kPadSame, kActiNone});
    else if (n == "conv2d_relu")
      add(Op::kConv2d, {1, 1, kPadSame, kActiRelu});
    else if (n == "poolavg")
      add(Op::kPoolavg, {3, 3, 1, 1, kPadSame});
    else if (n == "poolmax")
      add(Op::kPoolmax, {3, 3, 1, 1, kPadSame});
    else if (n == "concat") {
      add(Op::kConcat, {0});
      add(Op::kConcat, {1});
    } else if (n == "split") {
      add(Op::kSplit0, {0});
      add(Op::kSplit0, {1});
    } else if (n == "enlarge")
      add(Op::kEnlarge, {3, 3});
    else if (n == "constants") {
      add(Op::kImatmul);
      add(Op::kIewmul);
      add(Op::kIconv, {3, 3});
      add(Op::kCpool, {3, 3});
    } else if (auto op = find_op(n); op && enumerable_by_name(*op))
      add(*op);  // any other parameterless symbol with a rule form (docs/subst.md)
    else
      return false;
    return true;
  };
  std::size_t pos = 0;
  while (pos <= spec.size()) {
    const auto comma = std::min(spec.find(',', pos), spec.size());
    const auto name = spec.substr(pos, comma - pos);
    if (name == "taso") {
      for (auto n : {"ewadd", "ewmul", "smul", "matmul", "transpose", "transpose_layout", "relu", "conv2d",
                     "conv2d_relu", "poolavg", "poolmax", "concat", "split", "enlarge", "constants"})
        add_name(n);
    } else if (!add_name(name)) {
      throw std::invalid_argument(
          fmt::format("--ops: unknown operator set entry '{}' (expected taso or a comma-separated list of "
                      "ewadd, ewmul, smul, "
                      "matmul, transpose, transpose_layout, relu, conv2d, conv2d_relu, poolavg, poolmax, "
                      "concat, split, enlarge, "
                      "constants, {})",
                      name, extra_operator_names()));
    }
    pos = comma + 1;
  }
  return out;
}

namespace {

using namespace generator_detail;

// Classes: runs of equal fingerprints in the sorted records, as [begin, end) with 2 or more graphs.
std::vector<std::pair<std::size_t, std::size_t>> fingerprint_classes(const std::vector<Record>& all,
                                                                     std::uint64_t& fingerprints) {
  std::vector<std::pair<std::size_t, std::size_t>> classes;
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i + 1;
    while (j < all.size() && all[j].fingerprint == all[i].fingerprint) ++j;
    ++fingerprints;
    if (j - i >= 2) classes.emplace_back(i, j);
    i = j;
  }
  return classes;
}

}  // namespace

GeneratorResult generate_rules(const GeneratorOptions& options) {
  if (options.max_ops < 1 || options.max_ops > kMaxOps)
    throw std::invalid_argument(fmt::format("--max-ops must be 1..{}, got {}", kMaxOps, options.max_ops));
  if (options.max_outputs < 1 || options.max_outputs > 2 * kMaxOps)
    throw std::invalid_argument(
        fmt::format("--max-outputs must be 1..{}, got {}", 2 * kMaxOps, options.max_outputs));
  if (options.ops.empty() || options.ops.size() > 62)
    throw std::invalid_argument("operator set must have 1..62 entries");
  Progress progress;
  progress.say = [&](const std::string& s) {
    if (options.progress) options.progress(s);
  };
  auto say = [&](const std::string& s) { progress.say(s); };
  auto elapsed = [&] { return progress.elapsed(); };
  GeneratorResult result;
  auto& st = result.stats;

  std::vector<Record> all = enumerate_graphs(options, progress, st.evaluations);
  st.graphs = all.size();
  const auto classes = fingerprint_classes(all, st.fingerprints);
  say(fmt::format(
      "enumerated {} graphs of up to {} operators ({} operator evaluations), {} distinct fingerprints, "
      "{} classes with 2 or more graphs ({:.1f} s)",
      st.graphs, options.max_ops, st.evaluations, st.fingerprints, classes.size(), elapsed()));

  // Candidates: star around the graph TASO's search visits first; outputs paired by value; TASO's structural
  // checks (common subgraph / supergraph).
  std::vector<Candidate> stage = pair_classes(all, classes, options, progress, st);
  std::vector<Record>().swap(all);
  say(fmt::format("{} candidate pairs (equal fingerprints), {} after common subgraph/supergraph ({:.1f} s)",
                  st.candidates, st.after_common_subgraph, elapsed()));

  prune_candidates(stage, options, st);
  say(
      fmt::format("pruning: {} after exact duplicates, {} after input renaming, {} after unrelated equations "
                  "({:.1f} s)",
                  st.after_duplicates, st.after_renaming, st.after_unrelated, elapsed()));

  // Confirmation in double precision on independent random inputs (the real relu, real average pooling).
  result.rules = confirm_candidates(stage, options);
  st.float_rejected = stage.size() - result.rules.size();
  for (std::size_t i = 0; i < result.rules.size(); ++i) {
    result.rules[i].name = fmt::format("gen{}", i + 1);
    result.rules[i].origin.clear();
  }
  say(fmt::format("{} rules confirmed in double precision ({} rejected), {:.1f} s", result.rules.size(),
                  st.float_rejected, elapsed()));
  st.seconds = elapsed();
  st.peak_rss_kib = peak_rss_kib();
  return result;
}

}  // namespace strata::search::subst
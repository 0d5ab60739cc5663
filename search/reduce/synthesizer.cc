#include "search/reduce/synthesizer.h"

#include <algorithm>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "search/reduce/canonical.h"
#include "search/reduce/semantics.h"

namespace strata::search::reduce {
namespace {

struct StateHash {
  std::size_t operator()(const ChunkState& s) const { return s.hash(); }
};

class Enumerator {
 public:
  Enumerator(const SynthesisHierarchy& h, int max_size) : max_size_(max_size) {
    for (auto& g : distinct_groupings(h))
      for (auto op : kDslCollectives) instructions_.push_back({Instruction{g.slice, g.form, op}, g.groups});
  }

  SynthesisResult run(int k) {
    SynthesisResult result;
    result.count_by_size.assign(static_cast<std::size_t>(max_size_ + 1), 0);
    Program prefix;
    dfs(ChunkState::initial(k), prefix, result);
    std::stable_sort(result.programs.begin(), result.programs.end(),
                     [](const Program& a, const Program& b) { return a.size() < b.size(); });
    for (const auto& p : result.programs) ++result.count_by_size[p.size()];
    return result;
  }

 private:
  struct Candidate {
    Instruction instruction;
    Grouping groups;
  };

  // Returns whether some extension of `prefix` reaches the goal. States already shown unable to reach the
  // goal within at least as many remaining steps are skipped (exact memo, sound pruning).
  bool dfs(const ChunkState& state, Program& prefix, SynthesisResult& result) {
    const int remaining = max_size_ - static_cast<int>(prefix.size());
    if (remaining == 0) return false;
    if (auto it = dead_.find(state); it != dead_.end() && it->second >= remaining) return false;
    ++result.prefixes_explored;
    bool found = false;
    for (const auto& c : instructions_) {
      ChunkState next = state;
      if (!next.apply(c.instruction.op, c.groups).empty()) {
        ++result.steps_rejected;
        continue;
      }
      prefix.push_back(c.instruction);
      if (next.is_final()) {  // the goal is terminal: no rule applies to it
        result.programs.push_back(prefix);
        found = true;
      } else if (dfs(next, prefix, result)) {
        found = true;
      }
      prefix.pop_back();
    }
    if (!found) {
      auto& r = dead_[state];
      r = std::max(r, remaining);
    }
    return found;
  }

  int max_size_;
  std::vector<Candidate> instructions_;
  std::unordered_map<ChunkState, int, StateHash> dead_;
};

}  // namespace

std::string_view canonicalization_name(Canonicalization c) {
  switch (c) {
    case Canonicalization::kNone:
      return "none";
    case Canonicalization::kMasterMinimal:
      return "master-minimal";
    case Canonicalization::kCommute:
      return "commute";
    case Canonicalization::kTrajectory:
      return "trajectory";
  }
  return "?";
}

std::optional<Canonicalization> parse_canonicalization(std::string_view name) {
  for (auto c : {Canonicalization::kNone, Canonicalization::kMasterMinimal, Canonicalization::kCommute,
                 Canonicalization::kTrajectory})
    if (canonicalization_name(c) == name) return c;
  return std::nullopt;
}

SynthesisResult synthesize(const SynthesisHierarchy& h, const SynthesisOptions& options) {
  if (options.max_size < 1) throw std::invalid_argument("the program size bound must be at least 1");
  SynthesisResult result;
  if (h.num_devices() == 1) {  // nothing to reduce: the empty program
    result.programs.push_back({});
    result.count_by_size.assign(static_cast<std::size_t>(options.max_size + 1), 0);
    return result;
  }
  result = Enumerator(h, options.max_size).run(h.num_devices());
  if (options.canonicalization != Canonicalization::kNone) {
    result.programs = canonicalize(result.programs, h, options.canonicalization);
    std::fill(result.count_by_size.begin(), result.count_by_size.end(), 0);
    for (const auto& p : result.programs) ++result.count_by_size[p.size()];
  }
  return result;
}

SynthesisHierarchy synthesis_hierarchy(const Placement& placement, std::span<const int> reduce_axes,
                                       std::span<const int> hw_level, std::span<const std::string> hw_names) {
  if (!hw_level.empty() && static_cast<int>(hw_level.size()) != placement.num_levels())
    throw std::invalid_argument("hw_level needs one entry per placement level");
  std::vector<SynthLevel> levels;
  int current = -1;
  for (int j = 0; j < placement.num_levels(); ++j) {
    int f = 1;
    for (int a : reduce_axes)
      f *= placement.matrix()[static_cast<std::size_t>(a)][static_cast<std::size_t>(j)];
    const int hw = hw_level.empty() ? j : hw_level[static_cast<std::size_t>(j)];
    if (f == 1) continue;
    if (hw == current) {
      levels.back().cardinality *= f;
      continue;
    }
    current = hw;
    const std::string name = hw_level.empty() || hw_names.empty()
                                 ? placement.levels()[static_cast<std::size_t>(j)].name
                                 : hw_names[static_cast<std::size_t>(hw)];
    levels.push_back(SynthLevel{name, f, hw});
  }
  return SynthesisHierarchy(std::move(levels));
}

bool lemma_admits(std::span<const int> cardinalities, const std::vector<bool>& is_reduction_level, int slice,
                  Form form) {
  const int depth = static_cast<int>(cardinalities.size()) - 1;
  auto ok = [&](int from, int to) {
    for (int l = from; l <= to; ++l)
      if (cardinalities[static_cast<std::size_t>(l)] != 1 && !is_reduction_level[static_cast<std::size_t>(l)])
        return false;
    return true;
  };
  switch (form.kind) {
    case FormKind::kInsideGroup:
      return ok(slice + 1, depth);  // Lemma B.5
    case FormKind::kParallel:
      return ok(form.level + 1, slice);  // Corollary B.4
    case FormKind::kMaster:
      return ok(form.level + 1, depth);  // Lemma B.6
  }
  return false;
}

}  // namespace strata::search::reduce

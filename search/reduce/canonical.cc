#include "search/reduce/canonical.h"

#include <functional>
#include <set>

#include "search/reduce/semantics.h"

namespace strata::search::reduce {
namespace {

// A Master step is redundant-by-construction when some device of the corresponding Parallel groups, outside
// the Master groups, still holds data: the step then reduces only part of what is there and later steps must
// redo the rest. Master is meant for the state after a Reduce, where only first devices hold anything.
bool uses_master_while_others_hold_data(const Program& p, const SynthesisHierarchy& h,
                                        const std::vector<ChunkState>& states) {
  for (std::size_t i = 0; i < p.size(); ++i) {
    if (p[i].form.kind != FormKind::kMaster) continue;
    const auto parallel = groups_of(h, p[i].slice, Form{FormKind::kParallel, p[i].form.level});
    std::vector<bool> in_master(static_cast<std::size_t>(h.num_devices()), false);
    for (const auto& g : groups_of(h, p[i].slice, p[i].form))
      for (int d : g) in_master[static_cast<std::size_t>(d)] = true;
    for (const auto& g : parallel)
      for (int d : g)
        if (!in_master[static_cast<std::size_t>(d)] && !states[i].empty(d)) return true;
  }
  return false;
}

// The smallest text among the programs reachable by swapping adjacent steps that commute: both orders are
// valid from the state before them and lead to the same state.
std::string commutation_class_key(const Program& p, const SynthesisHierarchy& h) {
  std::set<std::string> seen;
  std::string best;
  std::function<void(const Program&)> visit = [&](const Program& q) {
    const auto text = to_string(q, h);
    if (!seen.insert(text).second) return;
    if (best.empty() || text < best) best = text;
    const auto states = trace_program(q, h);
    for (std::size_t i = 0; i + 1 < q.size(); ++i) {
      Program swapped = q;
      std::swap(swapped[i], swapped[i + 1]);
      ChunkState s = states[i];
      if (!s.apply(swapped[i].op, groups_of(h, swapped[i].slice, swapped[i].form)).empty()) continue;
      if (!s.apply(swapped[i + 1].op, groups_of(h, swapped[i + 1].slice, swapped[i + 1].form)).empty())
        continue;
      if (s == states[i + 2]) visit(swapped);
    }
  };
  visit(p);
  return best;
}

}  // namespace

std::vector<Program> canonicalize(const std::vector<Program>& programs, const SynthesisHierarchy& h,
                                  Canonicalization c) {
  if (c == Canonicalization::kNone) return programs;
  std::vector<Program> out;
  std::set<std::string> seen_keys;
  for (const auto& p : programs) {
    const auto states = trace_program(p, h);
    std::string key;
    switch (c) {
      case Canonicalization::kNone:
        break;
      case Canonicalization::kMasterMinimal:
        if (uses_master_while_others_hold_data(p, h, states)) continue;
        key = to_string(p, h);
        break;
      case Canonicalization::kCommute:
        key = commutation_class_key(p, h);
        break;
      case Canonicalization::kTrajectory:
        for (const auto& s : states) key += s.to_string() + "|";
        break;
    }
    if (seen_keys.insert(key).second) out.push_back(p);
  }
  return out;
}

}  // namespace strata::search::reduce

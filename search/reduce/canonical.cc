#include "search/reduce/canonical.h"

#include <algorithm>
#include <map>
#include <set>

namespace strata::search::reduce {
namespace {

// Devices touched by an instruction.
std::vector<bool> touched(const SynthesisHierarchy& h, const Instruction& in) {
  std::vector<bool> t(static_cast<std::size_t>(h.num_devices()), false);
  for (const auto& g : groups_of(h, in.slice, in.form))
    for (int d : g) t[static_cast<std::size_t>(d)] = true;
  return t;
}

bool disjoint(const std::vector<bool>& a, const std::vector<bool>& b) {
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i] && b[i]) return false;
  return true;
}

}  // namespace

std::vector<Program> canonicalize(const std::vector<Program>& programs, const SynthesisHierarchy& h, Canonicalization c) {
  if (c == Canonicalization::kNone) return programs;
  // kCommute: the class of a program is the set of sequences reachable by swapping adjacent steps that touch
  // disjoint devices; its key is the lexicographically smallest such sequence (by instruction text).
  std::vector<Program> out;
  std::set<std::vector<std::string>> seen;
  for (const auto& p : programs) {
    std::vector<std::string> text;
    for (const auto& in : p) text.push_back(to_string(in, h));
    // Bubble to the canonical order: repeatedly swap adjacent independent steps that are out of order.
    std::vector<std::size_t> idx(p.size());
    for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
    bool changed = true;
    while (changed) {
      changed = false;
      for (std::size_t i = 0; i + 1 < idx.size(); ++i) {
        if (text[idx[i + 1]] < text[idx[i]] && disjoint(touched(h, p[idx[i]]), touched(h, p[idx[i + 1]]))) {
          std::swap(idx[i], idx[i + 1]);
          changed = true;
        }
      }
    }
    std::vector<std::string> key;
    for (auto i : idx) key.push_back(text[i]);
    if (seen.insert(key).second) out.push_back(p);
  }
  return out;
}

}  // namespace strata::search::reduce

#include "search/reduce/lowering.h"

#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "hw/units.h"
#include "search/reduce/semantics.h"

namespace strata::search::reduce {

ReductionLayout::ReductionLayout(const Placement& placement, std::span<const int> reduce_axes) {
  std::vector<bool> is_reduce(static_cast<std::size_t>(placement.num_axes()), false);
  for (int a : reduce_axes) is_reduce.at(static_cast<std::size_t>(a)) = true;
  // Synthesis device ids are mixed-radix numbers over hardware levels (top first) of the level's reduction
  // digits (axis 0 most significant) -- the same significance order as the physical layout, so walking the
  // digits in that order enumerates synthesis ids 0, 1, 2, ...
  struct Digit {
    int radix, weight;
  };
  std::vector<Digit> digits;  // most significant first
  for (int j = 0; j < placement.num_levels(); ++j)
    for (int i = 0; i < placement.num_axes(); ++i)
      if (is_reduce[static_cast<std::size_t>(i)] &&
          placement.matrix()[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] > 1)
        digits.push_back({placement.matrix()[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)],
                          placement.digit_weight(i, j)});
  int k = 1;
  for (const auto& d : digits) k *= d.radix;
  offset_.assign(static_cast<std::size_t>(k), 0);
  for (int s = 0; s < k; ++s) {
    int rest = s, off = 0;
    for (std::size_t i = digits.size(); i-- > 0;) {
      off += (rest % digits[i].radix) * digits[i].weight;
      rest /= digits[i].radix;
    }
    offset_[static_cast<std::size_t>(s)] = off;
  }
  std::vector<bool> in_group(static_cast<std::size_t>(placement.num_devices()), false);
  for (int d = 0; d < placement.num_devices(); ++d) {
    if (in_group[static_cast<std::size_t>(d)]) continue;
    base_.push_back(d);  // the smallest unvisited device has all reduction digits 0
    for (int off : offset_) in_group.at(static_cast<std::size_t>(d + off)) = true;
  }
}

LoweredProgram lower(const Program& program, const SynthesisHierarchy& h, const ReductionLayout& layout,
                     double bytes_per_device) {
  if (h.num_devices() != layout.group_size())
    throw std::invalid_argument(fmt::format("synthesis hierarchy has {} devices but reduction groups have {}",
                                            h.num_devices(), layout.group_size()));
  const auto states = trace_program(program, h);
  const double chunk = bytes_per_device / h.num_devices();
  LoweredProgram out;
  for (std::size_t i = 0; i < program.size(); ++i) {
    const auto& in = program[i];
    const auto& before = states[i];
    LoweredStep step;
    const Grouping groups = groups_of(h, in.slice, in.form);
    for (int inst = 0; inst < layout.instances(); ++inst) {
      for (const auto& g : groups) {
        LoweredCall call{in.op, {}, 0};
        for (int s : g) call.group.push_back(layout.device(inst, s));
        const double held = before.rows_held(g.front()) * chunk;
        call.bytes = in.op == sim::CollectiveOp::kAllGather ? held * static_cast<double>(g.size()) : held;
        step.calls.push_back(std::move(call));
      }
    }
    out.steps.push_back(std::move(step));
  }
  return out;
}

std::string to_string(const LoweredProgram& lowered, std::span<const hw::Level> levels, int max_groups) {
  std::string s;
  for (std::size_t i = 0; i < lowered.steps.size(); ++i) {
    const auto& calls = lowered.steps[i].calls;
    s += fmt::format("  step {}: {} x{} of {}:", i + 1, dsl_name(calls.front().op), calls.size(),
                     units::format_bytes(calls.front().bytes));
    for (std::size_t c = 0; c < calls.size() && static_cast<int>(c) < max_groups; ++c) {
      std::vector<std::string> names;
      for (int d : calls[c].group) names.push_back(device_name(levels, d));
      s += fmt::format(" {{{}}}", fmt::join(names, ","));
    }
    if (static_cast<int>(calls.size()) > max_groups) s += " ...";
    s += "\n";
  }
  return s;
}

}  // namespace strata::search::reduce

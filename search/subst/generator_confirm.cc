// Confirmation of candidate rules in double precision through the IR's real kernels (generator_internal.h).
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>
#include <tbb/parallel_for.h>

#include "models/exec/executor.h"
#include "models/ir/op_def.h"
#include "search/subst/generator_internal.h"
#include "search/subst/split_history.h"

namespace strata::search::subst::generator_detail {
namespace {

using models::Shape;

// Double-precision evaluation of an encoded graph through the IR's real kernels (the confirmation step).
struct RealTensor {
  Shape shape;
  std::vector<double> data;
  TensorMeta meta;
};

std::vector<RealTensor> replay_real(const Enc& g, const std::vector<OpInstance>& ops,
                                    const std::vector<RealTensor>& inputs) {
  std::vector<RealTensor> ts = inputs;
  for (int k = 0; k < g.n; ++k) {
    const auto& e = g.ops[static_cast<std::size_t>(k)];
    const auto& inst = ops[e.tmpl];
    std::vector<Shape> shapes;
    for (int a = 0; a < e.nin; ++a) shapes.push_back(ts[e.in[static_cast<std::size_t>(a)]].shape);
    std::int64_t split_at = 0;
    if (is_split(inst.op)) split_at = split_point(ts[e.in[0]].meta, static_cast<std::size_t>(inst.params[0]));
    const auto ir = to_ir(inst, shapes, split_at, taso_generator_sizing(inst.op));
    if (!ir) throw std::logic_error("generator: real replay failed");
    auto applied = apply_ir(*ir, shapes, "generator");
    if (!applied) throw std::logic_error("generator: real replay failed: " + applied.diagnostic());
    const models::OpDef& def = *applied.value().def;
    const models::Attrs& attrs = applied.value().attrs;
    const auto& in = applied.value().inputs;
    const auto& out_types = applied.value().outputs;
    std::array<const TensorMeta*, 2> am{};
    std::array<const Shape*, 2> as{};
    for (int a = 0; a < e.nin; ++a) {
      am[static_cast<std::size_t>(a)] = &ts[e.in[static_cast<std::size_t>(a)]].meta;
      as[static_cast<std::size_t>(a)] = &ts[e.in[static_cast<std::size_t>(a)]].shape;
    }
    std::array<TensorMeta, 2> metas;
    const auto traces = split_axis_traces(def, in, out_types.at(0), attrs, out_types.at(0).shape.size());
    if (!propagate_meta(inst, traces, std::span(am.data(), e.nin), std::span(as.data(), e.nin), metas))
      throw std::logic_error("generator: real replay failed (metadata)");
    std::vector<RealTensor> outs(out_types.size());
    std::vector<models::In<double>> ins;
    std::vector<models::Out<double>> os;
    for (int a = 0; a < e.nin; ++a) {
      const auto& t = ts[e.in[static_cast<std::size_t>(a)]];
      ins.push_back({t.data.data(), &t.shape, static_cast<std::int64_t>(t.data.size())});
    }
    for (std::size_t o = 0; o < outs.size(); ++o) {
      outs[o].shape = out_types[o].shape;
      outs[o].data.assign(static_cast<std::size_t>(out_types[o].numel()), 0.0);
    }
    for (auto& o : outs) os.push_back({o.data.data(), &o.shape, static_cast<std::int64_t>(o.data.size())});
    if (!def.kernel.real)
      throw std::logic_error(fmt::format("generator: IR op '{}' has no real kernel", def.name));
    def.kernel.real(models::KernelCall<double>{ins, os, attrs});
    for (std::size_t o = 0; o < outs.size(); ++o) {
      outs[o].meta = metas[o];
      ts.push_back(std::move(outs[o]));
    }
  }
  return ts;
}

std::vector<RealTensor> real_inputs(std::uint64_t seed) {
  std::vector<RealTensor> in;
  for (int i = 1; i <= kInputs; ++i) {
    RealTensor t;
    t.shape = *taso_generator_input_shape(i);
    t.data = models::random_values<double>(models::numel(t.shape), seed, fmt::format("input_{}", i));
    in.push_back(std::move(t));
  }
  return in;
}

bool confirm_in_double(const Candidate& c, const std::vector<OpInstance>& ops,
                       const std::vector<RealTensor>& inputs, double tolerance) {
  const auto a = replay_real(unpack(c.rep, ops), ops, inputs);
  const auto b = replay_real(unpack(c.member, ops), ops, inputs);
  for (auto [ta, tb] : c.outputs) {
    const auto& x = a[static_cast<std::size_t>(ta)].data;
    const auto& y = b[static_cast<std::size_t>(tb)].data;
    if (x.size() != y.size()) return false;
    for (std::size_t k = 0; k < x.size(); ++k)
      if (!(std::fabs(x[k] - y[k]) <= tolerance * std::max({1.0, std::fabs(x[k]), std::fabs(y[k])})))
        return false;
  }
  return true;
}

}  // namespace

std::vector<Rule> confirm_candidates(std::vector<Candidate>& stage, const GeneratorOptions& options) {
  // Independent random inputs (the real relu, real average pooling).
  const auto reals = real_inputs(options.seed + 7);
  std::vector<char> keep(stage.size(), 0);
  tbb::parallel_for(std::size_t{0}, stage.size(), [&](std::size_t i) {
    keep[i] = confirm_in_double(stage[i], options.ops, reals, options.tolerance) ? 1 : 0;
  });
  std::vector<Rule> rules;
  for (std::size_t i = 0; i < stage.size(); ++i)
    if (keep[i]) rules.push_back(std::move(stage[i].rule));
  return rules;
}

}  // namespace strata::search::subst::generator_detail

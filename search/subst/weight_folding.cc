#include "search/subst/weight_folding.h"

#include <memory>

#include "models/exec/executor.h"

namespace strata::search::subst {
namespace {

using models::Graph;
using models::Node;
using models::NodeId;
using models::ValueId;
using models::ValueKind;

bool is_weight_source(const models::Value& v) {
  return v.producer < 0 && (v.kind == ValueKind::kParam || v.kind == ValueKind::kConstant);
}

bool all_inputs(const Node& n, const std::vector<char>& flag) {
  for (ValueId v : n.inputs)
    if (!flag[static_cast<std::size_t>(v)]) return false;
  return true;
}

// Data of the weight-only values (indexed by value id; empty where not computable): the weight-only nodes
// alone on the reference executor, when some value to be folded has data in every source it depends on.
std::vector<std::vector<double>> folded_data(const Graph& g, const std::vector<char>& weight_only,
                                             const std::vector<char>& with_data) {
  Graph w(g.name());
  std::vector<ValueId> map(g.values().size(), models::kNoValue);
  for (ValueId v = 0; v < static_cast<ValueId>(g.values().size()); ++v)
    if (is_weight_source(g.value(v)))
      map[static_cast<std::size_t>(v)] =
          w.add_source(g.value(v).name, g.value(v).type, g.value(v).kind, g.value(v).data);
  for (const Node& n : g.nodes()) {
    if (n.outputs.empty() || !weight_only[static_cast<std::size_t>(n.outputs[0])]) continue;
    std::vector<ValueId> ins;
    for (ValueId v : n.inputs) ins.push_back(map[static_cast<std::size_t>(v)]);
    const auto outs = w.add_node(n.op->name, std::move(ins), n.attrs, n.name);
    for (std::size_t k = 0; k < outs.size(); ++k) map[static_cast<std::size_t>(n.outputs[k])] = outs[k];
  }
  models::ExecOptions eo;
  eo.randomize_missing = true;  // sources without data only feed values whose data is not used
  const auto values = models::execute<double>(w, {}, eo);
  std::vector<std::vector<double>> out(g.values().size());
  for (std::size_t v = 0; v < out.size(); ++v)
    if (with_data[v] && map[v] != models::kNoValue) out[v] = values[static_cast<std::size_t>(map[v])];
  return out;
}

}  // namespace

std::vector<char> weight_only_values(const Graph& g) {
  std::vector<char> w(g.values().size(), 0);
  for (ValueId v = 0; v < static_cast<ValueId>(g.values().size()); ++v)
    w[static_cast<std::size_t>(v)] = is_weight_source(g.value(v)) ? 1 : 0;
  for (const Node& n : g.nodes())
    if (all_inputs(n, w))
      for (ValueId o : n.outputs) w[static_cast<std::size_t>(o)] = 1;
  return w;
}

Graph fold_weight_only(const Graph& g) {
  const auto n_values = g.values().size();
  const auto weight_only = weight_only_values(g);
  auto folded_node = [&](const Node& n) {
    return !n.outputs.empty() && weight_only[static_cast<std::size_t>(n.outputs[0])];
  };
  // Which weight-only values are still read (by per-step nodes or as outputs), whether each is computed from
  // parameters (else constants only) and whether all its sources carry data.
  std::vector<char> read(n_values, 0), from_param(n_values, 0), with_data(n_values, 0);
  for (ValueId v = 0; v < static_cast<ValueId>(n_values); ++v) {
    const auto& val = g.value(v);
    from_param[static_cast<std::size_t>(v)] = val.producer < 0 && val.kind == ValueKind::kParam;
    with_data[static_cast<std::size_t>(v)] = val.producer < 0 && val.data != nullptr;
  }
  bool any_folded_read = false;
  for (const Node& n : g.nodes()) {
    if (folded_node(n)) {
      bool param = false, data = true;
      for (ValueId v : n.inputs) {
        param = param || from_param[static_cast<std::size_t>(v)];
        data = data && with_data[static_cast<std::size_t>(v)];
      }
      for (ValueId o : n.outputs) {
        from_param[static_cast<std::size_t>(o)] = param;
        with_data[static_cast<std::size_t>(o)] = data;
      }
      continue;
    }
    for (ValueId v : n.inputs) read[static_cast<std::size_t>(v)] = 1;
  }
  for (ValueId v : g.outputs()) read[static_cast<std::size_t>(v)] = 1;
  for (ValueId v = 0; v < static_cast<ValueId>(n_values); ++v) {
    const auto i = static_cast<std::size_t>(v);
    any_folded_read =
        any_folded_read || (read[i] && weight_only[i] && g.value(v).producer >= 0 && with_data[i]);
  }
  const auto data =
      any_folded_read ? folded_data(g, weight_only, with_data) : std::vector<std::vector<double>>(n_values);

  Graph out(g.name());
  std::vector<ValueId> map(n_values, models::kNoValue);
  for (ValueId v = 0; v < static_cast<ValueId>(n_values); ++v) {
    const auto& val = g.value(v);
    const auto i = static_cast<std::size_t>(v);
    if (val.producer < 0 && (!weight_only[i] || read[i]))
      map[i] = out.add_source(val.name, val.type, val.kind, val.data);
  }
  auto source_of = [&](ValueId v) {
    const auto i = static_cast<std::size_t>(v);
    if (map[i] == models::kNoValue) {  // a weight-only value computed by a folded node
      const auto& val = g.value(v);
      std::shared_ptr<const std::vector<double>> d;
      if (with_data[i]) d = std::make_shared<const std::vector<double>>(data[i]);
      map[i] = out.add_source(val.name, val.type, from_param[i] ? ValueKind::kParam : ValueKind::kConstant,
                              std::move(d));
    }
    return map[i];
  };
  for (const Node& n : g.nodes()) {
    if (folded_node(n)) continue;
    std::vector<ValueId> ins;
    for (ValueId v : n.inputs) ins.push_back(source_of(v));
    const auto kind = n.outputs.empty() ? ValueKind::kActivation : g.value(n.outputs[0]).kind;
    const auto outs = out.add_node(n.op->name, std::move(ins), n.attrs, n.name, kind);
    for (std::size_t k = 0; k < outs.size(); ++k) {
      map[static_cast<std::size_t>(n.outputs[k])] = outs[k];
      out.set_value_name(outs[k], g.value(n.outputs[k]).name);
    }
  }
  for (ValueId v : g.outputs()) out.mark_output(source_of(v));
  return out;
}

}  // namespace strata::search::subst

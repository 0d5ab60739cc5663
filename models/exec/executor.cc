#include "models/exec/executor.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "util/hash.h"

namespace strata::models {
namespace {

using util::mix64;

}  // namespace

template <class T>
std::vector<T> random_values(std::int64_t n, std::uint64_t seed, std::string_view name, bool integer,
                             std::int64_t index_bound) {
  std::vector<T> out(static_cast<std::size_t>(n));
  std::uint64_t state = mix64(seed ^ util::fnv1a(name));
  for (auto& v : out) {
    state = mix64(state);
    if (integer) {
      v = Num<T>::from_int(static_cast<std::int64_t>(
          state % static_cast<std::uint64_t>(std::max<std::int64_t>(index_bound, 1))));
    } else if constexpr (std::is_same_v<T, double>) {
      v = static_cast<double>(state >> 11) / 9007199254740992.0 * 2.0 - 1.0;
    } else {
      v = ModP::raw(ModP::reduce(state >> 2));
    }
  }
  return out;
}
template std::vector<double> random_values(std::int64_t, std::uint64_t, std::string_view, bool, std::int64_t);
template std::vector<ModP> random_values(std::int64_t, std::uint64_t, std::string_view, bool, std::int64_t);

template <class T>
std::vector<std::vector<T>> execute(const Graph& g, const Feeds<T>& feeds, const ExecOptions& options) {
  std::vector<std::vector<T>> data(g.values().size());
  for (const auto& [id, values] : feeds) {
    if (id < 0 || static_cast<std::size_t>(id) >= data.size())
      throw GraphError(fmt::format("feed for unknown value id {}", id));
    const auto& v = g.value(id);
    if (static_cast<std::int64_t>(values.size()) != v.type.numel())
      throw GraphError(fmt::format("feed for '{}' has {} elements, its type {} needs {}", v.name,
                                   values.size(), type_str(v.type), v.type.numel()));
    data[static_cast<std::size_t>(id)] = values;
  }
  for (std::size_t i = 0; i < data.size(); ++i) {
    const auto& v = g.values()[i];
    if (v.producer >= 0 || feeds.contains(static_cast<ValueId>(i))) continue;
    if (v.data) {
      auto& d = data[i];
      d.reserve(v.data->size());
      for (double x : *v.data) d.push_back(Num<T>::from_double(x));
    } else if (options.randomize_missing) {
      data[i] = random_values<T>(v.type.numel(), options.seed, v.name, !is_float(v.type.dtype),
                                 options.random_index_bound);
    } else {
      throw GraphError(
          fmt::format("no value fed for {} '{}' ({})", value_kind_name(v.kind), v.name, type_str(v.type)));
    }
  }
  // Last consumer of each value (-1: none, or a graph output, which is kept).
  std::vector<std::int64_t> last_use(data.size(), -1);
  if (!options.keep_intermediates) {
    for (std::size_t n = 0; n < g.nodes().size(); ++n)
      for (auto v : g.nodes()[n].inputs) last_use[static_cast<std::size_t>(v)] = static_cast<std::int64_t>(n);
    for (auto v : g.outputs()) last_use[static_cast<std::size_t>(v)] = -1;
  }
  std::vector<In<T>> ins;
  std::vector<Out<T>> outs;
  for (std::size_t n = 0; n < g.nodes().size(); ++n) {
    const Node& node = g.nodes()[n];
    ins.clear();
    outs.clear();
    for (auto v : node.inputs) {
      const auto& d = data[static_cast<std::size_t>(v)];
      ins.push_back({d.data(), &g.type(v).shape, static_cast<std::int64_t>(d.size())});
    }
    for (auto v : node.outputs) {
      auto& d = data[static_cast<std::size_t>(v)];
      d.assign(static_cast<std::size_t>(g.type(v).numel()), T{});
      outs.push_back({d.data(), &g.type(v).shape, static_cast<std::int64_t>(d.size())});
    }
    const KernelCall<T> call{ins, outs, node.attrs};
    if constexpr (std::is_same_v<T, double>)
      node.op->kernel.real(call);
    else
      node.op->kernel.modp(call);
    for (auto v : node.inputs)
      if (last_use[static_cast<std::size_t>(v)] == static_cast<std::int64_t>(n))
        std::vector<T>().swap(data[static_cast<std::size_t>(v)]);
  }
  return data;
}
template std::vector<std::vector<double>> execute(const Graph&, const Feeds<double>&, const ExecOptions&);
template std::vector<std::vector<ModP>> execute(const Graph&, const Feeds<ModP>&, const ExecOptions&);

std::uint64_t fingerprint(const Graph& g, std::uint64_t seed) {
  ExecOptions opt;
  opt.seed = seed;
  const auto data = execute<ModP>(g, {}, opt);
  std::vector<std::uint64_t> hashes;
  for (auto out : g.outputs()) {
    std::uint64_t h = mix64(static_cast<std::uint64_t>(g.type(out).rank()));
    for (auto d : g.type(out).shape) h = mix64(h ^ static_cast<std::uint64_t>(d));
    for (auto x : data[static_cast<std::size_t>(out)]) h = mix64(h ^ x.v);
    hashes.push_back(h);
  }
  std::sort(hashes.begin(), hashes.end());
  std::uint64_t h = 0x5157A7A;
  for (auto x : hashes) h = mix64(h ^ x);
  return h;
}

}  // namespace strata::models

#include "models/exec/executor.h"

#include <algorithm>
#include <functional>
#include <span>

#include <fmt/format.h>

#include "util/hash.h"

namespace strata::models {

using util::mix64;

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

namespace {

// One run of a graph. Sources are materialized when a node first reads them and, unless intermediates are
// kept, every value is released after the last node that reads it, so a run holds its live set (the values
// between their first and last use) rather than every weight of the model at once.
template <class T>
class Run {
 public:
  Run(const Graph& g, const Feeds<T>& feeds, const ExecOptions& options)
      : g_(g),
        feeds_(feeds),
        options_(options),
        data_(g.values().size()),
        ready_(g.values().size(), 0),
        is_output_(g.values().size(), 0) {
    check_sources();
    for (auto v : g.outputs()) is_output_[static_cast<std::size_t>(v)] = 1;
    if (!options.keep_intermediates) plan_releases();
  }

  std::vector<std::vector<T>> run(ExecStats& stats) {
    for (std::size_t n = 0; n < g_.nodes().size(); ++n) run_node(n);
    // Values no node reads: graph outputs that are sources, and (when every value is returned) unused
    // sources.
    for (std::size_t v = 0; v < data_.size(); ++v)
      if (g_.values()[v].producer < 0 && (options_.keep_intermediates || is_output_[v]))
        materialize(static_cast<ValueId>(v));
    stats.peak_live_bytes = peak_bytes_;
    return std::move(data_);
  }

 private:
  // Feeds and unfed sources are checked before anything runs, so a bad call fails without partial work.
  void check_sources() const {
    for (const auto& [id, values] : feeds_) {
      if (id < 0 || static_cast<std::size_t>(id) >= data_.size())
        throw GraphError(fmt::format("feed for unknown value id {}", id));
      const auto& v = g_.value(id);
      if (static_cast<std::int64_t>(values.size()) != v.type.numel())
        throw GraphError(fmt::format("feed for '{}' has {} elements, its type {} needs {}", v.name,
                                     values.size(), type_str(v.type), v.type.numel()));
    }
    if (options_.randomize_missing) return;
    for (std::size_t i = 0; i < data_.size(); ++i) {
      const auto& v = g_.values()[i];
      if (v.producer < 0 && !v.data && !feeds_.contains(static_cast<ValueId>(i)))
        throw GraphError(
            fmt::format("no value fed for {} '{}' ({})", value_kind_name(v.kind), v.name, type_str(v.type)));
    }
  }

  // release_after_[v]: the node after which v is dead (its last reader, or its producer when nothing reads
  // it); -1 for values kept to the end (graph outputs, sources nothing reads).
  void plan_releases() {
    release_after_.assign(data_.size(), -1);
    for (std::size_t n = 0; n < g_.nodes().size(); ++n) {
      const Node& node = g_.nodes()[n];
      for (auto v : node.inputs) release_after_[static_cast<std::size_t>(v)] = static_cast<std::int64_t>(n);
      for (auto v : node.outputs) release_after_[static_cast<std::size_t>(v)] = static_cast<std::int64_t>(n);
    }
    for (std::size_t v = 0; v < data_.size(); ++v)
      if (is_output_[v]) release_after_[v] = -1;
  }

  void materialize(ValueId id) {
    const auto i = static_cast<std::size_t>(id);
    if (ready_[i]) return;
    const auto& v = g_.value(id);
    auto& d = data_[i];
    if (auto it = feeds_.find(id); it != feeds_.end()) {
      d = it->second;
    } else if (v.data) {
      d.reserve(v.data->size());
      for (double x : *v.data) d.push_back(Num<T>::from_double(x));
    } else {  // check_sources() made sure randomizing is allowed
      d = random_values<T>(v.type.numel(), options_.seed, v.name, !is_float(v.type.dtype),
                           options_.random_index_bound);
    }
    hold(i);
  }

  void hold(std::size_t i) {
    ready_[i] = 1;
    live_bytes_ += static_cast<std::int64_t>(data_[i].size() * sizeof(T));
    peak_bytes_ = std::max(peak_bytes_, live_bytes_);
  }

  void release_dead(std::span<const ValueId> values, std::size_t n) {
    for (auto v : values) {
      const auto i = static_cast<std::size_t>(v);
      if (!ready_[i] || release_after_[i] != static_cast<std::int64_t>(n)) continue;
      live_bytes_ -= static_cast<std::int64_t>(data_[i].size() * sizeof(T));
      std::vector<T>().swap(data_[i]);
      ready_[i] = 0;
    }
  }

  void run_node(std::size_t n) {
    const Node& node = g_.nodes()[n];
    ins_.clear();
    outs_.clear();
    for (auto v : node.inputs) materialize(v);
    for (auto v : node.inputs) {
      const auto& d = data_[static_cast<std::size_t>(v)];
      ins_.push_back({d.data(), &g_.type(v).shape, static_cast<std::int64_t>(d.size())});
    }
    for (auto v : node.outputs) {
      const auto i = static_cast<std::size_t>(v);
      data_[i].assign(static_cast<std::size_t>(g_.type(v).numel()), T{});
      hold(i);
      outs_.push_back({data_[i].data(), &g_.type(v).shape, static_cast<std::int64_t>(data_[i].size())});
    }
    const KernelCall<T> call{ins_, outs_, node.attrs};
    if constexpr (std::is_same_v<T, double>)
      node.op->kernel.real(call);
    else
      node.op->kernel.modp(call);
    if (options_.keep_intermediates) return;
    release_dead(node.inputs, n);
    release_dead(node.outputs, n);
  }

  const Graph& g_;
  const Feeds<T>& feeds_;
  const ExecOptions& options_;
  std::vector<std::vector<T>> data_;
  std::vector<char> ready_;                  // by value id: data_ holds the value now
  std::vector<char> is_output_;              // by value id
  std::vector<std::int64_t> release_after_;  // by value id (only when intermediates are released)
  std::int64_t live_bytes_ = 0, peak_bytes_ = 0;
  std::vector<In<T>> ins_;
  std::vector<Out<T>> outs_;
};

}  // namespace

template <class T>
std::vector<std::vector<T>> execute(const Graph& g, const Feeds<T>& feeds, const ExecOptions& options,
                                    ExecStats& stats) {
  return Run<T>(g, feeds, options).run(stats);
}
template std::vector<std::vector<double>> execute(const Graph&, const Feeds<double>&, const ExecOptions&,
                                                  ExecStats&);
template std::vector<std::vector<ModP>> execute(const Graph&, const Feeds<ModP>&, const ExecOptions&,
                                                ExecStats&);

template <class T>
std::vector<std::vector<T>> execute(const Graph& g, const Feeds<T>& feeds, const ExecOptions& options) {
  ExecStats stats;
  return execute(g, feeds, options, stats);
}
template std::vector<std::vector<double>> execute(const Graph&, const Feeds<double>&, const ExecOptions&);
template std::vector<std::vector<ModP>> execute(const Graph&, const Feeds<ModP>&, const ExecOptions&);

std::uint64_t fingerprint(const Graph& g, std::uint64_t seed) {
  ExecOptions opt;
  opt.seed = seed;
  opt.keep_intermediates = false;  // only the outputs are hashed
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

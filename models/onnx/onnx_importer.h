// The ONNX importer's state and per-node helpers (internal to models/onnx). import_model walks the graph's
// nodes in order and calls the handler registered for each op type (onnx_import_ops.cc); handlers read the
// current node through Importer and report malformed or unsupported nodes by node name, op type and
// attribute.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <onnx/onnx_pb.h>

#include "models/onnx/onnx.h"
#include "models/onnx/onnx_proto.h"

namespace strata::models::onnx_detail {

struct Importer;
using Handler = std::function<void(Importer&)>;
// ONNX op type -> handler, for the default domain (onnx_import_ops.cc).
const std::map<std::string, Handler>& handlers();
// A node of the ai.strata domain: the operator table entry by name, attributes verbatim.
void import_strata(Importer& im);

struct Importer {
  std::string source;
  const OnnxImportOptions& options;
  Graph g;
  int opset = 1;
  std::map<std::string, ValueId> values;
  const ::onnx::NodeProto* node = nullptr;
  int emitted = 0;
  bool fuse_relu = false;  // the next node is the exporter's Relu of this node's fused activation
  // Transposes the exporter wrote for matmul's trans_a/trans_b: folded back into the matmul that reads them.
  std::map<std::string, ValueId> pending_transpose;

  std::string where() const {
    return fmt::format("{}: node '{}' ({})", source, node->name(), node->op_type());
  }
  [[noreturn]] void unsupported(const std::string& msg) const { throw OnnxUnsupported(where() + ": " + msg); }
  [[noreturn]] void malformed(const std::string& msg) const { throw OnnxError(where() + ": " + msg); }

  int num_inputs() const { return node->input_size(); }
  bool has_in(int i) const { return i < node->input_size() && !node->input(i).empty(); }
  ValueId in(int i) {
    if (!has_in(i)) malformed(fmt::format("input {} is missing", i));
    if (auto p = pending_transpose.find(node->input(i)); p != pending_transpose.end()) {
      // Read by something other than a matmul: materialize it.
      const auto& src = p->second;
      Ints perm;
      const int r = g.type(src).rank();
      for (int k = 0; k < r; ++k) perm.push_back(k);
      std::swap(perm[static_cast<std::size_t>(r - 1)], perm[static_cast<std::size_t>(r - 2)]);
      const auto t = g.add_node("transpose", {src}, {{"perm", perm}}, node->input(i))[0];
      values[node->input(i)] = t;
      pending_transpose.erase(p);
    }
    auto it = values.find(node->input(i));
    if (it == values.end())
      malformed(fmt::format("input '{}' is not produced by an earlier node", node->input(i)));
    return it->second;
  }
  Shape shape(int i) { return g.type(in(i)).shape; }
  std::vector<std::int64_t> const_ints(int i, std::string_view what) {
    const auto& v = g.value(in(i));
    if (!v.data) unsupported(fmt::format("{} (input {}) must be a constant", what, i));
    std::vector<std::int64_t> out;
    for (double x : *v.data) {
      // Values travel as doubles; integers beyond 2^53 are not exact and out-of-range ones must not wrap.
      if (!(std::abs(x) <= 9007199254740992.0))
        malformed(
            fmt::format("{} (input {}) holds {}, expected an integer of magnitude <= 2^53", what, i, x));
      out.push_back(static_cast<std::int64_t>(std::llround(x)));
    }
    return out;
  }
  const ::onnx::AttributeProto* attr(std::string_view name) const {
    for (const auto& a : node->attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  std::int64_t attr_i(std::string_view name, std::int64_t def) const {
    const auto* a = attr(name);
    return a ? a->i() : def;
  }
  // A float attribute (Gemm's alpha and beta, normalization epsilons): NaN or infinity is malformed (a NaN
  // alpha made every output NaN, and the equality check of `strata optimize` then compared NaN with NaN).
  double attr_f(std::string_view name, double def) const {
    const auto* a = attr(name);
    if (a && !std::isfinite(a->f()))
      malformed(fmt::format("attribute '{}' is {}; expected a finite number", name, a->f()));
    return a ? a->f() : def;
  }
  std::string attr_s(std::string_view name, std::string def) const {
    const auto* a = attr(name);
    return a ? a->s() : def;
  }
  std::optional<Ints> attr_ints(std::string_view name) const {
    const auto* a = attr(name);
    if (!a) return std::nullopt;
    return Ints(a->ints().begin(), a->ints().end());
  }
  void allow_attrs(std::initializer_list<std::string_view> allowed) const {
    for (const auto& a : node->attribute()) {
      bool ok = false;
      for (auto n : allowed) ok = ok || a.name() == n;
      if (!ok) {
        std::string list;
        for (auto n : allowed) list += (list.empty() ? "" : ", ") + std::string(n);
        unsupported(fmt::format("attribute '{}' is not supported (supported: {})", a.name(),
                                list.empty() ? "none" : list));
      }
    }
  }
  void require_outputs(int n) const {
    for (int i = n; i < node->output_size(); ++i)
      if (!node->output(i).empty())
        unsupported(fmt::format("output {} ('{}') is not supported; only the first {} output(s)", i,
                                node->output(i), n));
  }
  ValueId add(std::string_view op, std::vector<ValueId> inputs, Attrs attrs = {}) {
    return add_multi(op, std::move(inputs), std::move(attrs))[0];
  }
  std::vector<ValueId> add_multi(std::string_view op, std::vector<ValueId> inputs, Attrs attrs = {}) {
    const std::string base = node->name().empty() ? node->op_type() + std::to_string(emitted) : node->name();
    try {
      return g.add_node(op, std::move(inputs), std::move(attrs),
                        emitted++ == 0 ? base : fmt::format("{}/{}", base, emitted));
    } catch (const GraphError& e) {
      malformed(e.what());
    }
  }
  ValueId scalar(double v, DType dt) {
    return g.add_constant(fmt::format("{}/const{}", node->name(), g.values().size()), {{}, dt}, {v});
  }
  void bind(int out, ValueId v) {
    if (out >= node->output_size() || node->output(out).empty()) return;
    values[node->output(out)] = v;
    g.set_value_name(v, node->output(out));
  }

  // An attribute of `count` integers, each >= `min` (strides, dilations, kernel_shape); `def` when absent.
  Ints attr_ints_checked(std::string_view name, std::size_t count, std::int64_t min, Ints def) const {
    const auto v = attr_ints(name);
    if (!v) return def;
    const bool ok = v->size() == count && std::all_of(v->begin(), v->end(), [&](auto x) { return x >= min; });
    if (!ok)
      malformed(fmt::format("attribute '{}' is {}; expected {} integers >= {} (2-D)", name, shape_str(*v),
                            count, min));
    return *v;
  }
  // An axis attribute normalized into [0, rank) (or [0, rank] with `allow_end`).
  std::int64_t axis_in(std::string_view name, std::int64_t axis, std::int64_t rank,
                       bool allow_end = false) const {
    const std::int64_t hi = allow_end ? rank : rank - 1;
    if (axis < -rank || axis > hi)
      malformed(fmt::format("{} {} is out of range for input 0 of rank {} (expected {} to {})", name, axis,
                            rank, -rank, hi));
    return axis < 0 ? axis + rank : axis;
  }
  // Input i's rank must be `rank` before its dimensions are read.
  void require_rank(int input, int rank, std::string_view what) {
    const auto r = shape(input).size();
    if (static_cast<int>(r) != rank)
      malformed(fmt::format("input {} ({}) has rank {}; expected rank {}", input, what, r, rank));
  }
};

}  // namespace strata::models::onnx_detail

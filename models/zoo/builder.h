// Helpers for writing models as graphs: layers (conv+bn+relu, linear, attention pieces) that create their
// parameters with hierarchical names ("layer1.0.conv1.weight").
#pragma once

#include <string>
#include <vector>

#include "models/ir/graph.h"

namespace strata::models::zoo {

struct Conv {
  std::int64_t out = 0;
  std::int64_t kh = 1, kw = 1;
  std::int64_t stride = 1;
  std::int64_t pad_h = -1, pad_w = -1;  // -1: "same" ((k - 1) / 2)
  std::int64_t groups = 1;
  bool bias = false;
  bool relu = false;
};

class NetBuilder {
 public:
  NetBuilder(Graph& g, DType dtype) : g_(g), dtype_(dtype) {}

  Graph& graph() { return g_; }
  DType dtype() const { return dtype_; }
  const Shape& shape(ValueId v) const { return g_.type(v).shape; }

  // Name scopes: scope("layer1") ... ~Scope pops.
  class Scope {
   public:
    Scope(NetBuilder& b, const std::string& name) : b_(b), saved_(b.prefix_) { b.prefix_ += name + "."; }
    ~Scope() { b_.prefix_ = saved_; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    NetBuilder& b_;
    std::string saved_;
  };
  Scope scope(const std::string& name) { return Scope(*this, name); }
  std::string name(const std::string& leaf) const { return prefix_ + leaf; }

  ValueId input(const std::string& n, Shape s, DType dt) { return g_.add_input(n, {std::move(s), dt}); }
  ValueId param(const std::string& leaf, Shape s) { return g_.add_param(name(leaf), {std::move(s), dtype_}); }
  ValueId op(std::string_view op, std::vector<ValueId> in, Attrs a, const std::string& leaf) {
    return g_.add(op, std::move(in), std::move(a), name(leaf));
  }
  ValueId scalar(const std::string& leaf, double v) { return g_.add_constant(name(leaf), {{}, dtype_}, {v}); }

  // conv2d (+bias) (+fused relu).
  ValueId conv(ValueId x, const Conv& c, const std::string& leaf = "conv");
  // conv2d without bias, batchnorm, optional relu (the CNN building block).
  ValueId conv_bn(ValueId x, const Conv& c, const std::string& leaf, double bn_eps = 1e-5);
  ValueId batchnorm(ValueId x, const std::string& leaf, double eps = 1e-5);
  ValueId relu(ValueId x, const std::string& leaf = "relu") { return op("relu", {x}, {}, leaf); }
  ValueId maxpool(ValueId x, std::int64_t k, std::int64_t s, std::int64_t pad,
                  const std::string& leaf = "maxpool", bool ceil = false);
  ValueId avgpool(ValueId x, std::int64_t k, std::int64_t s, std::int64_t pad,
                  const std::string& leaf = "avgpool", bool count_include_pad = true);
  ValueId global_avgpool(ValueId x, const std::string& leaf = "avgpool");  // -> [N, C]
  ValueId add(ValueId a, ValueId b, const std::string& leaf = "add") { return op("ewadd", {a, b}, {}, leaf); }
  ValueId mul(ValueId a, ValueId b, const std::string& leaf = "mul") { return op("ewmul", {a, b}, {}, leaf); }
  ValueId concat(std::vector<ValueId> xs, std::int64_t axis, const std::string& leaf = "concat") {
    return op("concat", std::move(xs), {{"axis", axis}}, leaf);
  }
  ValueId reshape(ValueId x, Ints s, const std::string& leaf) {
    return op("reshape", {x}, {{"shape", std::move(s)}}, leaf);
  }
  ValueId transpose(ValueId x, Ints perm, const std::string& leaf) {
    return op("transpose", {x}, {{"perm", std::move(perm)}}, leaf);
  }
  // x[..., in] @ W[in, out] (+ b[out]); x must be 2-D (rows = tokens).
  ValueId linear(ValueId x, std::int64_t out, bool bias, const std::string& leaf);

 private:
  Graph& g_;
  DType dtype_;
  std::string prefix_;
};

}  // namespace strata::models::zoo

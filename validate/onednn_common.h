// Internal to validate/onednn_*.cc: the oneDNN engine and stream, dense memory descriptors, the node view
// every lowering reads, the one-primitive node, and the lowerings that are composites of several primitives
// (onednn_composite.cc). Only compiled with oneDNN.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <oneapi/dnnl/dnnl.hpp>

#include "validate/onednn_kernels.h"

namespace strata::validate::detail {

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using Dims = memory::dims;
using models::Shape;

inline dnnl::engine& cpu_engine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}
inline dnnl::stream& cpu_stream() {
  static dnnl::stream stream(cpu_engine());
  return stream;
}

// A configuration the lowering does not handle (the reference kernel runs instead).
struct Unsupported {
  std::string why;
};

// The node's types and attributes, what every lowering reads; `dt` is the element type of its data (f32 or
// bf16). Parameters oneDNN takes in f32 only (normalization scale, shift and statistics) are widened from
// bf16 when bound (WidenedInputs).
struct NodeView {
  std::vector<models::TensorType> in, out;
  const models::Attrs& attrs;
  memory::data_type dt = memory::data_type::f32;
  const Shape& in_shape(std::size_t i) const { return in.at(i).shape; }
  const Shape& out_shape(std::size_t i = 0) const { return out.at(i).shape; }
};

inline Dims row_major_strides(const Dims& d) {
  Dims st(d.size(), 1);
  for (std::size_t i = d.size(); i-- > 1;) st[i - 1] = st[i] * d[i];
  return st;
}
// A dense row-major tensor of `t` (models::Shape is memory::dims); a 0-D tensor is one element.
inline memory::desc dense(Dims d, memory::data_type t = memory::data_type::f32) {
  if (d.empty()) d.push_back(1);
  if (d.size() > DNNL_MAX_NDIMS) throw Unsupported{fmt::format("rank {} > {}", d.size(), DNNL_MAX_NDIMS)};
  return memory::desc(d, t, row_major_strides(d));
}
// Element i of an owned dense f32 or bf16 buffer set to `value` (rounded to bf16 there): masks.
void set_element(const memory& m, std::int64_t i, float value);
// `s` right-aligned to `rank` dimensions with leading 1s (numpy broadcasting).
inline Dims aligned(const Shape& s, std::size_t rank) {
  Dims d(rank - std::min(rank, s.size()), 1);
  d.insert(d.end(), s.begin(), s.end());
  return d;
}

// A primitive and its arguments; argument memories are bound to the node's buffers at each run.
class PrimitiveNode final : public OneDnnNode {
 public:
  struct Binding {
    int arg;
    std::size_t index;  // into the node's inputs (or outputs)
    memory::desc desc;
  };
  PrimitiveNode(dnnl::primitive prim, std::string impl, const std::vector<Binding>& ins,
                const std::vector<Binding>& outs)
      : prim_(std::move(prim)), impl_(std::move(impl)) {
    for (const auto& b : ins) in_.push_back(bind(b));
    for (const auto& b : outs) out_.push_back(bind(b));
  }
  void bind(std::span<const void* const> in, std::span<void* const> out) override {
    // oneDNN takes non-const handles for every argument; inputs are only read.
    for (auto& [index, mem] : in_) mem.set_data_handle(const_cast<void*>(in[index]));
    for (auto& [index, mem] : out_) mem.set_data_handle(out[index]);
  }
  void run() override {
    prim_.execute(cpu_stream(), args_);
    cpu_stream().wait();
  }
  std::string implementation() const override { return impl_; }

 private:
  std::pair<std::size_t, memory> bind(const Binding& b) {
    memory mem(b.desc, cpu_engine(), DNNL_MEMORY_NONE);
    args_.emplace(b.arg, mem);  // memory is a shared handle: both copies see set_data_handle
    return {b.index, mem};
  }
  dnnl::primitive prim_;
  std::string impl_;
  std::unordered_map<int, memory> args_;
  std::vector<std::pair<std::size_t, memory>> in_, out_;
};

template <class Primitive, class PrimitiveDesc>
std::unique_ptr<OneDnnNode> make(const PrimitiveDesc& pd, const std::vector<PrimitiveNode::Binding>& ins,
                                 const std::vector<PrimitiveNode::Binding>& outs) {
  return std::make_unique<PrimitiveNode>(Primitive(pd), pd.impl_info_str(), ins, outs);
}

inline dnnl::primitive_attr fused_activation(const models::Attrs& a) {
  dnnl::primitive_attr attr;
  if (a.has("activation") && a.s("activation") == "relu") {
    dnnl::post_ops po;
    po.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(po);
  }
  return attr;
}

// `node` with the inputs `which` (bf16 buffers of `numel` elements each) widened to f32 when bound, for the
// parameters oneDNN 2.x reads in f32 only; `node` unchanged when `dt` is f32. Like a convolution's weight
// packing, the widening runs once per binding, not in run().
std::unique_ptr<OneDnnNode> widened_inputs(std::unique_ptr<OneDnnNode> node, memory::data_type dt,
                                           std::vector<std::pair<std::size_t, std::int64_t>> which);

// Composite lowerings (onednn_composite.cc).
std::unique_ptr<OneDnnNode> lower_conv(const NodeView& v);
std::unique_ptr<OneDnnNode> lower_softmax(const NodeView& v);
std::unique_ptr<OneDnnNode> lower_attention(const NodeView& v);
std::unique_ptr<OneDnnNode> lower_rmsnorm(const NodeView& v);
std::unique_ptr<OneDnnNode> lower_split(const NodeView& v);
std::unique_ptr<OneDnnNode> lower_concat(const NodeView& v);

}  // namespace strata::validate::detail

// ONNX export: standard operators where ONNX has them (with markers the importer folds back), operators of
// the ai.strata domain with their attributes verbatim otherwise.
#include <set>

#include <fmt/format.h>

#include "models/onnx/onnx_proto.h"
#include "sim/trace.h"

namespace strata::models {
namespace {

using namespace onnx_detail;

struct Exporter {
  explicit Exporter(const Graph& graph_in) : g(graph_in) {}
  const Graph& g;
  ::onnx::ModelProto model;
  ::onnx::GraphProto* graph = model.mutable_graph();
  std::vector<std::string> names;
  std::set<std::string> used;
  int fresh_counter = 0;

  std::string unique(const std::string& base) {
    std::string n = base.empty() ? "v" : base;
    for (int k = 1; used.contains(n); ++k) n = fmt::format("{}_{}", base, k);
    used.insert(n);
    return n;
  }
  std::string fresh(const std::string& base) { return unique(fmt::format("{}__{}", base, fresh_counter++)); }
  std::string int_initializer(const std::string& base, const Ints& v) {
    const auto n = fresh(base);
    std::vector<double> d(v.begin(), v.end());
    fill_proto(*graph->add_initializer(), n, {{static_cast<std::int64_t>(v.size())}, DType::kI64}, d);
    return n;
  }
  ::onnx::NodeProto* node(const std::string& op_type, std::vector<std::string> in,
                          std::vector<std::string> out, const std::string& name,
                          std::string_view domain = "") {
    auto* n = graph->add_node();
    n->set_op_type(op_type);
    n->set_name(name);
    if (!domain.empty()) n->set_domain(std::string(domain));
    for (auto& i : in) n->add_input(i);
    for (auto& o : out) n->add_output(o);
    return n;
  }
  static void set(::onnx::NodeProto* n, const std::string& k, std::int64_t v) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(::onnx::AttributeProto_AttributeType_INT);
    a->set_i(v);
  }
  static void set(::onnx::NodeProto* n, const std::string& k, double v) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(::onnx::AttributeProto_AttributeType_FLOAT);
    a->set_f(static_cast<float>(v));
  }
  static void set(::onnx::NodeProto* n, const std::string& k, const Ints& v) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(::onnx::AttributeProto_AttributeType_INTS);
    for (auto x : v) a->add_ints(x);
  }
  static void set(::onnx::NodeProto* n, const std::string& k, const std::string& v) {
    auto* a = n->add_attribute();
    a->set_name(k);
    a->set_type(::onnx::AttributeProto_AttributeType_STRING);
    a->set_s(v);
  }
  static void set_value_info(::onnx::ValueInfoProto* vi, const std::string& name, const TensorType& t) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(to_onnx_type(t.dtype));
    auto* shape = tt->mutable_shape();
    for (auto d : t.shape) shape->add_dim()->set_dim_value(d);
  }

  void export_node(const Node& n) {
    std::vector<std::string> in, out;
    for (auto v : n.inputs) in.push_back(names[static_cast<std::size_t>(v)]);
    for (auto v : n.outputs) out.push_back(names[static_cast<std::size_t>(v)]);
    const auto& a = n.attrs;
    const std::string op(n.op->name);
    auto relu_after = [&](const std::string& onnx_op, std::vector<std::string> ins) {
      const bool relu = a.has("activation") && a.s("activation") == "relu";
      const std::string mid = relu ? fresh(n.name + "/pre_relu") : out[0];
      auto* node_proto = this->node(onnx_op, std::move(ins), {mid}, n.name);
      if (relu)
        this->node("Relu", {mid}, {out[0]}, n.name + "/relu")->set_doc_string(std::string(kFusedRelu));
      return node_proto;
    };
    if (op == "ewadd" || op == "ewsub" || op == "ewmul" || op == "scalar_mul" || op == "relu" ||
        op == "sigmoid" || op == "tanh") {
      node(std::string(n.op->onnx_op), in, out, n.name);
    } else if (op == "matmul" || op == "batch_matmul") {
      auto swap_last = [&](const std::string& v, ValueId id, const char* tag) {
        const int r = g.type(id).rank();
        Ints perm;
        for (int i = 0; i < r; ++i) perm.push_back(i);
        std::swap(perm[static_cast<std::size_t>(r - 1)], perm[static_cast<std::size_t>(r - 2)]);
        const auto t = fresh(n.name + tag);
        auto* tp = node("Transpose", {v}, {t}, n.name + tag);
        tp->set_doc_string(std::string(kOperandTranspose));
        set(tp, "perm", perm);
        return t;
      };
      if (a.i("trans_a")) in[0] = swap_last(in[0], n.inputs[0], "/transpose_a");
      if (a.i("trans_b")) in[1] = swap_last(in[1], n.inputs[1], "/transpose_b");
      relu_after("MatMul", in);
    } else if (op == "conv2d") {
      auto* c = relu_after("Conv", in);
      const auto& w = g.type(n.inputs[1]).shape;
      set(c, "kernel_shape", Ints{w[2], w[3]});
      set(c, "strides", a.ints("strides"));
      set(c, "pads", a.ints("pads"));
      set(c, "dilations", a.ints("dilations"));
      set(c, "group", a.i("groups"));
    } else if (op == "maxpool2d" || op == "avgpool2d") {
      auto* p = node(op == "maxpool2d" ? "MaxPool" : "AveragePool", in, out, n.name);
      set(p, "kernel_shape", a.ints("kernel"));
      set(p, "strides", a.ints("strides"));
      set(p, "pads", a.ints("pads"));
      set(p, "ceil_mode", a.i("ceil_mode"));
      if (op == "avgpool2d") set(p, "count_include_pad", a.i("count_include_pad"));
    } else if (op == "batchnorm") {
      set(node("BatchNormalization", in, out, n.name), "epsilon", a.f("epsilon"));
    } else if (op == "layernorm") {
      auto* p = node("LayerNormalization", in, out, n.name);
      set(p, "axis", a.i("axis"));
      set(p, "epsilon", a.f("epsilon"));
    } else if (op == "softmax" && a.i("causal") == 0) {
      set(node("Softmax", in, out, n.name), "axis", a.i("axis"));
    } else if (op == "concat") {
      set(node("Concat", in, out, n.name), "axis", a.i("axis"));
    } else if (op == "split") {
      in.push_back(int_initializer(n.name + "/sizes", a.ints("sizes")));
      set(node("Split", in, out, n.name), "axis", a.i("axis"));
    } else if (op == "transpose" && a.i("shuffle") == 1) {
      Ints perm = a.ints("perm");
      if (perm.empty())
        for (int i = g.type(n.inputs[0]).rank() - 1; i >= 0; --i) perm.push_back(i);
      set(node("Transpose", in, out, n.name), "perm", perm);
    } else if (op == "reshape" || op == "expand") {
      in.push_back(
          int_initializer(n.name + "/shape", op == "reshape" ? g.type(n.outputs[0]).shape : a.ints("shape")));
      node(op == "reshape" ? "Reshape" : "Expand", in, out, n.name);
    } else if (op == "reduce_sum") {
      if (!a.ints("axes").empty()) in.push_back(int_initializer(n.name + "/axes", a.ints("axes")));
      set(node("ReduceSum", in, out, n.name), "keepdims", a.i("keepdims"));
    } else if (op == "reduce_mean") {
      auto* p = node("ReduceMean", in, out, n.name);
      if (!a.ints("axes").empty()) set(p, "axes", a.ints("axes"));
      set(p, "keepdims", a.i("keepdims"));
    } else if (op == "embedding") {
      set(node("Gather", in, out, n.name), "axis", std::int64_t{0});
    } else {
      auto* p = node(op, in, out, n.name, kStrataDomain);
      for (const auto& [k, v] : a.items()) std::visit([&, &key = k](const auto& x) { set(p, key, x); }, v);
    }
  }

  void run() {
    model.set_ir_version(8);
    model.set_producer_name("strata");
    model.set_producer_version("0.1.0");
    auto* std_opset = model.add_opset_import();
    std_opset->set_domain("");
    std_opset->set_version(kExportOpset);
    auto* strata_opset = model.add_opset_import();
    strata_opset->set_domain(std::string(kStrataDomain));
    strata_opset->set_version(1);
    graph->set_name(g.name());
    names.resize(g.values().size());
    for (std::size_t i = 0; i < g.values().size(); ++i) names[i] = unique(g.values()[i].name);
    std::string params, constants, opt_state;
    auto append = [](std::string& list, const std::string& n) { list += (list.empty() ? "" : ",") + n; };
    for (std::size_t i = 0; i < g.values().size(); ++i) {
      const auto& v = g.values()[i];
      if (v.producer >= 0) continue;
      if (v.data) {
        fill_proto(*graph->add_initializer(), names[i], v.type, *v.data);
        if (v.kind == ValueKind::kConstant && is_float(v.type.dtype)) append(constants, names[i]);
        if (v.kind == ValueKind::kParam || v.kind == ValueKind::kConstant) continue;
      }
      if (v.kind == ValueKind::kParam) append(params, names[i]);
      if (v.kind == ValueKind::kOptState) append(opt_state, names[i]);
      if (v.kind == ValueKind::kConstant && !v.data) append(constants, names[i]);
      if (!v.data) set_value_info(graph->add_input(), names[i], v.type);
    }
    for (const auto& n : g.nodes()) export_node(n);
    for (auto o : g.outputs())
      set_value_info(graph->add_output(), names[static_cast<std::size_t>(o)], g.type(o));
    auto meta = [&](const char* key, const std::string& value) {
      if (value.empty()) return;
      auto* m = model.add_metadata_props();
      m->set_key(key);
      m->set_value(value);
    };
    meta("strata.params", params);
    meta("strata.constants", constants);
    meta("strata.opt_state", opt_state);
  }
};

}  // namespace

std::string export_onnx_bytes(const Graph& g) {
  Exporter e(g);
  e.run();
  std::string out;
  if (!e.model.SerializeToString(&out))
    throw OnnxError(fmt::format("graph '{}': ONNX serialization failed (model over 2 GiB?)", g.name()));
  return out;
}

void export_onnx(const Graph& g, const std::string& path) {
  sim::write_file_atomically(path, export_onnx_bytes(g));
}

}  // namespace strata::models

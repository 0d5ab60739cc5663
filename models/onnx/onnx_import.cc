// ONNX import driver: initializers and graph inputs become sources, nodes go through the handlers of
// onnx_import_ops.cc, graph outputs are marked.
#include <set>
#include <sstream>

#include "models/onnx/onnx_importer.h"

namespace strata::models {
namespace {

using namespace onnx_detail;

std::set<std::string> split_list(const std::string& s) {
  std::set<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.insert(item);
  return out;
}

Graph import_model(const ::onnx::ModelProto& model, const std::string& source,
                   const OnnxImportOptions& options) {
  Importer im{source, options, Graph(model.graph().name().empty() ? source : model.graph().name()),
              1,      {},      nullptr,
              0,      false,   {}};
  for (const auto& o : model.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") im.opset = static_cast<int>(o.version());
  std::set<std::string> params_without_data, constants, opt_state;
  for (const auto& m : model.metadata_props()) {
    if (m.key() == "strata.params") params_without_data = split_list(m.value());
    if (m.key() == "strata.constants") constants = split_list(m.value());
    if (m.key() == "strata.opt_state") opt_state = split_list(m.value());
  }
  const auto& graph = model.graph();
  std::set<std::string> initialized;
  for (const auto& t : graph.initializer()) {
    auto tensor = tensor_from_proto(t, source + ": initializer");
    initialized.insert(t.name());
    const bool constant = !is_float(tensor.type.dtype) || constants.contains(t.name());
    auto data = std::make_shared<const std::vector<double>>(std::move(tensor.data));
    im.values[t.name()] =
        im.g.add_source(t.name(), tensor.type, constant ? ValueKind::kConstant : ValueKind::kParam, data);
  }
  for (const auto& in : graph.input()) {
    if (initialized.contains(in.name())) continue;
    const std::string where = fmt::format("{}: graph input '{}'", source, in.name());
    if (!in.type().has_tensor_type()) throw OnnxUnsupported(where + ": only tensor inputs are supported");
    const auto& tt = in.type().tensor_type();
    const auto dt = from_onnx_type(tt.elem_type());
    if (!dt)
      throw OnnxUnsupported(
          fmt::format("{}: element type {} (supported: FLOAT, FLOAT16, BFLOAT16, DOUBLE, INT64, INT32)",
                      where, onnx_type_name(tt.elem_type())));
    Shape shape;
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value()) {
        shape.push_back(d.dim_value());
      } else {
        auto it = options.dims.find(d.dim_param());
        if (it == options.dims.end())
          throw OnnxError(fmt::format("{}: dimension '{}' is symbolic; give its value (e.g. --dim {}=1)",
                                      where, d.dim_param(), d.dim_param()));
        shape.push_back(it->second);
      }
    }
    const auto kind = params_without_data.contains(in.name()) ? ValueKind::kParam
                      : opt_state.contains(in.name())         ? ValueKind::kOptState
                                                              : ValueKind::kInput;
    try {
      im.values[in.name()] = im.g.add_source(in.name(), {shape, *dt}, kind);
    } catch (const GraphError& e) {  // a negative dimension, or --dim values whose product is past 2^63
      throw OnnxError(fmt::format("{}: {}", source, e.what()));  // "<file>: value 'x': ..."
    }
  }
  for (int ni = 0; ni < graph.node_size(); ++ni) {
    const auto& node = graph.node(ni);
    im.node = &node;
    im.emitted = 0;
    // Every operator strata imports produces something; reading output 0 of a node without outputs would
    // abort inside protobuf.
    if (node.output_size() == 0) im.malformed("node has no outputs; expected at least 1");
    const ::onnx::NodeProto* next = ni + 1 < graph.node_size() ? &graph.node(ni + 1) : nullptr;
    im.fuse_relu = next && next->op_type() == "Relu" && next->doc_string() == kFusedRelu &&
                   node.output_size() > 0 && next->input_size() == 1 && next->output_size() > 0 &&
                   next->input(0) == node.output(0) &&
                   (node.op_type() == "Conv" || node.op_type() == "MatMul");
    if (im.fuse_relu) {
      handlers().at(node.op_type())(im);
      im.values[next->output(0)] = im.values.at(node.output(0));
      im.g.set_value_name(im.values.at(node.output(0)), next->output(0));
      ++ni;
      continue;
    }
    if (node.domain() == kStrataDomain) {
      import_strata(im);
      continue;
    }
    if (!node.domain().empty() && node.domain() != "ai.onnx")
      im.unsupported(
          fmt::format("operator domain '{}' is not supported (supported: the default ONNX domain and {})",
                      node.domain(), kStrataDomain));
    auto it = handlers().find(node.op_type());
    if (it == handlers().end())
      im.unsupported(
          fmt::format("operator {} is not supported (supported: {})", node.op_type(), onnx_supported_ops()));
    it->second(im);
  }
  for (const auto& out : graph.output()) {
    auto it = im.values.find(out.name());
    if (it == im.values.end())
      throw OnnxError(fmt::format("{}: graph output '{}' is never produced", source, out.name()));
    im.g.mark_output(it->second);
  }
  return std::move(im.g);
}

}  // namespace

std::string onnx_supported_ops() {
  std::string s;
  for (const auto& [name, h] : onnx_detail::handlers()) s += (s.empty() ? "" : ", ") + name;
  return s + fmt::format(" (and every strata operator in domain {})", onnx_detail::kStrataDomain);
}

Graph import_onnx_bytes(const std::string& bytes, const std::string& source,
                        const OnnxImportOptions& options) {
  // An empty byte string parses as an empty ModelProto; it is not a model.
  if (bytes.empty()) throw OnnxError(fmt::format("{}: empty file, expected an ONNX model", source));
  ::onnx::ModelProto model;
  if (!model.ParseFromString(bytes))
    throw OnnxError(fmt::format("{}: not a valid ONNX model (protobuf parse failed)", source));
  if (!model.has_graph()) throw OnnxError(fmt::format("{}: ONNX model without a graph", source));
  return import_model(model, source, options);
}

Graph import_onnx(const std::string& path, const OnnxImportOptions& options) {
  return import_onnx_bytes(onnx_detail::read_file(path), path, options);
}

OnnxTensor read_onnx_tensor(const std::string& path) {
  ::onnx::TensorProto t;
  if (!t.ParseFromString(onnx_detail::read_file(path)))
    throw OnnxError(fmt::format("{}: not a serialized TensorProto", path));
  return onnx_detail::tensor_from_proto(t, path);
}

}  // namespace strata::models

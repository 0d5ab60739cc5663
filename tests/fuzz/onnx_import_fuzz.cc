// ONNX import: any byte string is a graph or one of the importer's documented errors (models/onnx/onnx.h):
// OnnxError for malformed input, OnnxUnsupported for operators or attribute values strata does not support,
// and GraphError (models/ir/graph.h) for shapes or attributes the operator table rejects while the graph is
// built (e.g. a 2^80-element input, OnnxMalformed.ElementCountOverflowIsAnError).
#include <cstdint>
#include <string>

#include "models/ir/graph.h"
#include "models/onnx/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  strata::models::OnnxImportOptions options;
  // Symbolic dimensions of the seed models (the zoo's exports use "batch").
  options.dims = {{"batch", 2}, {"N", 2}, {"seq", 4}};
  try {
    const auto g = strata::models::import_onnx_bytes(bytes, "fuzz.onnx", options);
    // What `strata model export` does next with an imported graph.
    (void)strata::models::export_onnx_bytes(g);
  } catch (const strata::models::OnnxError&) {
  } catch (const strata::models::OnnxUnsupported&) {
  } catch (const strata::models::GraphError&) {
  }
  return 0;
}

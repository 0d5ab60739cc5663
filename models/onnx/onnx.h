// ONNX import and export (Debian's libonnx-dev protobuf definitions). Import maps standard ONNX operators
// (opsets 7-17) onto the operator table; export writes standard operators where ONNX has them and
// operators of the "ai.strata" domain (attributes verbatim) where it does not, so every strata graph
// round-trips. Unsupported operators or attribute values are reported with the op type, the node name and
// what is supported.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "models/ir/graph.h"

namespace strata::models {

// An ONNX operator or attribute value strata does not support (a limitation, not malformed input).
class OnnxUnsupported : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};
// A malformed or unreadable ONNX file.
class OnnxError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};
// Shapes or attributes that the operator table rejects while the imported graph is built surface as
// GraphError (models/ir/graph.h); these three are the importer's errors.

struct OnnxImportOptions {
  // Values for symbolic input dimensions ("batch" -> 8). A symbolic dimension without a value is an error.
  std::map<std::string, std::int64_t> dims;
};

Graph import_onnx(const std::string& path, const OnnxImportOptions& options = {});
Graph import_onnx_bytes(const std::string& bytes, const std::string& source,
                        const OnnxImportOptions& options = {});

// Serialized ModelProto; export_onnx writes it atomically.
std::string export_onnx_bytes(const Graph& g);
void export_onnx(const Graph& g, const std::string& path);

// The ONNX operator types the importer understands, comma-separated.
std::string onnx_supported_ops();

// A serialized TensorProto (the backend tests' input_*.pb / output_*.pb).
struct OnnxTensor {
  std::string name;
  TensorType type;
  std::vector<double> data;
};
OnnxTensor read_onnx_tensor(const std::string& path);

}  // namespace strata::models

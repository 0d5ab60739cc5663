// Shared by ONNX import and export (internal to models/onnx): element-type mapping, 16-bit float
// conversion, TensorProto <-> data, file reading, and the markers the exporter leaves for the importer.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include "models/onnx/onnx.h"

namespace strata::models::onnx_detail {

inline constexpr std::string_view kStrataDomain = "ai.strata";
inline constexpr int kExportOpset = 17;
// doc_string of the Relu the exporter writes after a conv/matmul with a fused activation.
inline constexpr std::string_view kFusedRelu = "strata.fused_activation";
// doc_string of the Transpose the exporter writes for matmul's trans_a/trans_b.
inline constexpr std::string_view kOperandTranspose = "strata.matmul_operand_transpose";

std::optional<DType> from_onnx_type(int t);
int to_onnx_type(DType t);
std::string onnx_type_name(int t);  // "FLOAT", or the number when it is not a TensorProto type

// Element values of a TensorProto; throws OnnxUnsupported/OnnxError prefixed with `where`.
OnnxTensor tensor_from_proto(const ::onnx::TensorProto& t, const std::string& where);
void fill_proto(::onnx::TensorProto& t, const std::string& name, const TensorType& type,
                const std::vector<double>& data);

// The whole file; an empty path, a directory or an unreadable file is an OnnxError naming the path.
std::string read_file(const std::string& path);

}  // namespace strata::models::onnx_detail

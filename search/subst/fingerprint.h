// Values of the generator's graphs in the IR's prime field (models/ir/modp.h), interned and memoized: the
// engine that makes fingerprinting cheap (docs/subst.md, "Generator").
//
// Every tensor a generator graph can compute is a term over the 20 input tensors of TASO's generator
// (src/generator/generator.cc of jiazhihao/TASO@f11782c). The store keeps each distinct value once (shape id,
// split boundaries, hash, data on two independent random samples) and memoizes `apply(instance, argument
// values)`, so the depth-first enumeration evaluates each distinct term once, however many graphs contain it:
// a graph's new node is computed from the already-computed values of its prefix, and a node that recurs in
// another graph (a 1-operator term in a 3-operator graph, say) is a hash-table hit. Kernels are the IR's own
// ModP kernels (one operator specification), called directly with attributes prepared once per (instance,
// interned argument shapes).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "models/ir/modp.h"
#include "models/ir/tensor_type.h"
#include "search/subst/ir_bridge.h"
#include "util/hash.h"

namespace strata::search::subst {

// The mixing step of the generator's fingerprint and graph hashes.
using util::mix64;

inline constexpr int kGeneratorInputs = 20;  // TASO's input_1..input_20

using ValueId = std::uint32_t;

// TASO's split tree of one tensor dimension (`SplitInfo`, include/taso/ops.h): the concatenation boundaries,
// in post-order (the most recent last). A split undoes the most recent concatenation.
struct SplitTree {
  std::uint8_t n = 0;
  std::array<std::uint8_t, 7> pos{};
  friend bool operator==(const SplitTree&, const SplitTree&) = default;
};
// What a generator tensor is besides its values, as in TASO's generator: split trees per dimension and, for
// 2-D tensors, whether its strides are transposed (a layout-only transpose permutes strides, not data).
struct TensorMeta {
  std::array<SplitTree, 4> split{};
  bool transposed_layout = false;
  friend bool operator==(const TensorMeta&, const TensorMeta&) = default;
};
// A transpose instance with parameter {0} is TASO's layout-only transpose (shuffle = false); without
// parameters it moves data. Both print as `transpose` in rules.
bool is_layout_only_transpose(const OpInstance& inst);
// The split point of a split along `axis` (0: the tensor has no concatenation boundary there).
int split_point(const TensorMeta& m, std::size_t axis);
// Metadata of the outputs of `inst` from its arguments' metadata and shapes (TASO's propagation rules):
// split trees by the operator's split-axis traces (split_history.h, for this application), the layout by
// TASO's stride rules; false when the instance does not apply (element-wise operands with different
// layouts, split trees full, a split without a boundary to undo).
bool propagate_meta(const OpInstance& inst, std::span<const models::SplitAxisTrace> traces,
                    std::span<const TensorMeta* const> args, std::span<const models::Shape* const> shapes,
                    std::array<TensorMeta, 2>& out);

class ValueStore {
 public:
  static constexpr int kSamples = 2;  // independent random input sets: collision bound (deg/p)^2
  // Element budget of one value (TASO: 512, `MAX_SIZE`); larger results do not apply.
  static constexpr std::int64_t kMaxElements = 512;
  // Distinct shapes (concatenations make new ones; 4-operator graphs over TASO's inputs need a few hundred).
  static constexpr std::size_t kMaxShapes = 1024;

  // Values 0..19 are input_1..input_20 with the shapes of taso_generator_input_shape, random in the field.
  ValueStore(std::span<const OpInstance> ops, std::uint64_t seed);
  ~ValueStore();
  ValueStore(ValueStore&&) noexcept;
  ValueStore& operator=(ValueStore&&) noexcept;

  struct Result {
    int count = 0;  // 0: the instance does not apply to these arguments; 1, or 2 for split
    std::array<ValueId, 2> ids{};
  };
  // Outputs of instance `inst` (index into ops) on `args` (1 or 2 values; none for constants), memoized.
  // With keep_data false only sample 0 is computed and no data is kept: the deepest level of a search needs
  // only fingerprint hashes (such values have an identity of their own, distinct from the full value's).
  Result apply(int inst, std::span<const ValueId> args, bool keep_data = true);

  // Whether `inst` can apply to arguments of these shape ids (split additionally needs a boundary): a cheap
  // pre-test before apply.
  bool shape_applies(int inst, int shape_a, int shape_b);

  // Fingerprint hash: shape, split trees, layout and the data of sample 0. TASO compares and fingerprints
  // tensors with their metadata, so do we. Equal tensors have equal hashes; candidates found by it are
  // re-checked on both samples (identity) and in double precision.
  std::uint64_t hash(ValueId v) const { return values_[v].hash; }
  // Hash of everything including sample 1 (values computed with keep_data).
  std::uint64_t identity(ValueId v) const { return values_[v].identity; }
  int shape_id(ValueId v) const { return values_[v].shape; }
  const models::Shape& shape(ValueId v) const { return shapes_[static_cast<std::size_t>(values_[v].shape)]; }
  int rank(ValueId v) const { return static_cast<int>(shape(v).size()); }
  const TensorMeta& meta(ValueId v) const { return values_[v].meta; }
  bool has_data(ValueId v) const { return values_[v].data != kNoData; }
  std::span<const models::ModP> data(ValueId v, int sample) const;

  std::size_t size() const { return values_.size(); }
  // Kernel evaluations so far (memo misses that applied).
  std::uint64_t evaluations() const { return evaluations_; }
  std::size_t memory_bytes() const;
  // Forget everything but the inputs (bounds memory between independent subtrees of a search).
  void clear();

 private:
  static constexpr std::uint32_t kNoData = 0xFFFFFFFFu;
  struct Value {
    std::uint64_t hash = 0;        // shape + metadata + sample 0
    std::uint64_t identity = 0;    // hash + sample 1 (or a marker: sample 0 only)
    std::uint32_t data = kNoData;  // offset into arena_ of kSamples * numel elements
    std::uint16_t shape = 0;
    TensorMeta meta;
  };
  struct Prepared;
  const Prepared* prepare(int inst, std::span<const ValueId> args, std::int64_t split_point);
  int intern_shape(const models::Shape& s);
  ValueId intern(const Value& v, const models::ModP* data, std::size_t numel, int samples, bool keep_data);

  std::vector<OpInstance> ops_;
  std::vector<models::Shape> shapes_;
  std::vector<std::int64_t> shape_numel_;
  std::vector<Value> values_;
  std::vector<models::ModP> arena_;
  std::unordered_map<std::uint64_t, ValueId> by_identity_;
  std::unordered_map<std::uint64_t, Result> memo_;                         // key: instance, argument ids
  std::unordered_map<std::uint64_t, std::unique_ptr<Prepared>> prepared_;  // key: instance, shapes, split
  std::unordered_map<std::size_t, bool> applies_;                          // key: instance, shape a, shape b
  std::size_t inputs_arena_ = 0;
  std::vector<models::ModP> scratch_;
  std::uint64_t evaluations_ = 0;
};

}  // namespace strata::search::subst

#include "search/subst/fingerprint.h"

#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "models/exec/executor.h"
#include "models/ir/op_def.h"
#include "search/subst/rule.h"
#include "search/subst/split_history.h"

namespace strata::search::subst {
namespace {

using models::ModP;
using models::Shape;

constexpr std::uint32_t kNoArg = 0xFFFFFFFu;  // 28 bits

SplitTree merge(const SplitTree& a, int offset, const SplitTree& b, bool& ok) {
  SplitTree r = a;
  if (a.n + b.n + 1 > static_cast<int>(r.pos.size())) {
    ok = false;
    return r;
  }
  for (int i = 0; i < b.n; ++i)
    r.pos[r.n++] = static_cast<std::uint8_t>(offset + b.pos[static_cast<std::size_t>(i)]);
  r.pos[r.n++] = static_cast<std::uint8_t>(offset);
  return r;
}

void divide(const SplitTree& s, SplitTree& left, SplitTree& right) {
  left = {};
  right = {};
  const int mid = s.pos[static_cast<std::size_t>(s.n - 1)];
  int i = 0;
  while (i < s.n && s.pos[static_cast<std::size_t>(i)] < mid)
    left.pos[left.n++] = s.pos[static_cast<std::size_t>(i++)];
  while (i < s.n - 1)
    right.pos[right.n++] = static_cast<std::uint8_t>(s.pos[static_cast<std::size_t>(i++)] - mid);
}

SplitTree combine(const SplitTree& a, const SplitTree& b) {
  return a == b ? a : SplitTree{};
}

}  // namespace

bool is_layout_only_transpose(const OpInstance& inst) {
  return inst.op == Op::kTranspose && inst.params.size() == 1 && inst.params[0] == 0;
}

int split_point(const TensorMeta& m, std::size_t axis) {
  const auto& t = m.split[axis];
  return t.n == 0 ? 0 : t.pos[static_cast<std::size_t>(t.n - 1)];
}

bool propagate_meta(const OpInstance& inst, std::span<const models::SplitAxisTrace> traces,
                    std::span<const TensorMeta* const> args, std::span<const Shape* const> shapes,
                    std::array<TensorMeta, 2>& out) {
  out = {};
  auto& o = out[0];
  const models::OpDef& def = *op_info(inst.op).def;
  // TASO's stride metadata: element-wise operators need operands of one layout and keep it (a 0-D scalar
  // operand has none); a layout-only transpose flips it; everything else writes a fresh layout.
  if (def.elementwise) {
    for (std::size_t i = 1; i < args.size(); ++i)
      if (*shapes[i] == *shapes[0] && args[i]->transposed_layout != args[0]->transposed_layout) return false;
    o.transposed_layout = args[0]->transposed_layout;
  } else if (is_layout_only_transpose(inst)) {
    o.transposed_layout = !args[0]->transposed_layout;
  }
  bool ok = true;
  auto from = [&](int arg, std::int64_t axis) {
    return axis >= 0 && axis < 4 ? args[static_cast<std::size_t>(arg)]->split[static_cast<std::size_t>(axis)]
                                 : SplitTree{};
  };
  auto join = [&](const SplitTree& a, std::int64_t boundary, const SplitTree& b) {
    return merge(a, static_cast<int>(boundary), b, ok);
  };
  for (std::size_t d = 0; d < traces.size() && d < 4; ++d)
    o.split[d] = axis_history<SplitTree>(traces[d], from, combine, join);
  if (!ok) return false;
  if (is_split(inst.op)) {
    const auto axis = static_cast<std::size_t>(inst.params[0]);
    if (axis >= 4 || args[0]->split[axis].n == 0) return false;
    out[1] = out[0];
    divide(args[0]->split[axis], out[0].split[axis], out[1].split[axis]);
  }
  return true;
}

struct ValueStore::Prepared {
  const models::OpDef* def = nullptr;
  models::Attrs attrs;
  std::vector<models::SplitAxisTrace> traces;  // of output 0's axes (split_history.h)
  std::vector<Shape> out_shapes;
  std::array<int, 2> out_shape_ids{};
};

ValueStore::ValueStore(std::span<const OpInstance> ops, std::uint64_t seed) : ops_(ops.begin(), ops.end()) {
  if (ops_.size() > 255) throw std::invalid_argument("generator: at most 255 operator instances");
  for (int i = 1; i <= kGeneratorInputs; ++i) {
    const Shape shape = *taso_generator_input_shape(i);
    const auto n = models::numel(shape);
    std::vector<ModP> data;
    for (int s = 0; s < kSamples; ++s) {
      auto d =
          models::random_values<ModP>(n, seed + static_cast<std::uint64_t>(s), fmt::format("input_{}", i));
      data.insert(data.end(), d.begin(), d.end());
    }
    Value v;
    v.shape = static_cast<std::uint16_t>(intern_shape(shape));
    intern(v, data.data(), static_cast<std::size_t>(n), kSamples, true);
  }
  if (values_.size() != kGeneratorInputs) throw std::logic_error("generator: two random inputs coincide");
  inputs_arena_ = arena_.size();
}

ValueStore::~ValueStore() = default;
ValueStore::ValueStore(ValueStore&&) noexcept = default;
ValueStore& ValueStore::operator=(ValueStore&&) noexcept = default;

int ValueStore::intern_shape(const Shape& s) {
  for (std::size_t i = 0; i < shapes_.size(); ++i)
    if (shapes_[i] == s) return static_cast<int>(i);
  if (shapes_.size() >= kMaxShapes) throw std::logic_error("generator: too many distinct shapes");
  shapes_.push_back(s);
  shape_numel_.push_back(models::numel(s));
  return static_cast<int>(shapes_.size() - 1);
}

ValueId ValueStore::intern(const Value& proto, const ModP* data, std::size_t numel, int samples,
                           bool keep_data) {
  Value v = proto;
  // Polynomial hashes of the data (one multiply per element), mixed with shape and metadata. The fingerprint
  // hash covers sample 0; the identity adds sample 1 (values known on sample 0 only are a separate identity).
  auto poly = [&](int sample) {
    std::uint64_t h = 0;
    const ModP* d = data + static_cast<std::size_t>(sample) * numel;
    for (std::size_t i = 0; i < numel; ++i) h = h * 0x9E3779B97F4A7C15ull + d[i].v + 1;
    return h;
  };
  std::uint64_t h = mix64(poly(0) ^ shapes_[v.shape].size());
  for (auto d : shapes_[v.shape]) h = mix64(h ^ static_cast<std::uint64_t>(d));
  h = mix64(h ^ (v.meta.transposed_layout ? 0x7A11 : 0x5EED));
  for (const auto& t : v.meta.split) {
    h = mix64(h ^ t.n);
    for (int i = 0; i < t.n; ++i) h = mix64(h ^ t.pos[static_cast<std::size_t>(i)]);
  }
  v.hash = h;
  v.identity = samples == kSamples ? mix64(h ^ poly(1)) : mix64(h ^ 0x9A47'1A11ull);
  auto [it, inserted] = by_identity_.try_emplace(v.identity, static_cast<ValueId>(values_.size()));
  if (inserted) values_.push_back(v);
  auto& stored = values_[it->second];
  if (keep_data && samples == kSamples && stored.data == kNoData) {
    stored.data = static_cast<std::uint32_t>(arena_.size());
    arena_.insert(arena_.end(), data, data + numel * kSamples);
  }
  return it->second;
}

std::span<const ModP> ValueStore::data(ValueId v, int sample) const {
  const auto& val = values_[v];
  if (val.data == kNoData) throw std::logic_error("generator: value without data used as an argument");
  const auto n = static_cast<std::size_t>(shape_numel_[val.shape]);
  return {arena_.data() + val.data + static_cast<std::size_t>(sample) * n, n};
}

const ValueStore::Prepared* ValueStore::prepare(int inst, std::span<const ValueId> args,
                                                std::int64_t split_point) {
  std::uint64_t key = static_cast<std::uint64_t>(inst);
  for (std::size_t i = 0; i < 2; ++i)
    key = key * kMaxShapes +
          (i < args.size() ? static_cast<std::uint64_t>(values_[args[i]].shape) : kMaxShapes - 1);
  key = key * 64 + static_cast<std::uint64_t>(split_point);
  auto it = prepared_.find(key);
  if (it != prepared_.end()) return it->second.get();
  std::unique_ptr<Prepared> prep;
  const auto& op = ops_[static_cast<std::size_t>(inst)];
  std::vector<Shape> shapes;
  for (auto a : args) shapes.push_back(shape(a));
  if (auto ir = to_ir(op, shapes, split_point, taso_generator_sizing(op.op))) {
    // nullopt: the IR's shape rule rejects the combination
    if (auto applied = apply_ir(*ir, shapes, "generator")) {
      auto p = std::make_unique<Prepared>();
      p->def = applied.value().def;
      p->attrs = applied.value().attrs;
      const auto& out_types = applied.value().outputs;
      bool fits = true;
      for (const auto& t : out_types) {
        fits = fits && t.numel() <= kMaxElements;
        p->out_shapes.push_back(t.shape);
      }
      if (!out_types.empty())
        p->traces = split_axis_traces(*p->def, applied.value().inputs, out_types[0], p->attrs,
                                      out_types[0].shape.size());
      if (fits) {
        for (std::size_t o = 0; o < p->out_shapes.size() && o < 2; ++o)
          p->out_shape_ids[o] = intern_shape(p->out_shapes[o]);
        prep = std::move(p);
      }
    }
  }
  auto [pos, _] = prepared_.emplace(key, std::move(prep));
  return pos->second.get();
}

bool ValueStore::shape_applies(int inst, int shape_a, int shape_b) {
  const auto idx =
      (static_cast<std::size_t>(inst) * kMaxShapes + static_cast<std::size_t>(shape_a)) * kMaxShapes +
      static_cast<std::size_t>(shape_b);
  if (auto it = applies_.find(idx); it != applies_.end()) return it->second;
  const auto& op = ops_[static_cast<std::size_t>(inst)];
  const int arity = op_info(op.op).tensor_args;
  std::vector<Shape> shapes;
  if (arity >= 1) shapes.push_back(shapes_[static_cast<std::size_t>(shape_a)]);
  if (arity >= 2) shapes.push_back(shapes_[static_cast<std::size_t>(shape_b)]);
  bool ok = false;
  if (is_split(op.op)) {
    const auto axis = static_cast<std::size_t>(op.params[0]);
    ok = axis < shapes[0].size() && shapes[0][axis] >= 2;
  } else if (auto ir = to_ir(op, shapes, 0, taso_generator_sizing(op.op))) {
    if (auto applied = apply_ir(*ir, shapes, "generator")) {
      ok = true;
      for (const auto& t : applied.value().outputs) ok = ok && t.numel() <= kMaxElements;
    }
  }
  applies_.emplace(idx, ok);
  return ok;
}

ValueStore::Result ValueStore::apply(int inst, std::span<const ValueId> args, bool keep_data) {
  std::uint64_t key = static_cast<std::uint64_t>(inst);
  for (std::size_t i = 0; i < 2; ++i) key = (key << 28) | (i < args.size() ? args[i] : kNoArg);
  if (auto it = memo_.find(key); it != memo_.end()) {
    bool usable = true;
    if (keep_data)
      for (int o = 0; o < it->second.count; ++o)
        usable = usable && has_data(it->second.ids[static_cast<std::size_t>(o)]);
    if (usable) return it->second;
  }
  const int samples = keep_data ? kSamples : 1;
  if (values_.size() >= kNoArg) throw std::length_error("generator: value store full");
  Result r;
  const auto& op = ops_[static_cast<std::size_t>(inst)];
  std::int64_t split_at = 0;
  if (is_split(op.op)) {
    const auto axis = static_cast<std::size_t>(op.params[0]);
    if (axis >= 4 || static_cast<int>(axis) >= rank(args[0])) return memo_[key] = r;
    split_at = split_point(meta(args[0]), axis);
    if (split_at == 0) return memo_[key] = r;
  }
  // TASO's matmul rejects equal operands and a weight with BATCHSIZE (2) rows (src/generator/generator.cc).
  if (op.op == Op::kMatmul && (args[0] == args[1] || shape(args[1])[0] == 2)) return memo_[key] = r;
  const Prepared* prep = prepare(inst, args, split_at);
  if (!prep) return memo_[key] = r;
  std::array<TensorMeta, 2> metas;
  {
    std::array<const TensorMeta*, 2> am{};
    std::array<const Shape*, 2> as{};
    for (std::size_t i = 0; i < args.size(); ++i) {
      am[i] = &meta(args[i]);
      as[i] = &shape(args[i]);
    }
    if (!propagate_meta(op, prep->traces, std::span(am.data(), args.size()),
                        std::span(as.data(), args.size()), metas))
      return memo_[key] = r;
  }
  // Outputs into scratch: sample-major per output, like the arena.
  std::array<std::size_t, 2> offset{};
  std::size_t total = 0;
  for (std::size_t o = 0; o < prep->out_shapes.size(); ++o) {
    offset[o] = total;
    total +=
        static_cast<std::size_t>(shape_numel_[static_cast<std::size_t>(prep->out_shape_ids[o])] * samples);
  }
  scratch_.assign(total, ModP{});
  ++evaluations_;
  for (int s = 0; s < samples; ++s) {
    std::array<models::In<ModP>, 2> ins;
    std::array<models::Out<ModP>, 2> outs;
    for (std::size_t i = 0; i < args.size(); ++i) {
      auto d = data(args[i], s);
      ins[i] = {d.data(), &shape(args[i]), static_cast<std::int64_t>(d.size())};
    }
    for (std::size_t o = 0; o < prep->out_shapes.size(); ++o) {
      const auto n = shape_numel_[static_cast<std::size_t>(prep->out_shape_ids[o])];
      outs[o] = {scratch_.data() + offset[o] + static_cast<std::size_t>(s * n), &prep->out_shapes[o], n};
    }
    const models::KernelCall<ModP> call{std::span(ins.data(), args.size()),
                                        std::span(outs.data(), prep->out_shapes.size()), prep->attrs};
    prep->def->kernel.modp(call);
  }
  r.count = static_cast<int>(prep->out_shapes.size());
  for (std::size_t o = 0; o < prep->out_shapes.size(); ++o) {
    Value v;
    v.shape = static_cast<std::uint16_t>(prep->out_shape_ids[o]);
    v.meta = metas[o];
    const auto n = static_cast<std::size_t>(shape_numel_[v.shape]);
    r.ids[o] = intern(v, scratch_.data() + offset[o], n, samples, keep_data);
  }
  return memo_[key] = r;
}

std::size_t ValueStore::memory_bytes() const {
  // Entries, not capacities: after clear() the count restarts from the inputs.
  return values_.size() * sizeof(Value) + arena_.size() * sizeof(ModP) +
         (by_identity_.size() + memo_.size()) * 48;
}

void ValueStore::clear() {
  values_.resize(kGeneratorInputs);
  values_.shrink_to_fit();
  arena_.resize(inputs_arena_);
  arena_.shrink_to_fit();
  // Fresh tables: clearing a grown unordered_map keeps (and memsets) its whole bucket array.
  by_identity_ = {};
  memo_ = {};
  for (ValueId i = 0; i < kGeneratorInputs; ++i) by_identity_.emplace(values_[i].identity, i);
}

}  // namespace strata::search::subst

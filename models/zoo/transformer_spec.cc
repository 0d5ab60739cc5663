#include "models/zoo/transformer_spec.h"

#include <array>
#include <filesystem>
#include <functional>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "hw/yaml_reader.h"
#include "util/error.h"
#include "util/parse.h"

namespace strata::models::zoo {
namespace {

// Every key of a spec, declared once: the `transformer:` text, the YAML loader, check_spec's ranges and
// format_transformer_spec all go through this table.
using Setter = std::function<bool(TransformerSpec&, std::string_view)>;  // false: not a valid value
using Getter = std::function<std::string(const TransformerSpec&)>;
struct SpecKey {
  std::string_view name;
  bool required;
  std::string expected;  // what a valid value looks like, for messages
  Setter set;
  Getter get;
  std::int64_t TransformerSpec::*int_field = nullptr;  // integer keys: the field and its range
  util::IntRange range{0, 0};
};

SpecKey int_key(std::string_view name, bool required, std::int64_t TransformerSpec::*field,
                util::IntRange range) {
  return {name,
          required,
          fmt::format("an integer from {} to {}", range.min, range.max),
          [field, range](TransformerSpec& s, std::string_view v) {
            const auto x = util::try_parse_int(v, range);
            if (x) s.*field = *x;
            return x.has_value();
          },
          [field](const TransformerSpec& s) { return std::to_string(s.*field); },
          field,
          range};
}
template <class E>
SpecKey choice_key(std::string_view name, E TransformerSpec::*field, std::string_view a, E ea,
                   std::string_view b, E eb) {
  return {name, false, fmt::format("{} or {}", a, b),
          [=](TransformerSpec& s, std::string_view v) {
            if (v != a && v != b) return false;
            s.*field = v == a ? ea : eb;
            return true;
          },
          [=](const TransformerSpec& s) { return std::string(s.*field == ea ? a : b); }};
}
SpecKey bool_key(std::string_view name, bool TransformerSpec::*field) {
  return {name, false, "0 or 1",
          [field](TransformerSpec& s, std::string_view v) {
            if (v != "0" && v != "1") return false;
            s.*field = v == "1";
            return true;
          },
          [field](const TransformerSpec& s) { return std::string(s.*field ? "1" : "0"); }};
}

// Bounds keep every product the graph builder forms (tokens x hidden, vocab x hidden, experts x ffn x hidden)
// far inside int64 and doubles exact.
constexpr std::int64_t kMaxLayers = 100000, kMaxWidth = std::int64_t{1} << 24, kMaxHeads = 65536,
                       kMaxVocab = std::int64_t{1} << 26, kMaxSeq = std::int64_t{1} << 24,
                       kMaxExperts = 65536;

const std::vector<SpecKey>& spec_keys() {
  using S = TransformerSpec;
  static const std::vector<SpecKey> keys = {
      int_key("layers", true, &S::layers, {1, kMaxLayers}),
      int_key("hidden", true, &S::hidden, {1, kMaxWidth}),
      int_key("heads", true, &S::heads, {1, kMaxHeads}),
      int_key("vocab", true, &S::vocab, {1, kMaxVocab}),
      int_key("seq", true, &S::seq, {1, kMaxSeq}),
      int_key("ffn", false, &S::ffn, {1, kMaxWidth}),
      int_key("kv_heads", false, &S::kv_heads, {1, kMaxHeads}),
      int_key("experts", false, &S::experts, {0, kMaxExperts}),
      int_key("top_k", false, &S::top_k, {1, kMaxExperts}),
      choice_key("act", &S::act, "gelu", MlpActivation::kGelu, "swiglu", MlpActivation::kSwiglu),
      choice_key("norm", &S::norm, "layernorm", NormKind::kLayerNorm, "rmsnorm", NormKind::kRmsNorm),
      choice_key("attention", &S::attention, "flash", AttentionImpl::kFlash, "naive", AttentionImpl::kNaive),
      choice_key("positions", &S::positions, "learned", Positions::kLearned, "rope", Positions::kRope),
      bool_key("bias", &S::bias),
      bool_key("tied_embeddings", &S::tied_embeddings),
  };
  return keys;
}

std::string key_list() {
  std::string s;
  for (const auto& k : spec_keys()) s += fmt::format("{}{}", s.empty() ? "" : ", ", k.name);
  return s;
}
const SpecKey* find_key(std::string_view name) {
  for (const auto& k : spec_keys())
    if (k.name == name) return &k;
  return nullptr;
}

// Defaults that depend on other keys, filled once all keys are read.
void fill_defaults(TransformerSpec& s, bool has_ffn, bool has_kv) {
  if (!has_kv) s.kv_heads = s.heads;
  if (!has_ffn) s.ffn = default_ffn(s.hidden, s.act);
}

double mlp_params(const TransformerSpec& s) {
  const double h = static_cast<double>(s.hidden), f = static_cast<double>(s.ffn);
  if (s.act == MlpActivation::kSwiglu) return 3 * h * f + (s.bias ? 2 * f + h : 0);
  return 2 * h * f + (s.bias ? f + h : 0);
}
double norm_params(const TransformerSpec& s) {
  const double h = static_cast<double>(s.hidden);
  return s.norm == NormKind::kLayerNorm && s.bias ? 2 * h : h;
}

}  // namespace

std::int64_t default_ffn(std::int64_t hidden, MlpActivation act) {
  if (act == MlpActivation::kGelu) return 4 * hidden;
  const std::int64_t f = (8 * hidden + 2) / 3;  // ceil(2/3 * 4h)
  return (f + 255) / 256 * 256;
}

std::optional<SpecProblem> check_spec(const TransformerSpec& s) {
  for (const auto& k : spec_keys())
    if (k.int_field && (s.*k.int_field < k.range.min || s.*k.int_field > k.range.max))
      return SpecProblem{std::string(k.name), fmt::format("expected {}, got {}", k.expected, s.*k.int_field)};
  if (s.hidden % s.heads != 0)
    return SpecProblem{"heads", fmt::format("hidden {} is not a multiple of heads {}", s.hidden, s.heads)};
  if (s.heads % s.kv_heads != 0)
    return SpecProblem{"kv_heads", fmt::format("kv_heads {} must divide heads {} (grouped-query attention)",
                                               s.kv_heads, s.heads)};
  const std::int64_t experts = std::max<std::int64_t>(s.experts, 1);
  if (s.top_k < 1 || s.top_k > experts)
    return SpecProblem{"top_k", fmt::format("top_k {} exceeds the {} expert{}", s.top_k, experts,
                                            experts == 1 ? " of a dense model (set experts > 1)" : "s")};
  if (s.positions == Positions::kRope && s.head_dim() % 2 != 0)
    return SpecProblem{
        "positions",
        fmt::format("rotary positions need an even head dimension, hidden / heads = {}", s.head_dim())};
  if (!(s.norm_eps > 0)) return SpecProblem{"norm_eps", "must be positive"};
  return std::nullopt;
}

TransformerParams transformer_params(const TransformerSpec& s) {
  const double h = static_cast<double>(s.hidden), kv = static_cast<double>(s.kv_dim());
  const double attn = 2 * h * h + 2 * h * kv + (s.bias ? 2 * h + 2 * kv : 0);
  const double norms = 2 * norm_params(s);
  TransformerParams p;
  if (s.moe()) {
    const double router = h * static_cast<double>(s.experts);
    p.per_layer = attn + norms + router + static_cast<double>(s.experts) * mlp_params(s);
    p.per_layer_active = attn + norms + router + static_cast<double>(s.top_k) * mlp_params(s);
  } else {
    p.per_layer = p.per_layer_active = attn + norms + mlp_params(s);
  }
  p.embedding = static_cast<double>(s.vocab) * h +
                (s.positions == Positions::kLearned ? static_cast<double>(s.seq) * h : 0);
  p.head = norm_params(s) + (s.tied_embeddings ? 0 : static_cast<double>(s.vocab) * h);
  const double layers = static_cast<double>(s.layers);
  p.total = layers * p.per_layer + p.embedding + p.head;
  p.active = layers * p.per_layer_active + p.embedding + p.head;
  return p;
}

TransformerSpec parse_transformer_spec(std::string_view text) {
  const std::string field = "transformer spec";
  if (text.starts_with(kTransformerPrefix)) text.remove_prefix(kTransformerPrefix.size());
  TransformerSpec s;
  std::set<std::string> given;
  for (const auto& kv : util::parse_key_values(text, field)) {
    const SpecKey* k = find_key(kv.key);
    if (!k)
      throw util::InputError(
          fmt::format("{}: unknown key '{}' (expected one of: {})", field, kv.key, key_list()));
    if (!k->set(s, kv.value))
      throw util::InputError(
          fmt::format("{}: key '{}': expected {}, got '{}'", field, kv.key, k->expected, kv.value));
    given.insert(kv.key);
  }
  for (const auto& k : spec_keys())
    if (k.required && !given.contains(std::string(k.name)))
      throw util::InputError(fmt::format("{}: missing required key '{}' ({})", field, k.name, k.expected));
  const bool has_ffn = given.contains("ffn"), has_kv = given.contains("kv_heads");
  fill_defaults(s, has_ffn, has_kv);
  if (const auto p = check_spec(s))
    throw util::InputError(fmt::format("{}: key '{}': {}", field, p->key, p->message));
  return s;
}

namespace {

TransformerSpec spec_from_yaml(const YamlReader& root, std::string default_name) {
  // Unknown keys: YamlReader::expect_map takes a fixed list; the same message form with this table's keys.
  for (const auto& kv : root.node()) {
    const std::string key = kv.first.as<std::string>();
    if (key != "name" && !find_key(key))
      throw config_error(ConfigLocation{root.file(), key}, kv.first,
                         fmt::format("unknown field '{}' (expected one of: name, {})", key, key_list()));
  }
  TransformerSpec s;
  s.name = std::move(default_name);
  if (const auto n = root.maybe("name")) s.name = n->as_string();
  for (const auto& k : spec_keys()) {
    const auto node = root.maybe(k.name);
    if (!node) {
      if (k.required) throw root.error(fmt::format("missing required field '{}' ({})", k.name, k.expected));
      continue;
    }
    const std::string v = node->as_string();
    if (!k.set(s, v)) throw node->error(fmt::format("expected {}, got '{}'", k.expected, v));
  }
  fill_defaults(s, root.has("ffn"), root.has("kv_heads"));
  if (const auto p = check_spec(s)) {
    if (const auto node = root.maybe(p->key)) throw node->error(p->message);
    throw root.error(fmt::format("{}: {}", p->key, p->message));
  }
  return s;
}

}  // namespace

TransformerSpec parse_transformer_yaml(std::string_view text, const std::string& source) {
  return spec_from_yaml(YamlReader::from_string(text, source), source);
}

TransformerSpec load_transformer_spec(const std::string& path) {
  return spec_from_yaml(YamlReader::from_file(path), std::filesystem::path(path).stem().string());
}

std::string format_transformer_spec(const TransformerSpec& s) {
  std::string out;
  for (const auto& k : spec_keys()) out += fmt::format("{}{}={}", out.empty() ? "" : ",", k.name, k.get(s));
  return out;
}

}  // namespace strata::models::zoo

// Operator attributes: a small sorted map from name to an int, float, int list or string. Every node holds
// all attributes its operator declares (defaults filled in when the node is created), so kernels and cost
// functions read them without fallbacks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace strata::models {

using Ints = std::vector<std::int64_t>;
using AttrValue = std::variant<std::int64_t, double, Ints, std::string>;

enum class AttrKind : std::uint8_t { kInt, kFloat, kInts, kString };
std::string_view attr_kind_name(AttrKind k);
AttrKind kind_of(const AttrValue& v);
std::string attr_value_str(const AttrValue& v);

class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<std::string, AttrValue>> init);

  void set(std::string_view name, AttrValue v);
  bool has(std::string_view name) const { return find(name) != nullptr; }
  const AttrValue* find(std::string_view name) const;

  // Typed getters; throw std::logic_error when missing or of another kind (a bug: nodes are validated).
  std::int64_t i(std::string_view name) const;
  double f(std::string_view name) const;
  const Ints& ints(std::string_view name) const;
  const std::string& s(std::string_view name) const;

  const std::vector<std::pair<std::string, AttrValue>>& items() const { return items_; }
  // "axis=1,pads=[0,0,1,1]" in name order: the canonical form used for profile keys and hashing.
  std::string str() const;
  bool operator==(const Attrs&) const = default;

 private:
  std::vector<std::pair<std::string, AttrValue>> items_;  // sorted by name
};

}  // namespace strata::models

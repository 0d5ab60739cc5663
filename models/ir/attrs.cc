#include "models/ir/attrs.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace strata::models {

std::string_view attr_kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::kInt:
      return "int";
    case AttrKind::kFloat:
      return "float";
    case AttrKind::kInts:
      return "int list";
    case AttrKind::kString:
      return "string";
  }
  return "?";
}

AttrKind kind_of(const AttrValue& v) {
  return static_cast<AttrKind>(v.index());
}

std::string attr_value_str(const AttrValue& v) {
  switch (kind_of(v)) {
    case AttrKind::kInt:
      return std::to_string(std::get<std::int64_t>(v));
    case AttrKind::kFloat:
      return fmt::format("{}", std::get<double>(v));
    case AttrKind::kInts:
      return fmt::format("[{}]", fmt::join(std::get<Ints>(v), ","));
    case AttrKind::kString:
      return std::get<std::string>(v);
  }
  return "";
}

Attrs::Attrs(std::initializer_list<std::pair<std::string, AttrValue>> init) {
  for (const auto& [k, v] : init) set(k, v);
}

void Attrs::set(std::string_view name, AttrValue v) {
  auto it = std::lower_bound(items_.begin(), items_.end(), name,
                             [](const auto& p, std::string_view n) { return p.first < n; });
  if (it != items_.end() && it->first == name)
    it->second = std::move(v);
  else
    items_.insert(it, {std::string(name), std::move(v)});
}

const AttrValue* Attrs::find(std::string_view name) const {
  auto it = std::lower_bound(items_.begin(), items_.end(), name,
                             [](const auto& p, std::string_view n) { return p.first < n; });
  return (it != items_.end() && it->first == name) ? &it->second : nullptr;
}

namespace {
template <class V>
const V& get_as(const Attrs& a, std::string_view name) {
  const auto* v = a.find(name);
  if (!v) throw std::logic_error(fmt::format("attribute '{}' missing", name));
  const auto* p = std::get_if<V>(v);
  if (!p)
    throw std::logic_error(fmt::format("attribute '{}' has kind {}", name, attr_kind_name(kind_of(*v))));
  return *p;
}
}  // namespace

std::int64_t Attrs::i(std::string_view name) const {
  return get_as<std::int64_t>(*this, name);
}
double Attrs::f(std::string_view name) const {
  return get_as<double>(*this, name);
}
const Ints& Attrs::ints(std::string_view name) const {
  return get_as<Ints>(*this, name);
}
const std::string& Attrs::s(std::string_view name) const {
  return get_as<std::string>(*this, name);
}

std::string Attrs::str() const {
  std::string out;
  for (const auto& [k, v] : items_) {
    if (!out.empty()) out += ',';
    out += k + "=" + attr_value_str(v);
  }
  return out;
}

}  // namespace strata::models

#include "hw/yaml_patch.h"

#include <fmt/format.h>

#include "util/parse.h"

namespace strata::hw {
namespace {

std::string joined(std::span<const std::string> path, std::size_t count) {
  std::string s;
  for (std::size_t i = 0; i < count; ++i) s += (i ? "." : "") + path[i];
  return s;
}

// The child of `node` named by `segment`, or an undefined node (with `why` set) when there is none.
YAML::Node child(const YAML::Node& node, const std::string& segment, const std::string& where,
                 std::string& why) {
  if (node.IsMap()) {
    if (const YAML::Node c = node[segment]) return c;
    std::string keys;
    for (const auto& kv : node) keys += fmt::format("{}{}", keys.empty() ? "" : ", ", kv.first.Scalar());
    why = fmt::format("'{}' does not exist (fields there: {})", where, keys);
  } else if (node.IsSequence()) {
    const auto index = util::try_parse_int(segment, util::IntRange{0, 1 << 30});
    if (index && static_cast<std::size_t>(*index) < node.size())
      return node[static_cast<std::size_t>(*index)];
    why = fmt::format("'{}' does not exist: expected an index from 0 to {}", where,
                      static_cast<long long>(node.size()) - 1);
  } else {
    why = fmt::format("'{}' does not exist: what contains it is a single value, not a mapping or a list",
                      where);
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

}  // namespace

std::vector<std::string> split_dot_path(std::string_view path) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = path.find('.', start);
    parts.emplace_back(
        path.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
    if (dot == std::string_view::npos) return parts;
    start = dot + 1;
  }
}

YAML::Node shallow_copy(const YAML::Node& node) {
  if (node.IsMap()) {
    YAML::Node copy(YAML::NodeType::Map);
    for (const auto& kv : node) copy[kv.first] = kv.second;  // the key node itself: its line number stays
    return copy;
  }
  if (node.IsSequence()) {
    YAML::Node copy(YAML::NodeType::Sequence);
    for (const auto& item : node) copy.push_back(item);
    return copy;
  }
  return node;
}

YAML::Node copy_without_marks(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Scalar:
      return YAML::Node(node.Scalar());
    case YAML::NodeType::Sequence: {
      YAML::Node copy(YAML::NodeType::Sequence);
      for (const auto& item : node) copy.push_back(copy_without_marks(item));
      return copy;
    }
    case YAML::NodeType::Map: {
      YAML::Node copy(YAML::NodeType::Map);
      for (const auto& kv : node) copy[copy_without_marks(kv.first)] = copy_without_marks(kv.second);
      return copy;
    }
    default:
      return YAML::Node(node.Type());
  }
}

std::string set_at_path(YAML::Node root, std::span<const std::string> path, const YAML::Node& value) {
  if (path.empty()) return "an empty path";
  for (std::size_t i = 0; i < path.size(); ++i)
    if (path[i].empty()) return fmt::format("'{}' has an empty segment", joined(path, path.size()));
  // The containers on the way: chain[i] holds path[i].
  std::vector<YAML::Node> chain{root};
  std::string why;
  for (std::size_t i = 0; i + 1 < path.size(); ++i) {
    YAML::Node next = child(chain.back(), path[i], joined(path, i + 1), why);
    if (!why.empty()) return why;
    chain.push_back(next);
  }
  const YAML::Node& last = chain.back();
  if (last.IsSequence() || !last.IsMap()) {
    child(last, path.back(), joined(path, path.size()), why);  // the last entry of a list must exist
    if (!why.empty()) return why;
  }
  YAML::Node replacement = value;
  for (std::size_t i = path.size(); i-- > 1;) {
    YAML::Node parent = shallow_copy(chain[i]);
    if (parent.IsSequence())
      parent[static_cast<std::size_t>(std::stoul(path[i]))] = replacement;
    else
      parent[path[i]] = replacement;
    replacement.reset(parent);  // never `replacement = parent`: that writes through
  }
  if (root.IsSequence())
    root[static_cast<std::size_t>(std::stoul(path[0]))] = replacement;
  else
    root[path[0]] = replacement;
  return "";
}

}  // namespace strata::hw

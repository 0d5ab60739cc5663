// Rewriting YAML trees at dot paths ("node.nics.link", "systems.0.nodes": mapping keys and sequence indices),
// for sweep points and what-if scale factors. yaml-cpp nodes are references: `a = b` on an existing node and
// assigning a plain value write through to every tree sharing that node. These functions never do: the
// mappings and sequences on the way to the changed entry are copied (their other entries, and the keys with
// their line numbers, are shared), so a value node may be placed in many trees and each tree changed alone.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace strata::hw {

// "a.b.0" -> {"a", "b", "0"}; empty segments are kept (and later reported as missing).
std::vector<std::string> split_dot_path(std::string_view path);

// A new mapping or sequence holding the same entries (shared) as `node`; other nodes are returned as they
// are.
YAML::Node shallow_copy(const YAML::Node& node);

// A deep copy of `node` whose nodes carry no position: a value written in one file and placed into the tree
// of another, so that errors about it name the field without pointing at a line of the wrong file.
// (YAML::Clone gives every node line 1 instead.)
YAML::Node copy_without_marks(const YAML::Node& node);

// Sets `value` at `path` below `root` (a tree of its own: its top-level mapping is changed in place). Every
// segment but the last must exist: a mapping key, or a sequence index below its size; the last may be a new
// key of a mapping (strict readers then report it if it is not a field). Returns an empty string, or what is
// wrong ("'systems.4' does not exist: systems has 2 entries").
std::string set_at_path(YAML::Node root, std::span<const std::string> path, const YAML::Node& value);

}  // namespace strata::hw

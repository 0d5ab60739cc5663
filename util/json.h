// Strict JSON input, declared once: nlohmann::json keeps the last of repeated keys silently and reports
// syntax errors without the file's name, so every reader of user JSON (profile databases, cost parameters,
// measurement plans) parses through here. The error type is the caller's (ConfigError for configuration
// files, InputError for command-line inputs); its message starts with `source`.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace strata::util {

// Parses `text`; a key repeated in one object, invalid syntax and numbers beyond double ("1e999") throw Error
// naming `source`. The parser callback sees every key before it is stored, so a key already seen in the same
// object is caught (one key set per open object).
template <class Error>
nlohmann::json parse_json_strict(std::string_view text, std::string_view source) {
  std::vector<std::set<std::string>> open_objects;
  auto check = [&](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) {
      open_objects.emplace_back();
    } else if (event == Event::object_end) {
      if (!open_objects.empty()) open_objects.pop_back();
    } else if (event == Event::key && !open_objects.empty()) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second)
        throw Error(fmt::format("{}: key \"{}\" appears twice in one object", source, key));
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), check);
  } catch (const nlohmann::json::exception& e) {
    throw Error(fmt::format("{}: not valid JSON: {}", source, e.what()));
  }
}

}  // namespace strata::util

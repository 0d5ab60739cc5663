#include "hw/units.h"

#include <array>
#include <charconv>
#include <cmath>
#include <utility>

#include <fmt/format.h>

#include "util/error.h"

namespace strata::units {
namespace {

struct UnitFactor {
  std::string_view unit;
  double factor;
};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits "12.5 GB/s" into 12.5 and "GB/s"; requires a finite non-negative number and a non-empty unit.
std::optional<std::pair<double, std::string_view>> split_number(std::string_view text) {
  text = trim(text);
  double value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || !std::isfinite(value) || value < 0) return std::nullopt;
  std::string_view unit = trim(std::string_view(end, text.data() + text.size() - end));
  if (unit.empty()) return std::nullopt;
  return std::pair{value, unit};
}

template <std::size_t N>
std::optional<double> parse_with(std::string_view text, const std::array<UnitFactor, N>& table) {
  const auto parts = split_number(text);
  if (!parts) return std::nullopt;
  for (const auto& [unit, factor] : table)
    if (parts->second == unit) return parts->first * factor;
  return std::nullopt;
}

constexpr std::array kBandwidth{
    UnitFactor{"B/s", 1.0},        UnitFactor{"KB/s", kKB},       UnitFactor{"MB/s", kMB},
    UnitFactor{"GB/s", kGB},       UnitFactor{"TB/s", kTB},       UnitFactor{"KiB/s", kKiB},
    UnitFactor{"MiB/s", kMiB},     UnitFactor{"GiB/s", kGiB},     UnitFactor{"Mb/s", kMB / 8},
    UnitFactor{"Gb/s", kGB / 8},   UnitFactor{"Tb/s", kTB / 8},   UnitFactor{"Gbps", kGB / 8},
    UnitFactor{"Mbit/s", kMB / 8}, UnitFactor{"Gbit/s", kGB / 8}, UnitFactor{"Mbps", kMB / 8}};
constexpr std::array kDuration{UnitFactor{"ps", 1e-12}, UnitFactor{"ns", kNano}, UnitFactor{"us", kMicro},
                               UnitFactor{"ms", kMilli}, UnitFactor{"s", 1.0}};
constexpr std::array kFlops{UnitFactor{"GFLOPS", 1e9}, UnitFactor{"TFLOPS", 1e12},
                            UnitFactor{"PFLOPS", 1e15}};

}  // namespace

std::optional<double> parse_bandwidth(std::string_view text) {
  auto v = parse_with(text, kBandwidth);
  if (v && *v <= 0) return std::nullopt;
  return v;
}
std::optional<double> parse_bytes(std::string_view text) {
  try {
    return static_cast<double>(util::parse_size(text, "size", 0));
  } catch (const util::InputError&) {
    return std::nullopt;
  }
}
std::optional<double> parse_duration(std::string_view text) {
  return parse_with(text, kDuration);
}
std::optional<double> parse_flops(std::string_view text) {
  auto v = parse_with(text, kFlops);
  if (v && *v <= 0) return std::nullopt;
  return v;
}

std::string format_bytes(double bytes) {
  constexpr std::array names{"B", "KiB", "MiB", "GiB", "TiB"};
  std::size_t i = 0;
  while (bytes >= 1024.0 && i + 1 < names.size()) {
    bytes /= 1024.0;
    ++i;
  }
  return i == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.2f} {}", bytes, names[i]);
}

std::string format_duration(double seconds) {
  if (seconds < 1e-6) return fmt::format("{:.1f} ns", seconds * 1e9);
  if (seconds < 1e-3) return fmt::format("{:.2f} us", seconds * 1e6);
  if (seconds < 1.0) return fmt::format("{:.3f} ms", seconds * 1e3);
  return fmt::format("{:.3f} s", seconds);
}

std::string format_bandwidth(double bytes_per_second) {
  // Emulated and slow links (25 MB/s) would read "0.0 GB/s".
  if (bytes_per_second < 0.1 * kGB) return fmt::format("{:.2f} MB/s", bytes_per_second / kMB);
  return fmt::format("{:.1f} GB/s", bytes_per_second / kGB);
}

}  // namespace strata::units

// Quantities with explicit units. strata stores bytes, seconds, bytes/second and FLOP/s (SI) internally;
// text input must carry a unit so that "GB/s" vs "GiB/s" vs "Gb/s" confusions cannot happen silently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/parse.h"

namespace strata::units {

inline constexpr double kKB = 1e3, kMB = 1e6, kGB = 1e9, kTB = 1e12;
inline constexpr double kKiB = 1024.0, kMiB = kKiB * 1024, kGiB = kMiB * 1024, kTiB = kGiB * 1024;
inline constexpr double kMicro = 1e-6, kNano = 1e-9, kMilli = 1e-3;

// Each parser returns nullopt when the text is not a positive/non-negative number followed by a known unit.
// Bandwidth: "450 GB/s", "400 Gb/s" (bits), "12 GiB/s", "1.5 TB/s", "800 MB/s".
std::optional<double> parse_bandwidth(std::string_view text);
// Size in bytes by util::parse_size's rule (util/parse.h): "8B", "64 KiB", "4GiB", "1 GB", "80 GiB", "1k",
// plain "1048576"; K/M/G/T and KiB.. are powers of 1024, KB/MB/GB/TB powers of 1000; whole bytes only.
std::optional<double> parse_bytes(std::string_view text);
// Duration in seconds: "0.6 us", "500 ns", "1.2 ms", "2 s".
std::optional<double> parse_duration(std::string_view text);
// Throughput in FLOP/s: "989.4 TFLOPS", "19.5 TFLOPS", "2.25 PFLOPS", "900 GFLOPS".
std::optional<double> parse_flops(std::string_view text);

// Human-readable forms used in tables ("1.00 GiB", "3.40 us", "370.8 GB/s").
std::string format_bytes(double bytes);
std::string format_duration(double seconds);
std::string format_bandwidth(double bytes_per_second);

// The unit lists the parsers accept, for error messages.
inline constexpr std::string_view kBandwidthUnits =
    "B/s, KB/s, MB/s, GB/s, TB/s, KiB/s, MiB/s, GiB/s, Mb/s, Gb/s, Tb/s, Gbps, Mbit/s, Gbit/s, Mbps";
inline constexpr std::string_view kByteUnits = util::kSizeRule;
inline constexpr std::string_view kDurationUnits = "ps, ns, us, ms, s";
inline constexpr std::string_view kFlopsUnits = "GFLOPS, TFLOPS, PFLOPS";

}  // namespace strata::units

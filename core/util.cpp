// Hashing, strict parsing of sizes and shapes, formatting, time stamps.
#include "core/util.hpp"

#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <limits>

#include "ktune/error.hpp"

namespace ktune {

Hasher& Hasher::add(std::string_view bytes) {
  // Length first, so that ("ab","c") and ("a","bc") differ.
  std::uint64_t len = bytes.size();
  for (int i = 0; i < 8; ++i) {
    unsigned char c = static_cast<unsigned char>(len >> (8 * i));
    a_ = (a_ ^ c) * 0x100000001b3ULL;
    b_ = (b_ ^ c) * 0x00000100000001b3ULL + 0x9e3779b97f4a7c15ULL;
  }
  for (unsigned char c : bytes) {
    a_ = (a_ ^ c) * 0x100000001b3ULL;
    b_ = ((b_ ^ c) * 0x00000100000001b3ULL) ^ (b_ >> 29);
  }
  return *this;
}

Hasher& Hasher::add(std::int64_t v) { return add(std::to_string(v)); }

std::string Hasher::hex() const {
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx", static_cast<unsigned long long>(a_),
                static_cast<unsigned long long>(b_));
  return buf;
}

std::uint64_t parse_size(std::string_view text, std::string_view what) {
  auto fail = [&](const std::string& why) -> std::uint64_t {
    throw Error(ErrorCode::kInvalidArgument,
                std::string(what) + ": '" + std::string(text) + "' " + why);
  };
  if (text.empty()) return fail("is empty (expected a count such as 1024, 4K, 256M or 1G)");
  std::uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc::result_out_of_range) return fail("is too large");
  if (ec != std::errc() || end == text.data())
    return fail("is not a non-negative integer (expected e.g. 1024, 4K, 256M or 1G)");
  std::string_view suffix(end, text.data() + text.size() - end);
  int shift = 0;
  if (suffix.empty()) {
    shift = 0;
  } else if (suffix == "K" || suffix == "k" || suffix == "Ki") {
    shift = 10;
  } else if (suffix == "M" || suffix == "Mi") {
    shift = 20;
  } else if (suffix == "G" || suffix == "Gi") {
    shift = 30;
  } else if (suffix == "T" || suffix == "Ti") {
    shift = 40;
  } else {
    return fail("has an unknown suffix '" + std::string(suffix) +
                "' (use K, M, G or T: powers of 2)");
  }
  if (shift && value > (std::numeric_limits<std::uint64_t>::max() >> shift))
    return fail("is too large");
  return value << shift;
}

std::vector<std::uint64_t> parse_shape(std::string_view text, std::size_t count,
                                       std::string_view what) {
  std::vector<std::string> parts = split(text, 'x');
  if (parts.size() != count) {
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": '" + std::string(text) +
                                                 "' must have " + std::to_string(count) +
                                                 " dimensions separated by 'x'");
  }
  std::vector<std::uint64_t> out;
  for (const auto& p : parts) out.push_back(parse_size(p, what));
  return out;
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof(buf),
                bytes == static_cast<double>(static_cast<long long>(bytes)) ? "%.0f %s" : "%.2f %s",
                bytes, units[u]);
  return buf;
}

std::string format_count(std::uint64_t n) {
  const char* suffix[] = {"", "K", "M", "G", "T"};
  int s = 0;
  while (n >= 1024 && n % 1024 == 0 && s < 4) {
    n /= 1024;
    ++s;
  }
  return std::to_string(n) + suffix[s];
}

std::string utc_now() {
  // Milliseconds, so that a run's rows can be placed on a time axis (ktune report).
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const auto ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[40];
  const std::size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof(buf) - n, ".%03dZ", static_cast<int>(ms));
  return buf;
}

std::optional<double> parse_utc(std::string_view text) {
  std::tm tm{};
  int ms = 0;
  char z = 0;
  const std::string s(text);
  const int fields = std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &tm.tm_year, &tm.tm_mon,
                                 &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec);
  if (fields != 6 || s.size() < 20) return std::nullopt;
  if (s[19] == '.') {
    if (std::sscanf(s.c_str() + 20, "%3d%c", &ms, &z) != 2 || z != 'Z') return std::nullopt;
  } else if (s[19] != 'Z') {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(timegm(&tm)) + ms / 1000.0;
}

std::vector<std::string> split(std::string_view text, char sep) {
  std::vector<std::string> out;
  for_each_part(text, sep, [&](std::string_view part) { out.emplace_back(part); });
  return out;
}

std::vector<std::string> split_paths(const char* text) {
  std::vector<std::string> out;
  if (!text) return out;
  for (auto& part : split(text, ':'))
    if (!part.empty()) out.push_back(std::move(part));
  return out;
}

// A loop of four compares: the lookup of a first call trims each part of a few hundred keys and
// configurations, where find_first_not_of's search of the set cost about 80 instructions a part.
std::string_view trim_view(std::string_view text) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  std::size_t b = 0, e = text.size();
  while (b < e && space(text[b])) ++b;
  if (b == e) return {};
  while (space(text[e - 1])) --e;
  return text.substr(b, e - b);
}

std::string trim(std::string_view text) { return std::string(trim_view(text)); }

}  // namespace ktune

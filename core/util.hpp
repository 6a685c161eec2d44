// Small shared helpers: hashing, strict size/shape parsing, time stamps, paths.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ktune {

// 128-bit FNV-1a style hash (two independent 64-bit lanes), for cache keys and template hashes.
// Not cryptographic: it identifies content, it does not authenticate it.
class Hasher {
 public:
  Hasher& add(std::string_view bytes);
  Hasher& add(std::int64_t v);
  std::string hex() const;  // 32 hex digits

 private:
  std::uint64_t a_ = 0xcbf29ce484222325ULL;
  std::uint64_t b_ = 0x84222325cbf29ce4ULL;
};

// Milliseconds from a to b on the steady clock (the runtime's and the benches' timings).
inline double ms_between(std::chrono::steady_clock::time_point a,
                         std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// Parses a count such as "1024", "4K", "256M", "1G" (binary multiples: K = 2^10), strictly:
// no sign, no fraction, no junk, no overflow. Throws Error(kInvalidArgument) naming `what`.
std::uint64_t parse_size(std::string_view text, std::string_view what);

// Parses "MxNxK" style shapes of `count` dimensions, each a size as parse_size accepts.
std::vector<std::uint64_t> parse_shape(std::string_view text, std::size_t count,
                                       std::string_view what);

// "1 GiB"-style rendering of a byte count, and "1G"-style rendering of an element count.
std::string format_bytes(double bytes);
std::string format_count(std::uint64_t n);

// ISO 8601 UTC time stamp, e.g. "2026-11-21T22:15:03Z".
std::string utc_now();  // "2026-11-22T00:12:20.123Z"
// Seconds since the epoch of a time utc_now() wrote (with or without milliseconds), or nullopt.
std::optional<double> parse_utc(std::string_view text);

// Calls f with each part of `text` between the separators, as views into it; split() copies them.
template <typename F>
void for_each_part(std::string_view text, char sep, F&& f) {
  for (std::size_t start = 0;;) {
    const std::size_t pos = text.find(sep, start);
    f(text.substr(start, pos == text.npos ? text.npos : pos - start));
    if (pos == text.npos) return;
    start = pos + 1;
  }
}
std::vector<std::string> split(std::string_view text, char sep);
// A PATH-style list ("a:b::c"): its non-empty parts; none for null or "".
std::vector<std::string> split_paths(const char* text);
// `text` without leading and trailing blanks (space, tab, CR, LF): a view into it, or a copy.
std::string_view trim_view(std::string_view text);
std::string trim(std::string_view text);

}  // namespace ktune

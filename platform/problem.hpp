// Problem keys and configurations: the two strings every stored result is indexed by.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <boost/container/flat_map.hpp>

namespace ktune {

// One problem of a family: categorical attributes (dtype, op, layout) and sizes (n, m, k, align).
// Its key is canonical: "name=value" pairs sorted by name, joined by ';'.
struct Problem {
  std::string family;
  std::map<std::string, std::string> attrs;
  std::map<std::string, std::int64_t> sizes;

  std::string key() const;
  // Parses a key as key() writes it. Throws Error(kInvalidArgument) naming what is malformed.
  static Problem parse(const std::string& family, std::string_view key);

  const std::string& attr(const std::string& name) const;  // throws when missing
  std::int64_t size(const std::string& name) const;        // throws when missing
  bool operator==(const Problem& o) const = default;
};

// Distance between two problems of the same attributes: sum over sizes of |log2(1+a) - log2(1+b)|.
// Infinity when family or attributes differ, or the sizes have different names.
double problem_distance(const Problem& a, const Problem& b);
// The same, with `per_attribute` added for each attribute the two differ in (another GEMM op, say)
// instead of infinity; still infinite for another family or other size or attribute names.
double problem_distance(const Problem& a, const Problem& b, double per_attribute);
// problem_distance(a, Problem::parse(family, key), per_attribute), read off the key without making
// the Problem; nullopt where Problem::parse would throw. The lookup measures every measured problem
// of a family this way (a first call of a GEMM shape nobody tuned: a few hundred) and parses only
// the nearest.
std::optional<double> key_distance(const Problem& a, std::string_view family, std::string_view key,
                                   double per_attribute);

// Parameter values of one candidate, by name, in name order. A flat map (one sorted array): a first
// call's lookup of a shape nobody tuned parses, copies and reads a few hundred configurations, and
// as a std::map (a node per parameter) their allocations and walks were a quarter of its
// instructions. An insertion moves the values: hold no pointer to one across it.
using Config = boost::container::flat_map<std::string, std::int64_t, std::less<>>;

// Two parameter names in a Config's order (unsigned bytes, as std::string compares): -1, 0 or 1.
// Inline, a byte at a time: names are a few capitals, and a call of memcmp for each took most of
// a walk over a configuration.
inline int compare_names(std::string_view a, std::string_view b) {
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i)
    if (a[i] != b[i])
      return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[i]) ? -1 : 1;
  return a.size() < b.size() ? -1 : a.size() > b.size() ? 1 : 0;
}

// "NAME=value,NAME=value" sorted by name; parse_config is its inverse (throws on malformed text).
std::string to_string(const Config& config);
Config parse_config(std::string_view text);
// The value of parameter `name`; where it is missing, an error that `owner` begins ("gemm config:
// missing BM"). The families' rules and models look up a few parameters per call, hundreds of
// calls per lookup: this compares names inline, where std::map's find with a C string called
// strlen and memcmp at each node.
std::int64_t config_value(const Config& config, std::string_view name, std::string_view owner);

}  // namespace ktune

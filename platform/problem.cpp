// Canonical problem keys and configuration strings, and the log-scale problem distance.
#include "platform/problem.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <vector>

#include "core/util.hpp"
#include "ktune/error.hpp"

namespace ktune {
namespace {

bool is_integer(std::string_view s) {
  if (s.empty()) return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

// ASCII, whatever the program's locale (std::isalnum asks it, a call per byte).
bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool is_name(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), is_name_char);
}

// One part of a problem key, name=value with both trimmed: false where it is not one (no '=', a
// name that is not a name, no value). Problem::parse and key_distance read keys alike through it.
bool split_key_part(std::string_view part, std::string_view& name, std::string_view& value) {
  const size_t eq = part.find('=');
  if (eq == std::string_view::npos) return false;
  name = trim_view(part.substr(0, eq));
  value = trim_view(part.substr(eq + 1));
  return is_name(name) && !value.empty();
}

// `what` and `name` make the message ("config BM"), built only for an error: a first call's lookup
// parses hundreds of keys and configurations.
std::int64_t to_int(std::string_view s, std::string_view what, std::string_view name) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size())
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + " " + std::string(name) + ": '" +
                                                 std::string(s) + "' is not an integer");
  return v;
}

// A parameter name looked up in a Config, compared a byte at a time as std::string compares
// (unsigned), so that the map's order holds.
struct ShortName {
  std::string_view text;
};
[[maybe_unused]] bool operator<(const std::string& a, ShortName b) {
  return compare_names(a, b.text) < 0;
}
[[maybe_unused]] bool operator<(ShortName a, const std::string& b) {
  return compare_names(a.text, b) < 0;
}

}  // namespace

std::int64_t config_value(const Config& config, std::string_view name, std::string_view owner) {
  const auto it = config.find(ShortName{name});
  if (it == config.end())
    throw Error(ErrorCode::kInvalidArgument,
                std::string(owner) + " config: missing " + std::string(name));
  return it->second;
}

std::string Problem::key() const {
  // attrs and sizes are each sorted maps; merge them by name so the key is one sorted list.
  std::map<std::string, std::string> all(attrs.begin(), attrs.end());
  for (const auto& [k, v] : sizes) all[k] = std::to_string(v);
  std::string out;
  for (const auto& [k, v] : all) out += (out.empty() ? "" : ";") + k + "=" + v;
  return out;
}

Problem Problem::parse(const std::string& family, std::string_view key) {
  Problem p;
  p.family = family;
  if (trim_view(key).empty()) throw Error(ErrorCode::kInvalidArgument, "problem: empty key");
  for_each_part(key, ';', [&](std::string_view part) {
    std::string_view name_view, value;
    if (!split_key_part(part, name_view, value))
      throw Error(ErrorCode::kInvalidArgument,
                  "problem: '" + std::string(part) + "' is not name=value");
    const std::string name(name_view);
    if (p.attrs.count(name) || p.sizes.count(name))
      throw Error(ErrorCode::kInvalidArgument, "problem: '" + name + "' given twice");
    if (is_integer(value))
      p.sizes.emplace(name, to_int(value, "problem", name));
    else
      p.attrs.emplace(name, value);
  });
  return p;
}

const std::string& Problem::attr(const std::string& name) const {
  auto it = attrs.find(name);
  if (it == attrs.end())
    throw Error(ErrorCode::kInvalidArgument, "problem " + key() + ": missing '" + name + "'");
  return it->second;
}

std::int64_t Problem::size(const std::string& name) const {
  auto it = sizes.find(name);
  if (it == sizes.end())
    throw Error(ErrorCode::kInvalidArgument, "problem " + key() + ": missing '" + name + "'");
  return it->second;
}

double problem_distance(const Problem& a, const Problem& b) {
  if (a.attrs != b.attrs) return std::numeric_limits<double>::infinity();
  return problem_distance(a, b, 0.0);
}

double problem_distance(const Problem& a, const Problem& b, double per_attribute) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (a.family != b.family || a.attrs.size() != b.attrs.size() || a.sizes.size() != b.sizes.size())
    return kInf;
  double d = 0;
  for (const auto& [name, value] : a.attrs) {
    auto it = b.attrs.find(name);
    if (it == b.attrs.end()) return kInf;
    if (it->second != value) d += per_attribute;
  }
  for (const auto& [name, va] : a.sizes) {
    auto it = b.sizes.find(name);
    if (it == b.sizes.end()) return kInf;
    d += std::fabs(std::log2(1.0 + std::max<double>(0, va)) -
                   std::log2(1.0 + std::max<double>(0, it->second)));
  }
  return d;
}

std::string to_string(const Config& config) {
  std::string out;
  out.reserve(config.size() * 12);
  char digits[24];
  for (const auto& [k, v] : config) {
    if (!out.empty()) out += ',';
    out += k;
    out += '=';
    out.append(digits, std::to_chars(digits, digits + sizeof(digits), v).ptr);
  }
  return out;
}

std::optional<double> key_distance(const Problem& a, std::string_view family, std::string_view key,
                                   double per_attribute) {
  // The key's parts, checked as Problem::parse checks them.
  struct Part {
    std::string_view name, value;
    bool size;
    std::int64_t v;
  };
  if (trim_view(key).empty()) return std::nullopt;
  std::vector<Part> parts;
  parts.reserve(8);
  bool bad = false;
  std::size_t sizes = 0;
  for_each_part(key, ';', [&](std::string_view part) {
    if (bad) return;
    std::string_view name, value;
    if (!split_key_part(part, name, value)) return void(bad = true);
    for (const Part& p : parts)
      if (p.name == name) return void(bad = true);
    if (is_integer(value)) {
      std::int64_t v = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc() || end != value.data() + value.size()) return void(bad = true);
      parts.push_back({name, value, true, v});
      ++sizes;
    } else {
      parts.push_back({name, value, false, 0});
    }
  });
  if (bad) return std::nullopt;
  // problem_distance's walk, in its order (the sum's rounding follows it).
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (a.family != family || a.attrs.size() != parts.size() - sizes || a.sizes.size() != sizes)
    return kInf;
  auto find = [&](const std::string& name, bool size) -> const Part* {
    for (const Part& p : parts)
      if (p.size == size && p.name == name) return &p;
    return nullptr;
  };
  double d = 0;
  for (const auto& [name, value] : a.attrs) {
    const Part* p = find(name, false);
    if (!p) return kInf;
    if (p->value != value) d += per_attribute;
  }
  for (const auto& [name, va] : a.sizes) {
    const Part* p = find(name, true);
    if (!p) return kInf;
    d += std::fabs(std::log2(1.0 + std::max<double>(0, va)) -
                   std::log2(1.0 + std::max<double>(0, p->v)));
  }
  return d;
}

namespace {

// parse_config of text as to_string writes it (NAME=value joined by ',', the names in order, no
// spaces), in one scan of it; false on anything else, which parse_config then reads part by part
// (and tells what is wrong). A first call's lookup parses a few hundred configurations.
bool parse_config_as_written(std::string_view text, Config& out) {
  Config::sequence_type seq;
  seq.reserve(static_cast<std::size_t>(std::count(text.begin(), text.end(), ',')) + 1);
  const char* p = text.data();
  const char* const end = p + text.size();
  while (true) {
    const char* name = p;
    while (p != end && is_name_char(*p)) ++p;
    if (p == name || p == end || *p != '=') return false;
    const std::string_view n(name, static_cast<std::size_t>(p - name));
    if (!seq.empty() && compare_names(seq.back().first, n) >= 0) return false;
    ++p;
    std::int64_t v = 0;
    const char* value_end = std::find(p, end, ',');
    const auto [at, ec] = std::from_chars(p, value_end, v);
    if (ec != std::errc() || at != value_end || at == p) return false;
    seq.emplace_back(std::string(n), v);
    if (value_end == end) break;
    p = value_end + 1;
  }
  out.adopt_sequence(boost::container::ordered_unique_range, std::move(seq));
  return true;
}

}  // namespace

Config parse_config(std::string_view text) {
  Config c;
  if (parse_config_as_written(text, c)) return c;
  if (trim_view(text).empty()) return c;
  for_each_part(text, ',', [&](std::string_view part) {
    const size_t eq = part.find('=');
    if (eq == std::string_view::npos)
      throw Error(ErrorCode::kInvalidArgument,
                  "config: '" + std::string(part) + "' is not NAME=value");
    const std::string_view name = trim_view(part.substr(0, eq));
    if (!is_name(name))
      throw Error(ErrorCode::kInvalidArgument,
                  "config: bad parameter name '" + std::string(name) + "'");
    const auto [it, fresh] = c.emplace(name, 0);
    if (!fresh)
      throw Error(ErrorCode::kInvalidArgument, "config: '" + std::string(name) + "' given twice");
    it->second = to_int(trim_view(part.substr(eq + 1)), "config", name);
  });
  return c;
}

}  // namespace ktune

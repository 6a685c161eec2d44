// Enumeration of a family's parameter space under its constraints.
#include "tuner/space.hpp"

#include <algorithm>
#include <limits>
#include <memory>

#include "families/family.hpp"
#include "ktune/error.hpp"

namespace ktune {

void SearchSpace::check_only(const Family& family, const Only& only) {
  const auto& params = family.params();
  for (const auto& entry : only) {
    // Named, not a structured binding: lambdas may not capture those before C++20 (clang).
    const std::string& name = entry.first;
    const std::vector<std::int64_t>& values = entry.second;
    auto p = std::find_if(params.begin(), params.end(),
                          [&](const Param& param) { return param.name == name; });
    if (p == params.end()) {
      std::string names;
      for (const auto& param : params) names += (names.empty() ? "" : ", ") + param.name;
      throw Error(ErrorCode::kInvalidArgument,
                  "--only: " + family.name() + " has no parameter " + name + " (" + names + ")");
    }
    for (std::int64_t v : values)
      if (std::find(p->values.begin(), p->values.end(), v) == p->values.end()) {
        std::string allowed;
        for (std::int64_t a : p->values)
          allowed += (allowed.empty() ? "" : ", ") + std::to_string(a);
        throw Error(ErrorCode::kInvalidArgument,
                    "--only: " + name + " takes " + allowed + ", not " + std::to_string(v));
      }
  }
}

SearchSpace::SearchSpace(const Family& family, const Problem& problem, const DeviceLimits& limits,
                         const Only& only) {
  check_only(family, only);
  const auto& params = family.params();
  // The values each parameter takes here (a subset where `only` names it), walked as an
  // odometer over one configuration's values in params() order, last parameter fastest. The
  // family's prefix parameters are walked first: a prefix it rules out skips all the rest at once.
  const std::size_t n = params.size();
  if (n == 0) return;
  const std::size_t prefix = std::min(family.prefix_params(), n);
  std::vector<std::vector<std::int64_t>> values(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto held = only.find(params[i].name);
    for (std::int64_t v : params[i].values)
      if (held == only.end() ||
          std::find(held->second.begin(), held->second.end(), v) != held->second.end())
        values[i].push_back(v);
    if (values[i].empty()) return;
  }
  // Rows are stored in name order (a Config's): the parameter each column takes its value from.
  std::vector<std::size_t> column(n);
  for (std::size_t i = 0; i < n; ++i) column[i] = i;
  std::sort(column.begin(), column.end(),
            [&](std::size_t a, std::size_t b) { return params[a].name < params[b].name; });
  for (std::size_t i : column) names_.push_back(params[i].name);
  const std::unique_ptr<SpaceRules> rules = family.space_rules(problem, limits);
  std::vector<std::int64_t> row(n);
  std::size_t rest = 1;  // combinations of the parameters after the prefix
  for (std::size_t i = prefix; i < n; ++i) rest *= values[i].size();
  // The prefix's head (Family::head_params) is ruled on first, the rest of the prefix under it.
  const std::size_t head = std::min(family.head_params(), prefix);
  std::size_t after_head = rest;  // combinations of the parameters after the head
  for (std::size_t i = head; i < prefix; ++i) after_head *= values[i].size();
  std::vector<std::size_t> digit(n, 0);
  // Visits every combination of parameters [lo, hi), the others held.
  auto walk = [&](std::size_t lo, std::size_t hi, auto&& visit) {
    for (std::size_t i = lo; i < hi; ++i) digit[i] = 0, row[i] = values[i][0];
    while (true) {
      visit();
      std::size_t i = hi;
      while (true) {
        if (i == lo) return;
        --i;
        if (++digit[i] < values[i].size()) {
          row[i] = values[i][digit[i]];
          break;
        }
        digit[i] = 0;
        row[i] = values[i][0];
      }
    }
  };
  auto after = [&] {
    if (prefix > 0 && !rules->prefix_ok(row.data())) {
      total_ += rest;
      return;
    }
    walk(prefix, n, [&] {
      ++total_;
      if (rules->ok(row.data())) {
        for (std::size_t i : column) values_.push_back(row[i]);
        ++size_;
      }
    });
  };
  walk(0, head, [&] {
    if (head > 0 && !rules->head_ok(row.data())) {
      total_ += after_head;
      return;
    }
    walk(head, prefix, after);
  });
  values_.shrink_to_fit();
  build_index();
}

std::uint64_t SearchSpace::hash_row(const std::int64_t* row) const {
  std::uint64_t h = 0x9e3779b97f4a7c15ull;  // a multiply-xorshift mix per value
  for (std::size_t p = 0; p < names_.size(); ++p) {
    h ^= static_cast<std::uint64_t>(row[p]) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
  }
  return h;
}

void SearchSpace::build_index() {
  if (size_ >= std::numeric_limits<std::uint32_t>::max() / 4)
    throw Error(ErrorCode::kInvalidArgument, "search space of " + std::to_string(size_) +
                                                 " configurations: more than ktune can index");
  std::size_t capacity = 16;
  while (capacity < 2 * size_) capacity *= 2;
  slots_.assign(capacity, 0);
  const std::size_t n = names_.size();
  for (std::size_t i = 0; i < size_; ++i) {
    std::size_t s = hash_row(&values_[i * n]) & (capacity - 1);
    while (slots_[s] != 0) s = (s + 1) & (capacity - 1);
    slots_[s] = static_cast<std::uint32_t>(i + 1);
  }
}

std::size_t SearchSpace::find_row(const std::int64_t* row) const {
  if (size_ == 0) return npos;
  const std::size_t n = names_.size(), mask = slots_.size() - 1;
  for (std::size_t s = hash_row(row) & mask; slots_[s] != 0; s = (s + 1) & mask) {
    const std::size_t i = slots_[s] - 1;
    if (std::equal(row, row + n, &values_[i * n])) return i;
  }
  return npos;
}

Config SearchSpace::at(std::size_t i) const {
  if (i >= size_)
    throw Error(ErrorCode::kInternal, "search space: no configuration " + std::to_string(i) +
                                          " of " + std::to_string(size_));
  Config c;
  const std::int64_t* row = values(i);
  for (std::size_t p = 0; p < names_.size(); ++p) c.emplace_hint(c.end(), names_[p], row[p]);
  return c;
}

std::vector<Config> SearchSpace::configs() const {
  std::vector<Config> out;
  out.reserve(size_);
  for (std::size_t i = 0; i < size_; ++i) out.push_back(at(i));
  return out;
}

std::size_t SearchSpace::index_of(const Config& config) const {
  if (config.size() != names_.size()) return npos;
  std::vector<std::int64_t> row;
  row.reserve(names_.size());
  std::size_t p = 0;
  for (const auto& [name, value] : config) {
    if (name != names_[p++]) return npos;
    row.push_back(value);
  }
  return find_row(row.data());
}

std::size_t SearchSpace::index_of(const std::string& config_text) const {
  try {
    return index_of(parse_config(config_text));
  } catch (const Error&) {
    return npos;  // not a configuration: none of ours
  }
}

}  // namespace ktune

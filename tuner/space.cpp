// Enumeration of a family's parameter space under its constraints.
#include "tuner/space.hpp"

#include <algorithm>

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
  // odometer over one configuration updated in place, last parameter fastest. The family's
  // prefix parameters are walked first: a prefix it rules out skips all the rest at once.
  const std::size_t n = params.size();
  if (n == 0) return;
  const std::size_t prefix = std::min(family.prefix_params(), n);
  std::vector<std::vector<std::int64_t>> values(n);
  Config c;
  std::vector<std::int64_t*> slot(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto held = only.find(params[i].name);
    for (std::int64_t v : params[i].values)
      if (held == only.end() ||
          std::find(held->second.begin(), held->second.end(), v) != held->second.end())
        values[i].push_back(v);
    if (values[i].empty()) return;
    slot[i] = &c[params[i].name];
  }
  std::size_t rest = 1;  // combinations of the parameters after the prefix
  for (std::size_t i = prefix; i < n; ++i) rest *= values[i].size();
  std::vector<std::size_t> digit(n, 0);
  // Visits every combination of parameters [lo, hi), the others held.
  auto walk = [&](std::size_t lo, std::size_t hi, auto&& visit) {
    for (std::size_t i = lo; i < hi; ++i) digit[i] = 0, *slot[i] = values[i][0];
    while (true) {
      visit();
      std::size_t i = hi;
      while (true) {
        if (i == lo) return;
        --i;
        if (++digit[i] < values[i].size()) {
          *slot[i] = values[i][digit[i]];
          break;
        }
        digit[i] = 0;
        *slot[i] = values[i][0];
      }
    }
  };
  walk(0, prefix, [&] {
    if (prefix > 0) {
      Config head;
      for (std::size_t i = 0; i < prefix; ++i) head[params[i].name] = *slot[i];
      if (!family.reject_prefix(head, problem, limits).empty()) {
        total_ += rest;
        return;
      }
    }
    walk(prefix, n, [&] {
      ++total_;
      if (family.reject(c, problem, limits).empty()) {
        index_.emplace(to_string(c), configs_.size());
        configs_.push_back(c);
      }
    });
  });
}

std::size_t SearchSpace::index_of(const std::string& config_text) const {
  auto it = index_.find(config_text);
  return it == index_.end() ? npos : it->second;
}

}  // namespace ktune

// Enumeration of a family's parameter space under its constraints.
#include "tuner/space.hpp"

#include "templates/family.hpp"

namespace ktune {

SearchSpace::SearchSpace(const Family& family, const Problem& problem, const DeviceLimits& limits) {
  const auto& params = family.params();
  std::vector<std::size_t> digit(params.size(), 0);
  if (params.empty()) return;
  while (true) {
    Config c;
    for (std::size_t i = 0; i < params.size(); ++i) c[params[i].name] = params[i].values[digit[i]];
    ++total_;
    if (family.reject(c, problem, limits).empty()) {
      index_.emplace(to_string(c), configs_.size());
      configs_.push_back(std::move(c));
    }
    // Odometer over the parameter values, last parameter fastest.
    std::size_t i = params.size();
    while (i > 0) {
      --i;
      if (++digit[i] < params[i].values.size()) break;
      digit[i] = 0;
      if (i == 0) return;
    }
  }
}

std::size_t SearchSpace::index_of(const std::string& config_text) const {
  auto it = index_.find(config_text);
  return it == index_.end() ? npos : it->second;
}

}  // namespace ktune

// The search space of one family for one problem on one device: every valid configuration.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "platform/device.hpp"
#include "platform/problem.hpp"

namespace ktune {

class Family;

class SearchSpace {
 public:
  // Parameters held to some of their values (`ktune tune --only`), by name.
  using Only = std::map<std::string, std::vector<std::int64_t>>;

  // Enumerates the cartesian product of the family's parameters, keeping what passes reject()
  // and, for each parameter named in `only`, takes one of the values given there. Throws
  // Error(kInvalidArgument) for a name or value `only` gives that the family does not have.
  SearchSpace(const Family& family, const Problem& problem, const DeviceLimits& limits,
              const Only& only = {});

  // Throws Error(kInvalidArgument) for a name or value in `only` that `family` does not have.
  static void check_only(const Family& family, const Only& only);

  const std::vector<Config>& configs() const { return configs_; }
  const Config& at(std::size_t i) const { return configs_.at(i); }
  std::size_t size() const { return configs_.size(); }
  std::size_t total() const { return total_; }  // before constraints (after `only`)
  // Index of a configuration given as to_string(config), or npos.
  std::size_t index_of(const std::string& config_text) const;
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

 private:
  std::vector<Config> configs_;
  std::unordered_map<std::string, std::size_t> index_;
  std::size_t total_ = 0;
};

}  // namespace ktune

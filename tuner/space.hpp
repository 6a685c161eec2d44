// The search space of one family for one problem on one device: every valid configuration.
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/device.hpp"
#include "runtime/problem.hpp"

namespace ktune {

class Family;

class SearchSpace {
 public:
  // Enumerates the cartesian product of the family's parameters, keeping what passes reject().
  SearchSpace(const Family& family, const Problem& problem, const DeviceLimits& limits);

  const std::vector<Config>& configs() const { return configs_; }
  const Config& at(std::size_t i) const { return configs_.at(i); }
  std::size_t size() const { return configs_.size(); }
  std::size_t total() const { return total_; }  // before constraints
  // Index of a configuration given as to_string(config), or npos.
  std::size_t index_of(const std::string& config_text) const;
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

 private:
  std::vector<Config> configs_;
  std::unordered_map<std::string, std::size_t> index_;
  std::size_t total_ = 0;
};

}  // namespace ktune

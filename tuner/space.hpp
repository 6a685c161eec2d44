// The search space of one family for one problem on one device: every valid configuration.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
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

  std::size_t size() const { return size_; }
  std::size_t total() const { return total_; }  // before constraints (after `only`)
  // The i-th configuration (materialised from the compact store).
  Config at(std::size_t i) const;
  // Every configuration, materialised: for small spaces (checks, tests).
  std::vector<Config> configs() const;
  // The parameters in name order (a Config's order), and the i-th configuration's values in that
  // order, as stored: what the strategies read without building maps.
  const std::vector<std::string>& names() const { return names_; }
  const std::int64_t* values(std::size_t i) const { return &values_.at(i * names_.size()); }
  // Index of a configuration given as to_string(config) or as a Config, or npos.
  std::size_t index_of(const std::string& config_text) const;
  std::size_t index_of(const Config& config) const;
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

 private:
  // An index of the rows: open addressing over a hash of each row's values (slots hold index + 1;
  // 0 is empty), at most half full.
  std::uint64_t hash_row(const std::int64_t* row) const;
  std::size_t find_row(const std::int64_t* row) const;
  void build_index();

  std::vector<std::string> names_;
  std::vector<std::int64_t> values_;  // size_ rows of names_.size() values
  std::vector<std::uint32_t> slots_;
  std::size_t size_ = 0;
  std::size_t total_ = 0;
};

}  // namespace ktune

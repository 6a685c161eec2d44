// Column-aligned text tables for the CLI's output.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace ktune::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.empty(); }
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

std::string fixed(double v, int digits);

}  // namespace ktune::cli

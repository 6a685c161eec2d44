// Column-aligned text tables for the CLI's output.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace ktune::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : header_(std::move(header)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.empty(); }
  // Columns whose cells are all numbers ("12", "0.5000", "49.50 TFLOPS"; "-" for none) are
  // right-aligned, so that digits line up; the rest left-aligned.
  void print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

std::string fixed(double v, int digits);

// Orders text with numbers in it by their values: "k=256" before "k=2048", "n=9" before "n=10".
bool natural_less(std::string_view a, std::string_view b);

}  // namespace ktune::cli

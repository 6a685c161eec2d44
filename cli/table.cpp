// Table printing.
#include "cli/table.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace ktune::cli {

namespace {

bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// A number, optionally followed by a unit of letters: "12", "-0.5", "4242.1 GB/s", "87%".
bool numeric_cell(std::string_view s) {
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  const std::size_t first = i;
  while (i < s.size() && (digit(s[i]) || s[i] == '.')) ++i;
  if (i == first || !digit(s[first])) return false;
  if (i == s.size()) return true;
  if (s[i] == '%' && i + 1 == s.size()) return true;
  if (s[i] != ' ') return false;
  for (++i; i < s.size(); ++i)
    if (!std::isalpha(static_cast<unsigned char>(s[i])) && s[i] != '/') return false;
  return true;
}

}  // namespace

void Table::print(std::ostream& out) const {
  std::vector<std::size_t> width(header_.size(), 0);
  std::vector<bool> right(header_.size(), false);
  for (std::size_t i = 0; i < header_.size(); ++i) {
    width[i] = header_[i].size();
    bool any = false, all = true;
    for (const auto& r : rows_) {
      if (i >= r.size() || r[i].empty() || r[i] == "-") continue;
      any = true;
      all = all && numeric_cell(r[i]);
    }
    right[i] = any && all;
  }
  for (const auto& r : rows_)
    for (std::size_t i = 0; i < r.size() && i < width.size(); ++i)
      width[i] = std::max(width[i], r[i].size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string text;
    for (std::size_t i = 0; i < width.size(); ++i) {
      const std::string cell = i < cells.size() ? cells[i] : "";
      const std::string pad(width[i] - std::min(width[i], cell.size()), ' ');
      text += right[i] ? pad + cell : cell + pad;
      if (i + 1 < width.size()) text += "  ";
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out << text << '\n';
  };
  line(header_);
  std::vector<std::string> rule;
  for (auto w : width) rule.push_back(std::string(w, '-'));
  line(rule);
  for (const auto& r : rows_) line(r);
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

bool natural_less(std::string_view a, std::string_view b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      std::size_t ei = i, ej = j;
      while (ei < a.size() && digit(a[ei])) ++ei;
      while (ej < b.size() && digit(b[ej])) ++ej;
      // Leading zeros do not make a number larger.
      std::size_t si = i, sj = j;
      while (si + 1 < ei && a[si] == '0') ++si;
      while (sj + 1 < ej && b[sj] == '0') ++sj;
      const std::string_view na = a.substr(si, ei - si), nb = b.substr(sj, ej - sj);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = ei;
      j = ej;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

}  // namespace ktune::cli

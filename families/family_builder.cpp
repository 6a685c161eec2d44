// FamilyBuilder: a family described in C++ becomes the text of a family file, which is read and
// checked by the family-file reader itself, so that both ways of describing a family mean the
// same, are checked the same and hash the same.
#include "ktune/family_builder.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "families/file_family.hpp"
#include "families/registry.hpp"
#include "ktune/error.hpp"

namespace fs = std::filesystem;

namespace ktune {
namespace {

// A TOML basic string: quotes, backslashes and control characters escaped.
std::string quote(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// A real as TOML reads it back exactly (finite only: the reader refuses the rest).
std::string real(double v, const std::string& what) {
  if (!std::isfinite(v))
    throw Error(ErrorCode::kInvalidArgument, what + ": not a finite number");
  std::ostringstream s;
  s.precision(17);
  s << v;
  std::string text = s.str();
  if (text.find_first_of(".eE") == std::string::npos) text += ".0";
  return text;
}

std::string list(const std::vector<std::string>& items, bool quoted) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i)
    out += (i ? ", " : "") + (quoted ? quote(items[i]) : items[i]);
  return out + "]";
}

std::string problem_table(const char* header, const ProblemSpec& p) {
  std::string out = std::string("\n[[") + header + "]]\n";
  for (const auto& [axis, value] : p.sizes()) out += quote(axis) + " = " + std::to_string(value) + "\n";
  for (const auto& [axis, value] : p.attrs()) out += quote(axis) + " = " + quote(value) + "\n";
  return out;
}

const char* role_name(Role r) {
  switch (r) {
    case Role::kIn:
      return "in";
    case Role::kOut:
      return "out";
    default:
      return "inout";
  }
}

std::string fill_text(const Fill& f, const std::string& what) {
  switch (f.kind) {
    case Fill::Kind::kUniform:
      return "{ kind = \"uniform\", min = " + real(f.a, what) + ", max = " + real(f.b, what) + " }";
    case Fill::Kind::kNormal:
      return "{ kind = \"normal\", mean = " + real(f.a, what) + ", deviation = " + real(f.b, what) +
             " }";
    case Fill::Kind::kIntegers:
      return "{ kind = \"integers\", min = " + std::to_string(static_cast<std::int64_t>(f.a)) +
             ", max = " + std::to_string(static_cast<std::int64_t>(f.b)) + " }";
    case Fill::Kind::kConstant:
      return "{ kind = \"constant\", value = " + real(f.a, what) + " }";
    default:
      return "";
  }
}

std::string tolerance_text(const Tolerance& t, const std::string& what) {
  switch (t.kind) {
    case Tolerance::Kind::kAbsRel:
      return "{ abs = " + real(t.abs, what) + ", rel = " + real(t.rel, what) + " }";
    case Tolerance::Kind::kUlps:
      return "{ ulps = " + std::to_string(t.ulps) + " }";
    default:
      return "\"exact\"";
  }
}

}  // namespace

FamilyBuilder::FamilyBuilder(std::string name) : name_(std::move(name)) {}

FamilyBuilder& FamilyBuilder::description(std::string text) {
  description_ = std::move(text);
  return *this;
}

FamilyBuilder& FamilyBuilder::source_file(std::string path) {
  source_path_ = fs::absolute(path).lexically_normal().string();
  source_name_ = fs::path(source_path_).filename().string();
  source_text_.clear();
  inline_source_ = false;
  return *this;
}

FamilyBuilder& FamilyBuilder::source_text(std::string file_name, std::string text,
                                          std::string include_folder) {
  source_name_ = std::move(file_name);
  source_text_ = std::move(text);
  include_folder_ = fs::absolute(include_folder).lexically_normal().string();
  source_path_.clear();
  inline_source_ = true;
  return *this;
}

FamilyBuilder& FamilyBuilder::options(std::vector<std::string> nvrtc_options) {
  options_ = std::move(nvrtc_options);
  return *this;
}

FamilyBuilder& FamilyBuilder::kernel(std::string name_template) {
  kernel_ = std::move(name_template);
  return *this;
}

FamilyBuilder& FamilyBuilder::axis(std::string name, std::int64_t min, std::int64_t max,
                                   std::int64_t def, std::string help) {
  axes_.push_back(quote(name) + " = { min = " + std::to_string(min) + ", max = " +
                  std::to_string(max) + ", default = " + std::to_string(def) +
                  ", help = " + quote(help) + " }");
  return *this;
}

FamilyBuilder& FamilyBuilder::axis(std::string name, std::vector<std::string> values,
                                   std::string def, std::string help) {
  axes_.push_back(quote(name) + " = { values = " + list(values, true) + ", default = " +
                  quote(def) + ", help = " + quote(help) + " }");
  return *this;
}

FamilyBuilder& FamilyBuilder::derived(std::string name, std::string expression) {
  derived_.push_back(quote(name) + " = " + quote(expression));
  return *this;
}

FamilyBuilder& FamilyBuilder::parameter(std::string name, std::vector<std::int64_t> values,
                                        std::string help) {
  std::vector<std::string> v;
  for (std::int64_t x : values) v.push_back(std::to_string(x));
  parameters_.push_back("\n[[parameter]]\nname = " + quote(name) + "\nvalues = " + list(v, false) +
                        "\nhelp = " + quote(help) + "\n");
  return *this;
}

FamilyBuilder& FamilyBuilder::constraint(std::string rule, std::string why) {
  constraints_.push_back("\n[[constraint]]\nwhy = " + quote(why) + "\nrule = " + quote(rule) +
                         "\n");
  return *this;
}

FamilyBuilder& FamilyBuilder::launch(std::vector<std::string> grid, std::vector<std::string> block,
                                     std::string shared) {
  launch_ = "\n[launch]\ngrid = " + list(grid, true) + "\nblock = " + list(block, true) +
            "\nshared = " + quote(shared) + "\n";
  return *this;
}

FamilyBuilder& FamilyBuilder::buffer(std::string name, std::string type, std::string length,
                                     Role role, Fill fill) {
  std::string t = "\n[[argument]]\nname = " + quote(name) + "\ntype = " + quote(type) +
                  "\nlength = " + quote(length) + "\nrole = \"" + role_name(role) + "\"\n";
  if (fill.kind != Fill::Kind::kDefault)
    t += "fill = " + fill_text(fill, name_ + ": buffer " + name + ": fill") + "\n";
  arguments_.push_back(t);
  return *this;
}

FamilyBuilder& FamilyBuilder::scalar(std::string name, std::string type, std::string value) {
  arguments_.push_back("\n[[argument]]\nname = " + quote(name) + "\nscalar = " + quote(type) +
                       "\nvalue = " + quote(value) + "\n");
  return *this;
}

FamilyBuilder& FamilyBuilder::reference(std::string name_template, std::vector<std::string> grid,
                                        std::vector<std::string> block, Tolerance tolerance,
                                        std::string shared) {
  verify_ = "\n[verify]\nreference = " + quote(name_template) + "\ngrid = " + list(grid, true) +
            "\nblock = " + list(block, true) + "\nshared = " + quote(shared) + "\ntolerance = " +
            tolerance_text(tolerance, name_ + ": reference tolerance") + "\n";
  return *this;
}

FamilyBuilder& FamilyBuilder::metric(std::string work, std::string unit) {
  metric_ = "\n[metric]\nwork = " + quote(work) + "\nunit = " + quote(unit) + "\n";
  return *this;
}

FamilyBuilder& FamilyBuilder::default_config(std::map<std::string, std::int64_t> values) {
  defaults_ = std::move(values);
  return *this;
}

FamilyBuilder& FamilyBuilder::check_problem(ProblemSpec problem) {
  check_.push_back(std::move(problem));
  return *this;
}

FamilyBuilder& FamilyBuilder::tune_problem(ProblemSpec problem) {
  tune_.push_back(std::move(problem));
  return *this;
}

std::string FamilyBuilder::family_file() const {
  std::string t = "# Written by ktune::FamilyBuilder.\n";
  t += "name = " + quote(name_) + "\n";
  if (!description_.empty()) t += "description = " + quote(description_) + "\n";
  t += "source = " + quote(source_name_) + "\n";
  if (!kernel_.empty()) t += "kernel = " + quote(kernel_) + "\n";
  if (!options_.empty()) t += "options = " + list(options_, true) + "\n";
  if (!axes_.empty()) {
    t += "\n[axes]\n";
    for (const auto& a : axes_) t += a + "\n";
  }
  if (!derived_.empty()) {
    t += "\n[derived]\n";
    for (const auto& d : derived_) t += d + "\n";
  }
  for (const auto& p : parameters_) t += p;
  for (const auto& c : constraints_) t += c;
  t += launch_;
  for (const auto& a : arguments_) t += a;
  t += verify_ + metric_;
  if (!defaults_.empty()) {
    t += "\n[default]\n";
    for (const auto& [k, v] : defaults_) t += quote(k) + " = " + std::to_string(v) + "\n";
  }
  for (const auto& p : check_) t += problem_table("check", p);
  for (const auto& p : tune_) t += problem_table("tune", p);
  return t;
}

void add_family(const FamilyBuilder& b) {
  // Messages name the family as built in code; a source file is read from its own folder.
  if (b.source_name_.empty())
    throw Error(ErrorCode::kInvalidArgument,
                "family '" + b.name_ + "' (FamilyBuilder): no source (source_file or source_text)");
  const std::string folder =
      b.inline_source_ ? b.include_folder_ : fs::path(b.source_path_).parent_path().string();
  // Named so in messages: "FOLDER/NAME (FamilyBuilder):LINE: key 'parameter.X.values': ...".
  const std::string path = (fs::path(folder) / (b.name_ + " (FamilyBuilder)")).string();
  add_family(parse_family_file(b.family_file(), path, b.inline_source_ ? &b.source_text_ : nullptr));
}

}  // namespace ktune

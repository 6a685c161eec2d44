// Families described by a family file (TOML): a user's kernel, its parameters, constraints,
// problem axes, launch geometry, arguments, reference and metric, as data. See
// docs/FAMILY_FILES.md for the format.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "families/family.hpp"
#include "ktune/launch.hpp"

namespace ktune {

// Reads, parses and checks a family file: every key known, every expression parsed and naming
// only what exists, the sources read (the compile comes later, in `ktune check`). Throws
// Error(kInvalidArgument) naming the file, the line where known, and the key.
std::unique_ptr<Family> load_family_file(const std::string& path);
// The same for a family file's text; `path` names it in messages and its folder holds the sources
// (`source_text`, when given, is the main source's text, its includes still read from there).
std::unique_ptr<Family> parse_family_file(const std::string& text, const std::string& path,
                                          const std::string* source_text = nullptr);

// A built-in family's file (families/<name>/<name>.family.toml, embedded in the library): its
// name, description, axes, derived values, parameters, constraints, kernel name, metric and
// problems, as data. The C++ family beside it gives what data cannot say (the launch, the workload
// and its verification, the default configuration), the sources and the template hash (its
// sources and descriptor version, as before family files existed), and uses this one for the
// rest. Such a file has no options, [launch], [[argument]], [verify] or [default]: they are said
// once, in the C++. Throws like parse_family_file.
std::unique_ptr<Family> parse_builtin_family_file(const std::string& text, const std::string& path);

// A built-in family whose data is its embedded family file (`name`.family.toml): what the file
// says (name, description, parameters, axes, rules, kernel name, metric, problems) is answered
// from it; the subclass gives the rest (launch, workload, default) and may add rules of its own
// to validate(), reject() and describe_constraints() after the file's.
class BuiltinFileFamily : public Family {
 public:
  explicit BuiltinFileFamily(const std::string& name);
  std::string name() const override { return data_->name(); }
  std::string description() const override { return data_->description(); }
  std::string source_file() const override { return data_->source_file(); }
  const std::vector<Param>& params() const override { return data_->params(); }
  std::string metric_unit() const override { return data_->metric_unit(); }
  std::optional<double> work_of(const Problem& p, const DeviceLimits& limits) const override {
    validate(p);  // the subclass's rules too
    return data_->work_of(p, limits);
  }
  std::vector<std::string> describe_axes() const override { return data_->describe_axes(); }
  std::vector<std::string> describe_constraints() const override {
    return data_->describe_constraints();
  }
  std::vector<Problem> check_problems() const override { return data_->check_problems(); }
  std::vector<Problem> default_problems() const override { return data_->default_problems(); }
  void validate(const Problem& p) const override { data_->validate(p); }
  std::string reject(const Config& c, const Problem& p, const DeviceLimits& limits) const override {
    return data_->reject(c, p, limits);
  }
  std::vector<std::string> name_expressions(const Config& c, const Problem& p) const override {
    return data_->name_expressions(c, p);
  }

 private:
  std::unique_ptr<Family> data_;
};

// The arguments of a family file's workload (made by make_workload, after prepare()) as
// Runtime::launch takes them: for timing launch() against a raw launch of the same kernel.
std::vector<Arg> file_workload_args(const Workload& workload);

}  // namespace ktune

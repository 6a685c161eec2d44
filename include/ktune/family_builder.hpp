// A family described in C++ instead of a family file: the same parts (docs/FAMILY_FILES.md), the
// same checks, the same template hash.
//
//   ktune::FamilyBuilder b("scale");
//   b.source_file("kernels/scale.cuh")
//       .kernel("scale<{BLOCK}, {VEC}>")
//       .axis("n", 1, 1 << 30, 1 << 24, "elements")
//       .parameter("BLOCK", {128, 256, 512}, "threads per block")
//       .parameter("VEC", {1, 2, 4}, "elements per load")
//       .constraint("n % VEC == 0", "VEC must divide n")
//       .launch({"cdiv(n, BLOCK * VEC)"}, {"BLOCK"})
//       .buffer("out", "f32", "n", ktune::Role::kOut)
//       .buffer("in", "f32", "n", ktune::Role::kIn)
//       .scalar("n", "u64", "n")
//       .reference("scale_reference", {"cdiv(n, 256)"}, {"256"}, ktune::Tolerance::exact())
//       .metric("8 * n", "GB/s")
//       .default_config({{"BLOCK", 256}, {"VEC", 1}});
//   ktune::add_family(b);  // now rt.launch("scale", ...) knows it
//
// Expressions and templates are those of family files ({PARAM} holes, device.* limits). A family
// added this way is known to this process: Runtime::launch and tuning in this process. The ktune
// command and the tuner's worker processes read files: family_file() gives this family's text
// for `--family-file`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ktune/launch.hpp"

namespace ktune {

enum class Role { kIn, kOut, kInOut };

// How the tuner fills an input buffer (default: uniform in [-1, 1) for floating types, integers
// 0 to 100 for the others).
struct Fill {
  enum class Kind { kDefault, kUniform, kNormal, kIntegers, kConstant };
  Kind kind = Kind::kDefault;
  double a = 0, b = 0;
  static Fill uniform(double min, double max) { return {Kind::kUniform, min, max}; }
  static Fill normal(double mean, double deviation) { return {Kind::kNormal, mean, deviation}; }
  static Fill integers(std::int64_t min, std::int64_t max) {
    return {Kind::kIntegers, static_cast<double>(min), static_cast<double>(max)};
  }
  static Fill constant(double value) { return {Kind::kConstant, value, 0}; }
};

// How outputs are compared with the reference's.
struct Tolerance {
  enum class Kind { kExact, kAbsRel, kUlps };
  Kind kind = Kind::kExact;
  double abs = 0, rel = 0;
  std::int64_t ulps = 0;
  static Tolerance exact() { return {}; }
  static Tolerance abs_rel(double abs, double rel) { return {Kind::kAbsRel, abs, rel, 0}; }
  static Tolerance within_ulps(std::int64_t n) { return {Kind::kUlps, 0, 0, n}; }
};

class FamilyBuilder {
 public:
  explicit FamilyBuilder(std::string name);

  FamilyBuilder& description(std::string text);
  // The kernel's source: a file (its includes are read from its folder), or text in memory whose
  // includes are read from `include_folder`.
  FamilyBuilder& source_file(std::string path);
  FamilyBuilder& source_text(std::string file_name, std::string text,
                             std::string include_folder = ".");
  FamilyBuilder& options(std::vector<std::string> nvrtc_options);
  // The kernel's name expression, with {PARAM} / {axis} / {derived} holes.
  FamilyBuilder& kernel(std::string name_template);

  // Problem axes: an integer range, or one of a list of words.
  FamilyBuilder& axis(std::string name, std::int64_t min, std::int64_t max, std::int64_t def,
                      std::string help = "");
  FamilyBuilder& axis(std::string name, std::vector<std::string> values, std::string def,
                      std::string help = "");
  FamilyBuilder& derived(std::string name, std::string expression);

  FamilyBuilder& parameter(std::string name, std::vector<std::int64_t> values,
                           std::string help = "");
  // A rule every configuration must keep; `why` is the reason given for rejecting one.
  FamilyBuilder& constraint(std::string rule, std::string why);

  // Grid and block: 1 to 3 expressions each; shared: dynamic shared memory in bytes.
  FamilyBuilder& launch(std::vector<std::string> grid, std::vector<std::string> block,
                        std::string shared = "0");
  // The kernel's arguments, in its order. Types: f32 f64 i32 u32 i64 u64 i8 u8 i16 u16 (or, for
  // a buffer, an expression giving one).
  FamilyBuilder& buffer(std::string name, std::string type, std::string length, Role role,
                        Fill fill = {});
  FamilyBuilder& scalar(std::string name, std::string type, std::string value);

  // The reference kernel (same source, no tuning parameters) and how outputs must match it.
  FamilyBuilder& reference(std::string name_template, std::vector<std::string> grid,
                           std::vector<std::string> block, Tolerance tolerance,
                           std::string shared = "0");
  // Work per run (bytes for GB/s, flops for TFLOPS) and its unit.
  FamilyBuilder& metric(std::string work, std::string unit);
  FamilyBuilder& default_config(std::map<std::string, std::int64_t> values);
  // Problems `ktune check` compiles and `ktune tune NAME` tunes when none is named.
  FamilyBuilder& check_problem(ProblemSpec problem);
  FamilyBuilder& tune_problem(ProblemSpec problem);

  const std::string& name() const { return name_; }
  // This family as a family file's text (TOML), for the ktune command: write it beside the
  // source, which it names by file name (with source_text, write the source there too).
  std::string family_file() const;

 private:
  friend void add_family(const FamilyBuilder& family);
  std::string name_, description_, source_path_, source_name_, source_text_, include_folder_;
  bool inline_source_ = false;
  std::vector<std::string> options_;
  std::string kernel_;
  std::vector<std::string> axes_, derived_, parameters_, constraints_, arguments_;
  std::string launch_, verify_, metric_;
  std::map<std::string, std::int64_t> defaults_;
  std::vector<ProblemSpec> check_, tune_;
};

// Makes the family known to this process, checked as a family file is. Throws
// ktune::Error(kInvalidArgument) naming the family and the part that is wrong, or when a family
// of that name exists already.
void add_family(const FamilyBuilder& family);

}  // namespace ktune

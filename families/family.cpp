// The parts of the family interface common to all families.
#include "families/family.hpp"

#include <algorithm>
#include <cctype>

#include "core/util.hpp"
#include "ktune/error.hpp"

namespace ktune {

double metric_of(double work, double median_ms, const std::string& unit) {
  if (median_ms <= 0) return 0;
  const double per_second = work / (median_ms * 1e-3);
  // The unit's prefix scales it: TFLOPS, GB/s, and a family file's own (Mitems/s, kB/s).
  switch (unit.empty() ? 'G' : unit[0]) {
    case 'T':
      return per_second / 1e12;
    case 'M':
      return per_second / 1e6;
    case 'k':
      return per_second / 1e3;
    default:
      return per_second / 1e9;
  }
}

namespace embedded {
std::string_view find(std::string_view name);
}

std::string template_source(const std::string& file) {
  std::string_view text = embedded::find(file);
  if (text.empty()) throw Error(ErrorCode::kInternal, "no embedded template named " + file);
  return std::string(text);
}

namespace {

// Headers a template includes with #include "x.cuh" (one level, which is all the templates use).
// (A scan, not std::regex: the regex took 0.5 ms over gemm.cuh, on a runtime's first call.)
std::vector<std::string> included_headers(const std::string& source) {
  std::vector<std::string> names;
  const std::string_view text = source, directive = "#include";
  auto name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '/' ||
           c == '-';
  };
  for (std::size_t at = text.find(directive); at != std::string_view::npos;
       at = text.find(directive, at + 1)) {
    std::size_t i = at + directive.size(), spaces = i;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i == spaces || i >= text.size() || text[i] != '"') continue;
    const std::size_t begin = ++i;
    while (i < text.size() && name_char(text[i])) ++i;
    const std::string_view name = text.substr(begin, i - begin);
    if (i < text.size() && text[i] == '"' && name.size() > 4 && name.ends_with(".cuh"))
      names.emplace_back(name);
  }
  return names;
}

}  // namespace

std::string local_memory_reason(const FunctionResources& res) {
  if (res.spills())
    return "spills registers (" + std::to_string(res.spill_stores + res.spill_loads) + " bytes)";
  if (res.stack_frame > 0)
    return "uses local memory (" + std::to_string(res.stack_frame) + "-byte stack frame)";
  return {};
}

SourceSet Family::sources() const {
  std::call_once(sources_once_, [this] {
    sources_.name = source_file();
    sources_.text = template_source(sources_.name);
    for (const auto& header : included_headers(sources_.text))
      sources_.headers.emplace_back(header, template_source(header));
  });
  return sources_;
}

std::string Family::template_hash() const {
  std::call_once(hash_once_, [this] {
    Hasher h;
    const SourceSet s = sources();
    h.add(name()).add(static_cast<std::int64_t>(descriptor_version())).add(s.text);
    for (const auto& [header, text] : s.headers) h.add(header).add(text);
    // Built-in families hash exactly what they did before family files existed.
    if (!s.options.empty() || !s.hashed.empty()) {
      for (const auto& o : s.options) h.add(o);
      h.add(s.hashed);
    }
    hash_ = h.hex().substr(0, 16);
  });
  return hash_;
}

const std::string& Family::sources_hash() const {
  std::call_once(sources_hash_once_, [this] {
    const SourceSet s = sources();
    sources_hash_ = compile_sources_hash(s.text, s.headers);
  });
  return sources_hash_;
}

CompileRequest Family::compile_request(const Config& config, const Problem& problem,
                                       const std::string& arch) const {
  SourceSet s = sources();
  CompileRequest r;
  r.source_name = std::move(s.name);
  r.source = std::move(s.text);
  r.headers = std::move(s.headers);
  r.sources_hash = sources_hash();
  r.options = std::move(s.options);
  r.name_expressions = name_expressions(config, problem);
  r.arch = compile_arch(arch);
  return r;
}

bool within(const Config& config, const ParamValues& only) {
  for (const auto& [name, values] : only) {
    const auto it = config.find(name);
    if (it == config.end() || std::find(values.begin(), values.end(), it->second) == values.end())
      return false;
  }
  return true;
}

Config Family::default_config_within(const Problem& problem, const DeviceLimits& limits,
                                     const ParamValues& only) const {
  Config c = default_config(problem, limits);
  for (const auto& [param, values] : only)
    if (!values.empty() && !within(c, {{param, values}})) c[param] = values.front();
  if (!within(c, only) || !reject(c, problem, limits).empty())
    throw Error(ErrorCode::kInvalidArgument, name() + ": no default configuration for " +
                                                 problem.key() +
                                                 " with the parameters held as asked");
  return c;
}

namespace {

// Family::space_rules by default: the configuration as a Config (the prefix's alone as another),
// its values written in place, and reject_prefix() and reject() asked of it.
class ByNameRules final : public SpaceRules {
 public:
  ByNameRules(const Family& family, const Problem& problem, const DeviceLimits& limits)
      : family_(family), problem_(problem), limits_(limits) {
    const auto& params = family.params();
    const std::size_t prefix = std::min(family.prefix_params(), params.size());
    // Every name first, then where each value lives: a Config keeps its values in one array,
    // which an insertion moves.
    for (std::size_t i = 0; i < params.size(); ++i) {
      full_[params[i].name];
      if (i < prefix) head_[params[i].name];
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
      slot_.push_back(&full_.at(params[i].name));
      if (i < prefix) head_slot_.push_back(&head_.at(params[i].name));
    }
  }
  bool prefix_ok(const std::int64_t* values) override {
    for (std::size_t i = 0; i < head_slot_.size(); ++i) *head_slot_[i] = values[i];
    return family_.reject_prefix(head_, problem_, limits_).empty();
  }
  bool ok(const std::int64_t* values) override {
    for (std::size_t i = 0; i < slot_.size(); ++i) *slot_[i] = values[i];
    return family_.reject(full_, problem_, limits_).empty();
  }

 private:
  const Family& family_;
  const Problem& problem_;
  const DeviceLimits& limits_;
  Config head_, full_;
  std::vector<std::int64_t*> head_slot_, slot_;
};

}  // namespace

std::unique_ptr<SpaceRules> Family::space_rules(const Problem& problem,
                                                const DeviceLimits& limits) const {
  return std::make_unique<ByNameRules>(*this, problem, limits);
}

const std::vector<const Param*>& Family::params_by_name() const {
  std::call_once(by_name_once_, [this] {
    for (const Param& p : params()) by_name_.push_back(&p);
    std::sort(by_name_.begin(), by_name_.end(),
              [](const Param* a, const Param* b) { return compare_names(a->name, b->name) < 0; });
  });
  return by_name_;
}

Config Family::normalize(Config config) const {
  // Where every parameter is there (a configuration this version stored), one walk beside it.
  bool complete = true;
  auto it = config.begin();
  for (const Param* p : params_by_name()) {
    int order = -1;
    while (it != config.end() && (order = compare_names(it->first, p->name)) < 0) ++it;
    if (it == config.end() || order != 0) {
      if (p->values.empty()) continue;
      complete = false;
      break;
    }
    ++it;
  }
  if (complete) return config;
  for (const auto& p : params())
    if (!config.count(p.name) && !p.values.empty()) config[p.name] = p.values.front();
  return config;
}

Problem Family::parse_problem(std::string_view key) const {
  Problem problem = Problem::parse(name(), key);
  validate(problem);
  return problem;
}

Problem Family::make_problem(const std::map<std::string, std::int64_t>& sizes,
                             const std::map<std::string, std::string>& attrs) const {
  const std::vector<Problem> defaults = default_problems();
  Problem problem = defaults.empty() ? Problem{} : defaults.front();
  problem.family = name();
  for (const auto& [axis, value] : sizes) {
    if (problem.attrs.count(axis))
      throw Error(ErrorCode::kInvalidArgument,
                  name() + ": axis " + axis + " takes one of a list of names, not a number");
    problem.sizes[axis] = value;
  }
  for (const auto& [axis, value] : attrs) {
    if (problem.sizes.count(axis))
      throw Error(ErrorCode::kInvalidArgument,
                  name() + ": axis " + axis + " takes a number, not '" + value + "'");
    problem.attrs[axis] = value;
  }
  validate(problem);
  return problem;
}

Config as_measured_or_adapted(const Family& family, const Config& measured, bool measured_here,
                              const Problem& problem, const DeviceLimits& limits) {
  if (measured_here && family.reject(measured, problem, limits).empty()) return measured;
  return family.adapt(measured, problem, limits);
}

void Family::check_config(const Config& config) const {
  // The usual case, a valid configuration: one walk beside params_by_name(). Anything else is
  // told by the walk below, in params() order.
  if (const auto& by_name = params_by_name(); config.size() == by_name.size()) {
    auto it = config.begin();
    bool valid = true;
    for (const Param* p : by_name) {
      if (compare_names(it->first, p->name) != 0 ||
          std::find(p->values.begin(), p->values.end(), it->second) == p->values.end()) {
        valid = false;
        break;
      }
      ++it;
    }
    if (valid) return;
  }
  for (const auto& p : params()) {
    auto it = config.find(p.name);
    if (it == config.end())
      throw Error(ErrorCode::kInvalidArgument,
                  name() + " config: parameter " + p.name + " is missing");
    if (std::find(p.values.begin(), p.values.end(), it->second) == p.values.end())
      throw Error(ErrorCode::kInvalidArgument, name() + " config: " + p.name + "=" +
                                                   std::to_string(it->second) +
                                                   " is not one of the allowed values");
  }
  // Every parameter is there (the names are distinct): so is nothing else where the counts agree.
  if (config.size() == params().size()) return;
  for (const auto& entry : config) {
    const std::string& key = entry.first;  // not a structured binding: clang 14 cannot capture one
    bool known = std::any_of(params().begin(), params().end(),
                             [&](const Param& p) { return p.name == key; });
    if (!known)
      throw Error(ErrorCode::kInvalidArgument, name() + " config: unknown parameter " + key);
  }
}

}  // namespace ktune

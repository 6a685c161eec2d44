// Family registry and the parts of the family interface common to all families.
#include "templates/family.hpp"

#include <algorithm>
#include <regex>

#include "ktune/error.hpp"
#include "runtime/util.hpp"

namespace ktune {

namespace embedded {
std::string_view find(std::string_view name);
}

// Defined next to each family's descriptor.
const Family& elementwise_family();
const Family& gemm_family();
const Family& histogram_family();
const Family& faults_family();

std::string template_source(const std::string& file) {
  std::string_view text = embedded::find(file);
  if (text.empty()) throw Error(ErrorCode::kInternal, "no embedded template named " + file);
  return std::string(text);
}

namespace {

// Headers a template includes with #include "x.cuh" (one level, which is all the templates use).
std::vector<std::string> included_headers(const std::string& source) {
  std::vector<std::string> names;
  static const std::regex include_re(R"re(#include\s+"([A-Za-z0-9_./-]+\.cuh)")re");
  for (auto it = std::sregex_iterator(source.begin(), source.end(), include_re);
       it != std::sregex_iterator(); ++it)
    names.push_back((*it)[1].str());
  return names;
}

}  // namespace

std::string Family::template_hash() const {
  std::call_once(hash_once_, [this] {
    Hasher h;
    std::string source = template_source(source_file());
    h.add(name()).add(static_cast<std::int64_t>(descriptor_version())).add(source);
    for (const auto& header : included_headers(source)) h.add(header).add(template_source(header));
    hash_ = h.hex().substr(0, 16);
  });
  return hash_;
}

CompileRequest Family::compile_request(const Config& config, const Problem& problem,
                                       const std::string& arch) const {
  CompileRequest r;
  r.source_name = source_file();
  r.source = template_source(source_file());
  for (const auto& header : included_headers(r.source))
    r.headers.emplace_back(header, template_source(header));
  r.name_expressions = name_expressions(config, problem);
  r.arch = arch;
  return r;
}

Config Family::normalize(Config config) const {
  for (const auto& p : params())
    if (!config.count(p.name) && !p.values.empty()) config[p.name] = p.values.front();
  return config;
}

Problem Family::parse_problem(std::string_view key) const {
  Problem problem = Problem::parse(name(), key);
  validate(problem);
  return problem;
}

void Family::check_config(const Config& config) const {
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
  for (const auto& entry : config) {
    const std::string& key = entry.first;  // not a structured binding: clang 14 cannot capture one
    bool known = std::any_of(params().begin(), params().end(),
                             [&](const Param& p) { return p.name == key; });
    if (!known)
      throw Error(ErrorCode::kInvalidArgument, name() + " config: unknown parameter " + key);
  }
}

std::vector<const Family*> all_families() {
  return {&elementwise_family(), &gemm_family(), &histogram_family()};
}

const Family& find_family(const std::string& name) {
  if (name == faults_family().name()) return faults_family();
  std::string known;
  for (const Family* f : all_families()) {
    if (f->name() == name) return *f;
    known += (known.empty() ? "" : ", ") + f->name();
  }
  throw Error(ErrorCode::kInvalidArgument, "unknown family '" + name + "' (known: " + known + ")");
}

}  // namespace ktune

// Families from family files: the TOML reader, the checks, and the generic family and workload
// that run a user's kernel from what its file declares.
#include "families/file_family.hpp"

#define TOML_HEADER_ONLY 1  // compiled into this file alone: no library for users to link
#define TOML_ENABLE_FORMATTERS 0
#include <sys/stat.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>

#include "core/expr.hpp"
#include "core/util.hpp"
#include "ktune/error.hpp"
#include "platform/driver.hpp"
#include "platform/kernel_cache.hpp"

namespace fs = std::filesystem;

namespace ktune {

using detail::check;
using detail::driver;

namespace {

expr::Expression zero() { return expr::Expression::parse("0"); }

constexpr std::size_t kMaxFileBytes = 1 << 20;  // a family file or one of its sources
constexpr int kMaxIncludeDepth = 8;

// Element types of buffers and scalars; the index is file_family.cuh's numbering.
struct ElementType {
  const char* name;
  const char* cuda;
  int bytes;
  bool floating;
  bool is_signed;
};
constexpr ElementType kTypes[] = {
    {"f32", "float", 4, true, true},       {"f64", "double", 8, true, true},
    {"i32", "int", 4, false, true},        {"u32", "unsigned int", 4, false, false},
    {"i64", "long long", 8, false, true},  {"u64", "unsigned long long", 8, false, false},
    {"i8", "signed char", 1, false, true}, {"u8", "unsigned char", 1, false, false},
    {"i16", "short", 2, false, true},      {"u16", "unsigned short", 2, false, false},
};

const ElementType* find_type(const std::string& name) {
  for (const auto& t : kTypes)
    if (name == t.name) return &t;
  return nullptr;
}

std::string type_names() {
  std::string out;
  for (const auto& t : kTypes) out += (out.empty() ? "" : ", ") + std::string(t.name);
  return out;
}

// Names a device offers to expressions, with the limit each one reads.
struct DeviceName {
  const char* name;
  std::int64_t (*get)(const DeviceLimits&);
};
const DeviceName kDeviceNames[] = {
    {"device.max_threads_per_block",
     [](const DeviceLimits& l) -> std::int64_t { return l.max_threads_per_block; }},
    {"device.max_threads_per_sm",
     [](const DeviceLimits& l) -> std::int64_t { return l.max_threads_per_sm; }},
    {"device.max_blocks_per_sm",
     [](const DeviceLimits& l) -> std::int64_t { return l.max_blocks_per_sm; }},
    {"device.sm_count", [](const DeviceLimits& l) -> std::int64_t { return l.sm_count; }},
    {"device.warp_size", [](const DeviceLimits& l) -> std::int64_t { return l.warp_size; }},
    {"device.regs_per_block",
     [](const DeviceLimits& l) -> std::int64_t { return l.regs_per_block; }},
    {"device.shared_per_block",
     [](const DeviceLimits& l) -> std::int64_t { return l.smem_per_block; }},
    {"device.shared_per_block_optin",
     [](const DeviceLimits& l) -> std::int64_t { return l.smem_per_block_optin; }},
    {"device.shared_per_sm", [](const DeviceLimits& l) -> std::int64_t { return l.smem_per_sm; }},
    {"device.l2_bytes", [](const DeviceLimits& l) -> std::int64_t { return l.l2_bytes; }},
    {"device.cc",
     [](const DeviceLimits& l) -> std::int64_t { return l.cc_major * 10 + l.cc_minor; }},
};

std::string read_text(const std::string& path, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw Error(ErrorCode::kInvalidArgument, what + " " + path + ": no such file");
  if (!S_ISREG(st.st_mode))
    throw Error(ErrorCode::kInvalidArgument, what + " " + path + ": not a regular file");
  if (static_cast<std::size_t>(st.st_size) > kMaxFileBytes)
    throw Error(ErrorCode::kInvalidArgument,
                what + " " + path + ": larger than " + std::to_string(kMaxFileBytes) + " bytes");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kInvalidArgument, what + " " + path + ": cannot be read");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// ---------------------------------------------------------------------------------------------
// The family file, as read

struct Axis {
  std::string name, help;
  bool integer = true;
  std::int64_t min = 0, max = 0, def = 0;
  std::vector<std::string> values;  // for a choice axis
  std::string def_text;
};

struct Derived {
  std::string name;
  expr::Expression value = zero();
};

struct Constraint {
  std::string why;
  expr::Expression rule = zero();
};

struct Fill {
  int kind = 0;  // file_family.cuh: 0 uniform, 1 normal, 2 integers, 3 constant
  double a = -1, b = 1;
};

struct Argument {
  std::string name;
  bool buffer = true;
  expr::Expression type = zero();    // buffer: an expression giving the element type's name
  expr::Expression length = zero();  // buffer: elements
  bool input = false, output = false;
  Fill fill;  // default: uniform in [-1, 1) for floating types, integers 0..100 for others
  bool has_fill = false;
  std::string scalar_type;          // scalar: its type
  expr::Expression value = zero();  // scalar: its value
};

struct Geometry {
  std::vector<expr::Expression> grid, block;
  expr::Expression shared = zero();
};

struct Tolerance {
  bool exact = true;
  double abs = 0, rel = 0;
  std::int64_t ulps = -1;
};

struct Spec {
  std::string path, folder;
  std::string name, description;
  std::string source_name, source;
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::string> options;
  expr::Template kernel;
  std::vector<Axis> axes;
  std::vector<Derived> derived;
  std::vector<Param> params;
  std::vector<Constraint> constraints;
  Geometry launch;
  std::vector<Argument> arguments;
  expr::Template reference;
  Geometry reference_launch;
  Tolerance tolerance;
  expr::Expression work = zero();
  std::string unit;
  Config defaults;
  std::vector<Problem> check, tune;
  std::string hashed;  // what the template hash covers besides the sources
  // A built-in family's data: its C++ launches, verifies and defaults, and gives the sources.
  bool builtin = false;
};

// Errors while reading: "FILE:LINE: key 'a.b': what".
class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const toml::node* node, const std::string& key,
                         const std::string& what) const {
    std::string where = path_;
    if (node && node->source().begin.line > 0)
      where += ":" + std::to_string(node->source().begin.line);
    throw Error(ErrorCode::kInvalidArgument,
                where + ": " + (key.empty() ? "" : "key '" + key + "': ") + what);
  }

  // Every key of `table` is one of `known`.
  void only(const toml::table& table, const std::string& prefix,
            std::initializer_list<const char*> known) const {
    for (auto&& [k, v] : table) {
      const std::string key(k.str());
      if (std::none_of(known.begin(), known.end(), [&](const char* n) { return key == n; })) {
        std::string list;
        for (const char* n : known) list += (list.empty() ? "" : ", ") + std::string(n);
        fail(&v, prefix + key, "unknown key (known here: " + list + ")");
      }
    }
  }

  const toml::node* need(const toml::table& t, const std::string& prefix, const char* key) const {
    const toml::node* n = t.get(key);
    if (!n) fail(&t, prefix + key, "missing");
    return n;
  }

  std::string text(const toml::node* n, const std::string& key) const {
    if (!n->is_string()) fail(n, key, "must be a string");
    return n->as_string()->get();
  }
  std::string text(const toml::table& t, const std::string& prefix, const char* key) const {
    return text(need(t, prefix, key), prefix + key);
  }
  std::string text_or(const toml::table& t, const std::string& prefix, const char* key,
                      std::string fallback) const {
    const toml::node* n = t.get(key);
    return n ? text(n, prefix + key) : fallback;
  }
  std::int64_t integer(const toml::node* n, const std::string& key) const {
    if (!n->is_integer()) fail(n, key, "must be an integer");
    return n->as_integer()->get();
  }
  double number(const toml::node* n, const std::string& key) const {
    if (n->is_integer()) return static_cast<double>(n->as_integer()->get());
    if (!n->is_floating_point()) fail(n, key, "must be a number");
    const double v = n->as_floating_point()->get();
    if (!std::isfinite(v)) fail(n, key, "must be a finite number");
    return v;
  }
  const toml::table& table(const toml::node* n, const std::string& key) const {
    if (!n->is_table()) fail(n, key, "must be a table");
    return *n->as_table();
  }
  const toml::array& array(const toml::node* n, const std::string& key) const {
    if (!n->is_array()) fail(n, key, "must be an array");
    return *n->as_array();
  }

  expr::Expression expression(const toml::node* n, const std::string& key) const {
    std::string t;
    if (n->is_integer())
      t = std::to_string(n->as_integer()->get());
    else
      t = text(n, key);
    try {
      return expr::Expression::parse(t);
    } catch (const Error& e) {
      fail(n, key, e.what());
    }
  }
  expr::Template name_template(const toml::node* n, const std::string& key) const {
    try {
      return expr::Template::parse(text(n, key));
    } catch (const Error& e) {
      fail(n, key, e.what());
    }
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// toml++ keeps a table's keys sorted; the file's order is the order of their lines.
std::vector<std::pair<std::string, const toml::node*>> in_file_order(const toml::table& t) {
  std::vector<std::pair<std::string, const toml::node*>> ordered;
  for (auto&& [k, v] : t) ordered.emplace_back(std::string(k.str()), &v);
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    const auto& x = a.second->source().begin;
    const auto& y = b.second->source().begin;
    return x.line != y.line ? x.line < y.line : x.column < y.column;
  });
  return ordered;
}

// [A-Za-z_][A-Za-z0-9_]{0,63}, scanned: a std::regex took 0.2 ms to build on a runtime's first
// call, which parses a built-in family's file.
bool valid_name(const std::string& s) {
  auto letter = [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_'; };
  if (s.empty() || s.size() > 64 || !letter(s[0])) return false;
  return std::all_of(s.begin(), s.end(),
                     [&](char c) { return letter(c) || (c >= '0' && c <= '9'); });
}

// A rate with a k, M, G or T prefix: [kMGT][A-Za-z]*/s or [kMGT]FLOPS (scanned, as valid_name).
bool valid_rate_unit(const std::string& u) {
  if (u.size() < 2 || std::string_view("kMGT").find(u[0]) == std::string_view::npos) return false;
  if (u.compare(1, std::string::npos, "FLOPS") == 0) return true;
  if (u.size() < 3 || u.compare(u.size() - 2, 2, "/s") != 0) return false;
  return std::all_of(u.begin() + 1, u.end() - 2,
                     [](char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); });
}

// Quoted includes of a source, resolved beside the family file, recursively.
void read_headers(const std::string& folder, const std::string& text, int depth,
                  std::vector<std::pair<std::string, std::string>>& headers,
                  const std::string& from) {
  static const std::regex include_re(R"re(#\s*include\s+"([A-Za-z0-9_./-]+)")re");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), include_re);
       it != std::sregex_iterator(); ++it) {
    const std::string name = (*it)[1].str();
    if (std::any_of(headers.begin(), headers.end(), [&](const auto& h) { return h.first == name; }))
      continue;
    const fs::path p = fs::path(folder) / name;
    if (name.find("..") != std::string::npos || name.front() == '/' || !fs::exists(p))
      continue;  // a system or toolkit header: NVRTC finds it or reports it
    if (depth >= kMaxIncludeDepth)
      throw Error(ErrorCode::kInvalidArgument,
                  from + ": includes nest deeper than " + std::to_string(kMaxIncludeDepth));
    std::string header = read_text(p.string(), "header");
    headers.emplace_back(name, header);
    read_headers(folder, header, depth + 1, headers, p.string());
  }
}

// Which names an expression may use, for the check at load time.
struct Names {
  std::set<std::string> params, axes, derived, param_derived;  // derived that read parameters
};

bool is_device_name(const std::string& n) {
  return std::any_of(std::begin(kDeviceNames), std::end(kDeviceNames),
                     [&](const DeviceName& d) { return n == d.name; });
}

// Every name of `names` is known; with `without_params`, none is a parameter or derives from one.
void check_names(const Reader& r, const toml::node* node, const std::string& key,
                 const std::vector<std::string>& used, const Names& names, bool without_params) {
  for (const auto& n : used) {
    const bool param = names.params.count(n) > 0;
    const bool known = param || names.axes.count(n) || names.derived.count(n) || is_device_name(n);
    if (!known) {
      std::string hint = n.rfind("device.", 0) == 0 ? " (device names: " : "";
      if (!hint.empty()) {
        for (const auto& d : kDeviceNames) hint += std::string(d.name) + ", ";
        hint.resize(hint.size() - 2);
        hint += ")";
      }
      r.fail(node, key, "'" + n + "' is not a parameter, problem axis or derived value" + hint);
    }
    if (without_params && (param || names.param_derived.count(n)))
      r.fail(node, key,
             "'" + n +
                 "' depends on a tuning parameter, which this value must not (it is fixed per "
                 "problem)");
  }
}

// grid, block and shared of `t` (the caller checks its other keys); `fixed`: without parameters.
Geometry read_geometry(const Reader& r, const toml::table& t, const std::string& prefix,
                       const Names& names, bool fixed) {
  Geometry g;
  for (const char* what : {"grid", "block"}) {
    const toml::node* n = r.need(t, prefix, what);
    const std::string key = prefix + what;
    std::vector<expr::Expression> dims;
    if (n->is_array()) {
      const auto& a = *n->as_array();
      if (a.empty() || a.size() > 3) r.fail(n, key, "takes 1 to 3 dimensions (x, y, z)");
      for (const auto& d : a) dims.push_back(r.expression(&d, key));
    } else {
      dims.push_back(r.expression(n, key));
    }
    for (const auto& d : dims) check_names(r, n, key, d.names(), names, fixed);
    (std::string(what) == "grid" ? g.grid : g.block) = std::move(dims);
  }
  if (const toml::node* n = t.get("shared")) {
    g.shared = r.expression(n, prefix + "shared");
    check_names(r, n, prefix + "shared", g.shared.names(), names, fixed);
  } else {
    g.shared = expr::Expression::parse("0");
  }
  return g;
}

Fill read_fill(const Reader& r, const toml::node* n, const std::string& key) {
  Fill f;
  const auto& t = r.table(n, key);
  r.only(t, key + ".", {"kind", "min", "max", "mean", "deviation", "value"});
  const std::string kind = r.text(t, key + ".", "kind");
  auto num = [&](const char* k, double fallback) {
    const toml::node* v = t.get(k);
    return v ? r.number(v, key + "." + k) : fallback;
  };
  if (kind == "uniform") {
    f = {0, num("min", -1), num("max", 1)};
    if (!(f.a < f.b)) r.fail(n, key, "uniform: min must be below max");
  } else if (kind == "normal") {
    f = {1, num("mean", 0), num("deviation", 1)};
    if (!(f.b > 0)) r.fail(n, key, "normal: deviation must be positive");
  } else if (kind == "integers") {
    f = {2, num("min", 0), num("max", 100)};
    if (f.a != std::floor(f.a) || f.b != std::floor(f.b) || f.a > f.b)
      r.fail(n, key, "integers: min and max must be integers, min <= max");
  } else if (kind == "constant") {
    f = {3, num("value", 1), 0};
  } else {
    r.fail(n, key + ".kind", "'" + kind + "' is not one of uniform, normal, integers, constant");
  }
  return f;
}

// A problem from a table of axis values (a [[check]] or [[tune]] entry); missing axes take
// their default.
Problem read_problem(const Reader& r, const Spec& spec, const toml::node* n,
                     const std::string& key) {
  const auto& t = r.table(n, key);
  Problem p;
  p.family = spec.name;
  for (auto&& [k, v] : t) {
    const std::string name(k.str());
    if (std::none_of(spec.axes.begin(), spec.axes.end(),
                     [&](const Axis& a) { return a.name == name; }))
      r.fail(&v, key + "." + name, "not a problem axis");
  }
  for (const auto& a : spec.axes) {
    const toml::node* v = t.get(a.name);
    if (a.integer)
      p.sizes[a.name] = v ? r.integer(v, key + "." + a.name) : a.def;
    else
      p.attrs[a.name] = v ? r.text(v, key + "." + a.name) : a.def_text;
  }
  return p;
}

// Where TOML allows only ASCII (outside strings and comments), a non-ASCII byte is refused before
// toml++ sees it: toml++ 3.3 reaches __builtin_unreachable() when it classifies some code points
// (U+00A1 to U+0499) as whitespace there, undefined behaviour that our fuzzing found. TOML
// refuses such a file anyway; strings and comments keep any UTF-8.
void check_ascii_outside_strings(const std::string& text, const std::string& path) {
  enum class State { kNormal, kComment, kBasic, kLiteral, kMultiBasic, kMultiLiteral };
  State state = State::kNormal;
  std::size_t line = 1;
  // The last byte outside blanks, strings and comments ('\n' at a line's start): a quote opens a
  // string only where TOML has a key or a value, else it is a stray byte toml++ refuses, and what
  // follows it is not in a string (`cols = 77x"<non-ASCII>` reached toml++'s unreachable).
  char last = '\n';
  auto at = [&](std::size_t i, const char* what) {
    return text.compare(i, std::strlen(what), what) == 0;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      if (state == State::kComment || state == State::kBasic || state == State::kLiteral)
        state = State::kNormal;  // single-line: an unterminated one is toml++'s error to report
      last = '\n';
      continue;
    }
    switch (state) {
      case State::kNormal: {
        if (static_cast<unsigned char>(c) >= 0x80)
          throw Error(ErrorCode::kInvalidArgument,
                      path + ":" + std::to_string(line) +
                          ": a non-ASCII character outside a string or a comment");
        const bool string_may_open = std::strchr("\n=[,{.", last) != nullptr;
        if (c != ' ' && c != '\t' && c != '\r') last = c;
        if ((c == '"' || c == '\'') && !string_may_open) break;
        if (c == '#') {
          state = State::kComment;
        } else if (at(i, "\"\"\"")) {
          state = State::kMultiBasic;
          i += 2;
        } else if (at(i, "'''")) {
          state = State::kMultiLiteral;
          i += 2;
        } else if (c == '"') {
          state = State::kBasic;
        } else if (c == '\'') {
          state = State::kLiteral;
        }
        break;
      }
      case State::kComment:
        break;
      case State::kBasic:
        if (c == '\\')
          ++i;  // an escape: the next byte does not end the string
        else if (c == '"')
          state = State::kNormal;
        break;
      case State::kLiteral:
        if (c == '\'') state = State::kNormal;
        break;
      case State::kMultiBasic:
        if (c == '\\') {
          if (i + 1 < text.size() && text[i + 1] == '\n') ++line;
          ++i;
        } else if (at(i, "\"\"\"")) {
          // Up to two more quotes belong to the string: """a""""" is a"".
          i += 2;
          while (i + 1 < text.size() && text[i + 1] == '"') ++i;
          state = State::kNormal;
        }
        break;
      case State::kMultiLiteral:
        if (at(i, "'''")) {
          i += 2;
          while (i + 1 < text.size() && text[i + 1] == '\'') ++i;
          state = State::kNormal;
        }
        break;
    }
  }
}

Spec read_spec(const std::string& path, const std::string& text,
               const std::string* source_text = nullptr, bool builtin = false) {
  Spec spec;
  spec.path = path;
  spec.builtin = builtin;
  spec.folder = fs::absolute(path).parent_path().string();
  Reader r(path);
  toml::table root;
  check_ascii_outside_strings(text, path);
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    throw Error(ErrorCode::kInvalidArgument, path + ":" + std::to_string(e.source().begin.line) +
                                                 ":" + std::to_string(e.source().begin.column) +
                                                 ": " + std::string(e.description()));
  }
  if (builtin)  // what the C++ beside the file says is not written twice
    r.only(root, "",
           {"name", "description", "source", "kernel", "axes", "derived", "parameter", "constraint",
            "metric", "check", "tune"});
  else
    r.only(root, "",
           {"name", "description", "source", "options", "kernel", "axes", "derived", "parameter",
            "constraint", "launch", "argument", "verify", "metric", "default", "check", "tune"});

  spec.name = r.text(root, "", "name");
  if (!valid_name(spec.name))
    r.fail(root.get("name"), "name", "'" + spec.name + "' is not a name (letters, digits, _)");
  spec.description = r.text_or(root, "", "description", "");

  // Sources: one file beside the family file, and what it includes from there.
  spec.source_name = r.text(root, "", "source");
  if (spec.source_name.find("..") != std::string::npos || spec.source_name.empty() ||
      spec.source_name.front() == '/')
    r.fail(root.get("source"), "source", "a file name relative to the family file's folder");
  // (A built-in family's sources are embedded in the library: Family::sources reads them.)
  if (!builtin) {
    try {
      if (source_text && source_text->size() > kMaxFileBytes)
        throw Error(ErrorCode::kInvalidArgument,
                    "source text: larger than " + std::to_string(kMaxFileBytes) + " bytes");
      spec.source = source_text
                        ? *source_text
                        : read_text((fs::path(spec.folder) / spec.source_name).string(), "source");
      read_headers(spec.folder, spec.source, 0, spec.headers, spec.source_name);
    } catch (const Error& e) {
      r.fail(root.get("source"), "source", e.what());
    }
  }
  if (const toml::node* n = root.get("options")) {
    for (const auto& o : r.array(n, "options")) {
      std::string opt = r.text(&o, "options");
      if (opt.empty() || opt[0] != '-' || opt.rfind("--gpu-architecture", 0) == 0 ||
          opt.rfind("-arch", 0) == 0)
        r.fail(
            &o, "options",
            "'" + opt + "' is not an NVRTC option ktune passes on (the architecture is ktune's)");
      spec.options.push_back(opt);
    }
  }

  Names names;
  // Problem axes.
  const auto& axes = r.table(r.need(root, "", "axes"), "axes");
  for (const auto& [name, node] : in_file_order(axes)) {
    const toml::node& v = *node;
    Axis a;
    a.name = name;
    const std::string key = "axes." + a.name;
    if (!valid_name(a.name)) r.fail(&v, key, "not a name (letters, digits, _)");
    const auto& t = r.table(&v, key);
    r.only(t, key + ".", {"min", "max", "default", "values", "help"});
    a.help = r.text_or(t, key + ".", "help", "");
    if (const toml::node* vals = t.get("values")) {
      a.integer = false;
      for (const auto& x : r.array(vals, key + ".values")) {
        std::string s = r.text(&x, key + ".values");
        if (s.empty() || s.find_first_of("=;,") != std::string::npos)
          r.fail(&x, key + ".values", "'" + s + "' cannot be part of a problem key");
        a.values.push_back(s);
      }
      if (a.values.empty()) r.fail(vals, key + ".values", "lists no value");
      if (t.get("min") || t.get("max")) r.fail(&v, key, "an axis with values has no min or max");
      a.def_text = t.get("default") ? r.text(t.get("default"), key + ".default") : a.values[0];
      if (std::find(a.values.begin(), a.values.end(), a.def_text) == a.values.end())
        r.fail(t.get("default"), key + ".default", "'" + a.def_text + "' is not one of its values");
    } else {
      a.min = r.integer(r.need(t, key + ".", "min"), key + ".min");
      a.max = r.integer(r.need(t, key + ".", "max"), key + ".max");
      a.def = r.integer(r.need(t, key + ".", "default"), key + ".default");
      if (a.min > a.max) r.fail(&v, key, "min is above max");
      if (a.def < a.min || a.def > a.max) r.fail(t.get("default"), key, "default out of range");
    }
    names.axes.insert(a.name);
    spec.axes.push_back(std::move(a));
  }
  if (spec.axes.empty()) r.fail(root.get("axes"), "axes", "declares no axis");

  // Tuning parameters.
  const auto& params = r.array(r.need(root, "", "parameter"), "parameter");
  for (const auto& node : params) {
    const auto& t = r.table(&node, "parameter");
    r.only(t, "parameter.", {"name", "values", "help"});
    Param p;
    p.name = r.text(t, "parameter.", "name");
    const std::string key = "parameter." + p.name;
    if (!valid_name(p.name)) r.fail(&node, key, "not a name (letters, digits, _)");
    if (names.params.count(p.name) || names.axes.count(p.name))
      r.fail(&node, key, "the name is taken by another parameter or an axis");
    for (const auto& x : r.array(r.need(t, key + ".", "values"), key + ".values"))
      p.values.push_back(r.integer(&x, key + ".values"));
    if (p.values.empty()) r.fail(&node, key + ".values", "lists no value");
    if (std::set<std::int64_t>(p.values.begin(), p.values.end()).size() != p.values.size())
      r.fail(&node, key + ".values", "lists a value twice");
    p.help = r.text_or(t, key + ".", "help", "");
    names.params.insert(p.name);
    spec.params.push_back(std::move(p));
  }
  if (spec.params.empty()) r.fail(root.get("parameter"), "parameter", "declares no parameter");

  // Derived values, in file order: each may use those before it.
  if (const toml::node* n = root.get("derived")) {
    for (const auto& [name, v] : in_file_order(r.table(n, "derived"))) {
      const std::string key = "derived." + name;
      if (!valid_name(name)) r.fail(v, key, "not a name (letters, digits, _)");
      if (names.params.count(name) || names.axes.count(name))
        r.fail(v, key, "the name is taken by a parameter or an axis");
      Derived d{name, r.expression(v, key)};
      check_names(r, v, key, d.value.names(), names, false);
      for (const auto& used : d.value.names())
        if (names.params.count(used) || names.param_derived.count(used))
          names.param_derived.insert(name);
      names.derived.insert(name);
      spec.derived.push_back(std::move(d));
    }
  }

  // The kernel's name expression.
  const toml::node* kernel = r.need(root, "", "kernel");
  spec.kernel = r.name_template(kernel, "kernel");
  check_names(r, kernel, "kernel", spec.kernel.names(), names, false);

  // Constraints: the name is the rejection reason.
  if (const toml::node* n = root.get("constraint")) {
    for (const auto& node : r.array(n, "constraint")) {
      const auto& t = r.table(&node, "constraint");
      r.only(t, "constraint.", {"why", "rule"});
      Constraint c{r.text(t, "constraint.", "why"),
                   r.expression(r.need(t, "constraint.", "rule"), "constraint.rule")};
      check_names(r, &node, "constraint.rule", c.rule.names(), names, false);
      spec.constraints.push_back(std::move(c));
    }
  }

  if (!builtin) {
    const auto& launch = r.table(r.need(root, "", "launch"), "launch");
    r.only(launch, "launch.", {"grid", "block", "shared"});
    spec.launch = read_geometry(r, launch, "launch.", names, false);
  }

  // Arguments in the kernel's order.
  static const toml::array kNone;
  for (const auto& node : builtin ? kNone : r.array(r.need(root, "", "argument"), "argument")) {
    const auto& t = r.table(&node, "argument");
    Argument a;
    a.name = r.text(t, "argument.", "name");
    const std::string key = "argument." + a.name;
    if (t.get("scalar")) {
      r.only(t, key + ".", {"name", "scalar", "value"});
      a.buffer = false;
      a.scalar_type = r.text(t, key + ".", "scalar");
      if (!find_type(a.scalar_type))
        r.fail(t.get("scalar"), key + ".scalar",
               "'" + a.scalar_type + "' is not a type (" + type_names() + ")");
      a.value = r.expression(r.need(t, key + ".", "value"), key + ".value");
      check_names(r, &node, key + ".value", a.value.names(), names, false);
    } else {
      r.only(t, key + ".", {"name", "type", "length", "role", "fill"});
      // A type's name as it is ("f32"), or an expression that gives one ("dtype").
      const toml::node* type = r.need(t, key + ".", "type");
      const auto* type_text = type->as_string();
      a.type = type_text && find_type(type_text->get())
                   ? expr::Expression::parse("\"" + type_text->get() + "\"")
                   : r.expression(type, key + ".type");
      a.length = r.expression(r.need(t, key + ".", "length"), key + ".length");
      check_names(r, &node, key + ".type", a.type.names(), names, true);
      check_names(r, &node, key + ".length", a.length.names(), names, true);
      const std::string role = r.text(t, key + ".", "role");
      if (role != "in" && role != "out" && role != "inout")
        r.fail(t.get("role"), key + ".role", "'" + role + "' is not in, out or inout");
      a.input = role != "out";
      a.output = role != "in";
      if (const toml::node* f = t.get("fill")) {
        if (!a.input) r.fail(f, key + ".fill", "an output is not filled (it is poisoned)");
        a.fill = read_fill(r, f, key + ".fill");
        a.has_fill = true;
      }
    }
    if (std::any_of(spec.arguments.begin(), spec.arguments.end(),
                    [&](const Argument& o) { return o.name == a.name; }))
      r.fail(&node, key, "a second argument of that name");
    spec.arguments.push_back(std::move(a));
  }
  if (!builtin && std::none_of(spec.arguments.begin(), spec.arguments.end(),
                               [](const Argument& a) { return a.buffer && a.output; }))
    r.fail(root.get("argument"), "argument", "no output buffer to verify");

  // Verification: a reference kernel from the same sources, and a tolerance.
  if (!builtin) {
    const toml::node* n = r.need(root, "", "verify");
    const auto& t = r.table(n, "verify");
    r.only(t, "verify.", {"reference", "grid", "block", "shared", "tolerance"});
    const toml::node* ref = r.need(t, "verify.", "reference");
    spec.reference = r.name_template(ref, "verify.reference");
    check_names(r, ref, "verify.reference", spec.reference.names(), names, true);
    // The reference runs without a configuration: its geometry uses no parameter.
    spec.reference_launch = read_geometry(r, t, "verify.", names, true);
    const toml::node* tol = r.need(t, "verify.", "tolerance");
    if (tol->is_string()) {
      if (r.text(tol, "verify.tolerance") != "exact")
        r.fail(tol, "verify.tolerance",
               "a string tolerance is \"exact\"; else {abs, rel} or {ulps}");
    } else {
      const auto& tt = r.table(tol, "verify.tolerance");
      r.only(tt, "verify.tolerance.", {"abs", "rel", "ulps"});
      spec.tolerance.exact = false;
      if (const toml::node* u = tt.get("ulps")) {
        if (tt.get("abs") || tt.get("rel"))
          r.fail(tol, "verify.tolerance", "either ulps or abs/rel, not both");
        spec.tolerance.ulps = r.integer(u, "verify.tolerance.ulps");
        if (spec.tolerance.ulps < 0) r.fail(u, "verify.tolerance.ulps", "must be >= 0");
      } else {
        if (const toml::node* x = tt.get("abs"))
          spec.tolerance.abs = r.number(x, "verify.tolerance.abs");
        if (const toml::node* x = tt.get("rel"))
          spec.tolerance.rel = r.number(x, "verify.tolerance.rel");
        if (spec.tolerance.abs < 0 || spec.tolerance.rel < 0)
          r.fail(tol, "verify.tolerance", "abs and rel must be >= 0");
      }
    }
  }

  // The metric: work per run in the unit's quantity (bytes for GB/s, flops for TFLOPS).
  {
    const toml::node* n = r.need(root, "", "metric");
    const auto& t = r.table(n, "metric");
    r.only(t, "metric.", {"work", "unit"});
    spec.work = r.expression(r.need(t, "metric.", "work"), "metric.work");
    check_names(r, n, "metric.work", spec.work.names(), names, true);
    spec.unit = r.text(t, "metric.", "unit");
    if (!valid_rate_unit(spec.unit))
      r.fail(
          t.get("unit"), "metric.unit",
          "'" + spec.unit + "' is not a rate with a k, M, G or T prefix (GB/s, TFLOPS, Gitems/s)");
  }

  // The default configuration: every parameter, a listed value.
  if (!builtin) {
    const toml::node* n = r.need(root, "", "default");
    const auto& t = r.table(n, "default");
    for (auto&& [k, v] : t) {
      const std::string name(k.str());
      auto p = std::find_if(spec.params.begin(), spec.params.end(),
                            [&](const Param& q) { return q.name == name; });
      if (p == spec.params.end()) r.fail(&v, "default." + name, "not a parameter");
      const std::int64_t value = r.integer(&v, "default." + name);
      if (std::find(p->values.begin(), p->values.end(), value) == p->values.end())
        r.fail(&v, "default." + name, std::to_string(value) + " is not one of its values");
      spec.defaults[name] = value;
    }
    for (const auto& p : spec.params)
      if (!spec.defaults.count(p.name)) r.fail(n, "default." + p.name, "missing");
  }

  for (const char* which : {"check", "tune"}) {
    if (const toml::node* n = root.get(which))
      for (const auto& node : r.array(n, which))
        (std::string(which) == "check" ? spec.check : spec.tune)
            .push_back(read_problem(r, spec, &node, which));
  }
  if (spec.check.empty() || spec.tune.empty()) {
    Problem p;
    p.family = spec.name;
    for (const auto& a : spec.axes)
      if (a.integer)
        p.sizes[a.name] = a.def;
      else
        p.attrs[a.name] = a.def_text;
    if (spec.check.empty()) spec.check.push_back(p);
    if (spec.tune.empty()) spec.tune.push_back(p);
  }

  // What changes the compiled kernel or what a configuration means, besides the sources: the
  // name expression, options, parameters, derived values, launch and arguments. Not the
  // reference, the tolerance, the help texts or comments.
  std::ostringstream h;
  h << spec.kernel.text() << '\n';
  for (const auto& o : spec.options) h << o << '\n';
  for (const auto& p : spec.params) {
    h << p.name;
    for (auto v : p.values) h << ' ' << v;
    h << '\n';
  }
  for (const auto& d : spec.derived) h << d.name << '=' << d.value.text() << '\n';
  for (const auto& g : spec.launch.grid) h << "grid " << g.text() << '\n';
  for (const auto& b : spec.launch.block) h << "block " << b.text() << '\n';
  h << "shared " << spec.launch.shared.text() << '\n';
  for (const auto& a : spec.arguments)
    h << a.name << ' '
      << (a.buffer ? a.type.text() + " " + a.length.text() : a.scalar_type + " " + a.value.text())
      << '\n';
  spec.hashed = h.str();
  return spec;
}

// ---------------------------------------------------------------------------------------------
// Evaluating: the names of one (configuration, problem, device)

class Scope {
 public:
  Scope(const Spec& spec, const Config* config, const Problem& problem, const DeviceLimits* limits)
      : spec_(spec), config_(config), problem_(problem), limits_(limits) {}

  expr::Scope scope() const {
    return [this](std::string_view name) { return find(name); };
  }

 private:
  const expr::Value* find(std::string_view name) const {
    auto it = cache_.find(name);
    if (it != cache_.end()) return &it->second;
    const std::string key(name);
    if (config_) {
      auto c = config_->find(key);
      if (c != config_->end()) return put(key, expr::Value::integer(c->second));
    }
    if (auto s = problem_.sizes.find(key); s != problem_.sizes.end())
      return put(key, expr::Value::integer(s->second));
    if (auto a = problem_.attrs.find(key); a != problem_.attrs.end())
      return put(key, expr::Value::string(a->second));
    if (limits_)
      for (const auto& d : kDeviceNames)
        if (key == d.name) return put(key, expr::Value::integer(d.get(*limits_)));
    for (const auto& d : spec_.derived)
      if (d.name == key) return put(key, d.value.eval(scope()));  // earlier ones only: no cycle
    return nullptr;
  }
  const expr::Value* put(const std::string& key, expr::Value v) const {
    return &cache_.emplace(key, std::move(v)).first->second;
  }

  const Spec& spec_;
  const Config* config_;
  const Problem& problem_;
  const DeviceLimits* limits_;
  mutable std::map<std::string, expr::Value, std::less<>> cache_;
};

struct Dims {
  std::int64_t v[3] = {1, 1, 1};
  std::int64_t product() const { return v[0] * v[1] * v[2]; }
};

Dims eval_dims(const std::vector<expr::Expression>& dims, const Scope& s) {
  Dims d;
  for (std::size_t i = 0; i < dims.size(); ++i) d.v[i] = dims[i].eval_int(s.scope());
  return d;
}

// Why a launch geometry is impossible, or "".
std::string geometry_problem(const Dims& grid, const Dims& block, std::int64_t shared,
                             const DeviceLimits& limits) {
  static const char* const kAxis[] = {"x", "y", "z"};
  for (int i = 0; i < 3; ++i) {
    if (grid.v[i] < 1) return std::string("grid.") + kAxis[i] + " is below 1";
    if (block.v[i] < 1) return std::string("block.") + kAxis[i] + " is below 1";
  }
  if (grid.v[0] > 0x7fffffff || grid.v[1] > 65535 || grid.v[2] > 65535)
    return "the grid exceeds the device's limits (2^31-1 x 65535 x 65535)";
  if (block.v[2] > 64 || block.v[0] > 1024 || block.v[1] > 1024 ||
      block.product() > limits.max_threads_per_block)
    return "the block exceeds the device's threads per block";
  if (shared < 0) return "negative shared memory";
  if (shared > limits.smem_per_block_optin) return "the dynamic shared memory exceeds the device's";
  return {};
}

std::uint64_t checked_length(const expr::Expression& e, const Scope& s, const std::string& what) {
  const std::int64_t n = e.eval_int(s.scope());
  if (n < 0)
    throw Error(ErrorCode::kInvalidArgument, what + ": negative length " + std::to_string(n));
  return static_cast<std::uint64_t>(n);
}

const ElementType& buffer_type(const Argument& a, const Scope& s) {
  const expr::Value v = a.type.eval(s.scope());
  const std::string name = v.is_string() ? v.as_string() : v.to_string();
  const ElementType* t = find_type(name);
  if (!t)
    throw Error(ErrorCode::kInvalidArgument,
                "argument " + a.name + ": type '" + name + "' is not one of " + type_names());
  return *t;
}

class FileFamily;

// Buffers of one problem: the kernel's arguments, reference outputs, and the comparisons.
class FileWorkload final : public Workload {
 public:
  FileWorkload(const FileFamily& family, const Spec& spec, const Problem& p, const Device& device,
               KernelCache& cache);

  void prepare(std::uint64_t seed, CUstream stream) override;
  void run(const Kernel& kernel, const Config& config, CUstream stream) override;
  std::string verify(CUstream stream) override;
  double work() const override { return work_; }
  std::size_t bytes() const override { return bytes_; }
  // The kernel's arguments as Runtime::launch takes them (after prepare()).
  std::vector<Arg> launch_args() const {
    std::vector<Arg> out;
    for (const Slot& slot : slots_) {
      if (slot.arg->buffer)
        out.emplace_back(reinterpret_cast<const void*>(slot.data.get()));
      else if (slot.value.is_real())
        out.emplace_back(slot.value.as_real());
      else
        out.emplace_back(slot.value.as_int());
    }
    return out;
  }

 private:
  struct Slot {
    const Argument* arg;
    const ElementType* type = nullptr;
    std::uint64_t length = 0;
    detail::DeviceBuffer data, reference, pristine;  // reference/pristine: outputs/inouts
    std::vector<unsigned char> scalar;               // a scalar's bytes
    expr::Value value;                               // a scalar's value
    int fill_helper = -1, compare_helper = -1;
  };
  void launch(const Kernel& kernel, std::size_t index, const Dims& grid, const Dims& block,
              std::int64_t shared, bool reference, CUstream stream);

  const Spec& spec_;
  const Device& device_;
  Problem problem_;
  std::vector<Slot> slots_;
  std::shared_ptr<const Kernel> helpers_, reference_;
  detail::DeviceBuffer result_;
  double work_ = 0;
  std::size_t bytes_ = 0;
};

class FileFamily final : public Family {
 public:
  explicit FileFamily(Spec spec) : spec_(std::move(spec)) {}

  std::string name() const override { return spec_.name; }
  std::string description() const override { return spec_.description; }
  std::string source_file() const override { return spec_.source_name; }
  const std::vector<Param>& params() const override { return spec_.params; }
  std::string metric_unit() const override { return spec_.unit; }
  std::optional<double> work_of(const Problem& p, const DeviceLimits& limits) const override {
    validate(p);
    Scope s(spec_, nullptr, p, &limits);
    return spec_.work.eval_real(s.scope());
  }
  std::string origin() const override { return spec_.path; }
  std::vector<Problem> check_problems() const override { return spec_.check; }
  std::vector<Problem> default_problems() const override { return spec_.tune; }

  SourceSet sources() const override {
    return {spec_.source_name, spec_.source, spec_.headers, spec_.options, spec_.hashed};
  }

  void validate(const Problem& p) const override {
    const std::string why = problem_error(p);
    if (!why.empty()) throw Error(ErrorCode::kInvalidArgument, spec_.name + ": " + why);
  }

  std::string reject(const Config& c, const Problem& p, const DeviceLimits& limits) const override {
    Scope s(spec_, &c, p, &limits);
    for (const auto& k : spec_.constraints) {
      try {
        if (!k.rule.eval_bool(s.scope())) return k.why;
      } catch (const Error& e) {
        return k.why + " (the rule cannot be evaluated: " + e.what() + ")";
      }
    }
    if (spec_.builtin) return {};  // its C++ checks the launch
    try {
      return geometry_problem(eval_dims(spec_.launch.grid, s), eval_dims(spec_.launch.block, s),
                              spec_.launch.shared.eval_int(s.scope()), limits);
    } catch (const Error& e) {
      return std::string("the launch geometry cannot be computed: ") + e.what();
    }
  }

  std::string reject_compiled(const Config& c, const Problem& p, const DeviceLimits& limits,
                              const FunctionResources& res) const override {
    Scope s(spec_, &c, p, &limits);
    const std::int64_t block = eval_dims(spec_.launch.block, s).product();
    const std::int64_t shared = spec_.launch.shared.eval_int(s.scope());
    if (res.smem_static + shared > limits.smem_per_block_optin)
      return "static and dynamic shared memory exceed the device's";
    if (res.registers > 0) {
      const std::int64_t per_warp = (res.registers * 32 + 255) / 256 * 256;
      if ((block + 31) / 32 * per_warp > limits.regs_per_block)
        return std::to_string(res.registers) + " registers per thread do not fit " +
               std::to_string(block) + " threads in one block";
    }
    return {};
  }

  int block_threads(const Config& c, const Problem& p) const override {
    Scope s(spec_, &c, p, nullptr);
    try {
      return static_cast<int>(eval_dims(spec_.launch.block, s).product());
    } catch (const Error&) {
      return 0;  // needs the device's limits: reject() reports it
    }
  }

  std::vector<std::string> name_expressions(const Config& c, const Problem& p) const override {
    Scope s(spec_, &c, p, nullptr);
    return {spec_.kernel.render(s.scope())};
  }

  Config default_config(const Problem&, const DeviceLimits&) const override {
    return spec_.defaults;
  }

  std::unique_ptr<Workload> make_workload(const Problem& p, const Device& device,
                                          KernelCache& cache) const override {
    if (spec_.builtin)
      throw Error(ErrorCode::kInternal,
                  spec_.name + ": a built-in family's C++ makes its workload");
    return std::make_unique<FileWorkload>(*this, spec_, p, device, cache);
  }

  // For `ktune params`: axes and constraints as text.
  std::vector<std::string> describe_axes() const override {
    std::vector<std::string> out;
    for (const auto& a : spec_.axes)
      out.push_back(a.name + "\t" +
                    (a.integer ? std::to_string(a.min) + " .. " + std::to_string(a.max) +
                                     " (default " + std::to_string(a.def) + ")"
                               : join(a.values, ", ") + " (default " + a.def_text + ")") +
                    "\t" + a.help);
    return out;
  }
  std::optional<LaunchPlan> launch_plan(const Config& c, const Problem& p,
                                        const DeviceLimits& limits) const override {
    if (spec_.builtin) return std::nullopt;  // launched through its typed calls
    Scope s(spec_, &c, p, &limits);
    const Dims grid = eval_dims(spec_.launch.grid, s), block = eval_dims(spec_.launch.block, s);
    const std::int64_t shared = spec_.launch.shared.eval_int(s.scope());
    if (const std::string why = geometry_problem(grid, block, shared, limits); !why.empty())
      throw Error(ErrorCode::kInvalidArgument, spec_.name + " " + p.key() + ": " + why);
    LaunchPlan plan;
    for (int i = 0; i < 3; ++i) {
      plan.grid[i] = static_cast<unsigned>(grid.v[i]);
      plan.block[i] = static_cast<unsigned>(block.v[i]);
    }
    plan.shared = static_cast<unsigned>(shared);
    for (const auto& a : spec_.arguments) {
      LaunchPlan::Argument arg;
      arg.name = a.name;
      arg.buffer = a.buffer;
      if (a.buffer) {
        arg.length = checked_length(a.length, s, "argument " + a.name);
      } else {
        const ElementType& t = *find_type(a.scalar_type);
        arg.bytes = t.bytes;
        arg.floating = t.floating;
        arg.is_signed = t.is_signed;
      }
      plan.arguments.push_back(std::move(arg));
    }
    return plan;
  }

  std::vector<std::string> reference_names(const Problem& p) const override {
    if (spec_.builtin) return {};
    Scope s(spec_, nullptr, p, nullptr);
    return {spec_.reference.render(s.scope())};
  }
  std::vector<std::string> describe_constraints() const override {
    std::vector<std::string> out;
    for (const auto& c : spec_.constraints) out.push_back(c.why + "\t" + c.rule.text());
    return out;
  }

 private:
  std::string problem_error(const Problem& p) const {
    std::size_t sizes = 0, attrs = 0;
    for (const auto& a : spec_.axes) {
      if (a.integer) {
        auto it = p.sizes.find(a.name);
        if (it == p.sizes.end()) return "the problem has no " + a.name;
        if (it->second < a.min || it->second > a.max)
          return a.name + " must be in [" + std::to_string(a.min) + ", " + std::to_string(a.max) +
                 "], not " + std::to_string(it->second);
        ++sizes;
      } else {
        auto it = p.attrs.find(a.name);
        if (it == p.attrs.end()) return "the problem has no " + a.name;
        if (std::find(a.values.begin(), a.values.end(), it->second) == a.values.end())
          return a.name + " '" + it->second + "' is not one of " + join(a.values, ", ");
        ++attrs;
      }
    }
    if (sizes != p.sizes.size() || attrs != p.attrs.size())
      return "the problem has a value that is not one of the axes (" + axis_list() + ")";
    return {};
  }
  std::string axis_list() const {
    std::string out;
    for (const auto& a : spec_.axes) out += (out.empty() ? "" : ", ") + a.name;
    return out;
  }
  static std::string join(const std::vector<std::string>& v, const char* sep) {
    std::string out;
    for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
    return out;
  }

  Spec spec_;
};

FileWorkload::FileWorkload(const FileFamily& family, const Spec& spec, const Problem& p,
                           const Device& device, KernelCache& cache)
    : spec_(spec), device_(device), problem_(p) {
  family.validate(p);
  Scope s(spec, nullptr, p, &device.limits());
  work_ = spec.work.eval_real(s.scope());
  // Helper kernels: one fill per input type, one comparison per output type.
  std::vector<std::string> helper_names;
  auto helper = [&](const std::string& name) {
    auto it = std::find(helper_names.begin(), helper_names.end(), name);
    if (it != helper_names.end()) return static_cast<int>(it - helper_names.begin());
    helper_names.push_back(name);
    return static_cast<int>(helper_names.size() - 1);
  };
  for (const auto& a : spec.arguments) {
    Slot slot;
    slot.arg = &a;
    if (a.buffer) {
      slot.type = &buffer_type(a, s);
      slot.length = checked_length(a.length, s, "argument " + a.name);
      if (slot.length > (std::uint64_t(1) << 40) / slot.type->bytes)
        throw Error(ErrorCode::kInvalidArgument, "argument " + a.name + ": " +
                                                     std::to_string(slot.length) +
                                                     " elements is more than a GPU holds (1 TiB)");
      const std::size_t bytes = std::max<std::uint64_t>(1, slot.length) * slot.type->bytes;
      slot.data = detail::DeviceBuffer(bytes);
      bytes_ += bytes;
      if (a.output) {
        slot.reference = detail::DeviceBuffer(bytes);
        bytes_ += bytes;
        slot.compare_helper = helper(std::string("ktune::data_compare<") + slot.type->cuda + ", " +
                                     (slot.type->floating ? "true" : "false") + ">");
      }
      if (a.input && a.output) {
        slot.pristine = detail::DeviceBuffer(bytes);
        bytes_ += bytes;
      }
      if (a.input)
        slot.fill_helper = helper(std::string("ktune::data_fill<") + slot.type->cuda + ">");
    }
    slots_.push_back(std::move(slot));
  }
  CompileRequest h;
  h.source_name = "file_family.cuh";
  h.source = template_source("file_family.cuh");
  h.headers = {{"common.cuh", template_source("common.cuh")}};
  h.name_expressions = helper_names;
  h.arch = device.limits().arch();
  helpers_ = cache.get(h);
  CompileRequest ref = family.compile_request(spec.defaults, p, device.limits().arch());
  ref.name_expressions = {spec.reference.render(s.scope())};
  reference_ = cache.get(ref);
  result_ = detail::DeviceBuffer(2 * sizeof(std::uint64_t));
}

void FileWorkload::launch(const Kernel& kernel, std::size_t index, const Dims& grid,
                          const Dims& block, std::int64_t shared, bool reference, CUstream stream) {
  std::vector<void*> args;
  std::vector<CUdeviceptr> pointers(slots_.size());
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    if (slot.arg->buffer) {
      pointers[i] = reference && slot.arg->output ? slot.reference.get() : slot.data.get();
      args.push_back(&pointers[i]);
    } else {
      args.push_back(slot.scalar.data());
    }
  }
  if (shared > device_.limits().smem_per_block)
    kernel.allow_dynamic_smem(index, static_cast<int>(shared));
  kernel.launch(index, static_cast<unsigned>(grid.v[0]), static_cast<unsigned>(grid.v[1]),
                static_cast<unsigned>(grid.v[2]), static_cast<unsigned>(block.v[0]),
                static_cast<unsigned>(block.v[1]), static_cast<unsigned>(block.v[2]),
                static_cast<unsigned>(shared), stream, args.data());
}

// A scalar's value as the bytes of its type, range-checked.
std::vector<unsigned char> scalar_bytes(const Argument& a, const Scope& s) {
  const ElementType& t = *find_type(a.scalar_type);
  std::vector<unsigned char> out(8, 0);
  const std::string what = "argument " + a.name + " (" + t.name + ")";
  if (t.floating) {
    const double v = a.value.eval_real(s.scope());
    if (t.bytes == 4) {
      const float f = static_cast<float>(v);
      std::memcpy(out.data(), &f, 4);
    } else {
      std::memcpy(out.data(), &v, 8);
    }
    return out;
  }
  const std::int64_t v = a.value.eval_int(s.scope());
  const int bits = t.bytes * 8;
  const bool fits = t.is_signed ? (bits == 64 || (v >= -(std::int64_t(1) << (bits - 1)) &&
                                                  v < (std::int64_t(1) << (bits - 1))))
                                : (v >= 0 && (bits == 64 || v < (std::int64_t(1) << bits)));
  if (!fits)
    throw Error(ErrorCode::kInvalidArgument, what + ": " + std::to_string(v) + " does not fit");
  std::memcpy(out.data(), &v, t.bytes);  // little endian: the low bytes
  return out;
}

void FileWorkload::prepare(std::uint64_t seed, CUstream stream) {
  const auto& d = driver();
  const unsigned blocks = static_cast<unsigned>(device_.limits().sm_count * 8);
  Scope s(spec_, nullptr, problem_, &device_.limits());
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    if (!slot.arg->buffer) {
      slot.scalar = scalar_bytes(*slot.arg, s);
      slot.value = slot.arg->value.eval(s.scope());
      continue;
    }
    if (slot.arg->input) {
      CUdeviceptr p = slot.data.get();
      std::uint64_t n = slot.length, sd = seed * 1000003 + i;
      const Fill fill =
          slot.arg->has_fill || slot.type->floating ? slot.arg->fill : Fill{2, 0, 100};
      int kind = fill.kind;
      double a = fill.a, b = fill.b;
      void* args[] = {&p, &n, &sd, &kind, &a, &b};
      helpers_->launch(static_cast<std::size_t>(slot.fill_helper), blocks, 1, 1, 256, 1, 1, 0,
                       stream, args);
      if (slot.arg->output) {
        check(d.cuMemcpyDtoDAsync(slot.pristine.get(), slot.data.get(), slot.data.size(), stream),
              "cuMemcpyDtoDAsync");
        check(d.cuMemcpyDtoDAsync(slot.reference.get(), slot.data.get(), slot.data.size(), stream),
              "cuMemcpyDtoDAsync");
      }
    } else {
      // Outputs poisoned: 0xFF bytes are NaN in floating types, -1 / max in integer ones.
      check(d.cuMemsetD8Async(slot.data.get(), 0xFF, slot.data.size(), stream), "cuMemsetD8Async");
      check(d.cuMemsetD8Async(slot.reference.get(), 0xFF, slot.reference.size(), stream),
            "cuMemsetD8Async");
    }
  }
  // The reference's outputs, once per set of inputs.
  launch(*reference_, 0, eval_dims(spec_.reference_launch.grid, s),
         eval_dims(spec_.reference_launch.block, s),
         spec_.reference_launch.shared.eval_int(s.scope()), true, stream);
}

void FileWorkload::run(const Kernel& kernel, const Config& config, CUstream stream) {
  Scope s(spec_, &config, problem_, &device_.limits());
  launch(kernel, 0, eval_dims(spec_.launch.grid, s), eval_dims(spec_.launch.block, s),
         spec_.launch.shared.eval_int(s.scope()), false, stream);
}

std::string FileWorkload::verify(CUstream stream) {
  const auto& d = driver();
  const unsigned blocks = static_cast<unsigned>(device_.limits().sm_count * 8);
  for (Slot& slot : slots_) {
    if (!slot.arg->buffer || !slot.arg->output || slot.length == 0) continue;
    check(d.cuMemsetD8Async(result_.get(), 0, 8, stream), "cuMemsetD8Async");
    check(d.cuMemsetD8Async(result_.get() + 8, 0xFF, 8, stream), "cuMemsetD8Async");
    CUdeviceptr got = slot.data.get(), want = slot.reference.get(), result = result_.get();
    std::uint64_t n = slot.length;
    double abs_tol = spec_.tolerance.abs, rel_tol = spec_.tolerance.rel;
    long long ulps = spec_.tolerance.exact ? 0 : spec_.tolerance.ulps;
    void* args[] = {&got, &want, &n, &abs_tol, &rel_tol, &ulps, &result};
    helpers_->launch(static_cast<std::size_t>(slot.compare_helper), blocks, 1, 1, 256, 1, 1, 0,
                     stream, args);
    std::uint64_t host[2] = {0, 0};
    check(d.cuMemcpyDtoHAsync(host, result_.get(), sizeof(host), stream), "cuMemcpyDtoHAsync");
    check(d.cuStreamSynchronize(stream), "cuStreamSynchronize");
    if (host[0] != 0)
      return std::to_string(host[0]) + " of " + std::to_string(slot.length) + " element(s) of " +
             slot.arg->name + " differ from the reference, first at index " +
             std::to_string(host[1]);
  }
  // An inout buffer is compared after the first run only: restore it for the next.
  for (Slot& slot : slots_)
    if (slot.arg->buffer && slot.arg->input && slot.arg->output)
      check(d.cuMemcpyDtoDAsync(slot.data.get(), slot.pristine.get(), slot.data.size(), stream),
            "cuMemcpyDtoDAsync");
  return {};
}

// The family of a spec whose [[check]] and [[tune]] problems are valid ones of its axes.
std::unique_ptr<Family> make_family(Spec spec) {
  const std::string path = spec.path;
  const std::vector<Problem> check = spec.check, tune = spec.tune;
  auto family = std::make_unique<FileFamily>(std::move(spec));
  for (const auto* list : {&check, &tune})
    for (std::size_t i = 0; i < list->size(); ++i) {
      try {
        family->validate((*list)[i]);
      } catch (const Error& e) {
        throw Error(ErrorCode::kInvalidArgument,
                    path + ": [[" + (list == &check ? "check" : "tune") + "]] entry " +
                        std::to_string(i + 1) + ": " + e.what());
      }
    }
  return family;
}

}  // namespace

std::vector<Arg> file_workload_args(const Workload& workload) {
  const auto* w = dynamic_cast<const FileWorkload*>(&workload);
  if (!w) throw Error(ErrorCode::kInternal, "file_workload_args: not a family file's workload");
  return w->launch_args();
}

std::unique_ptr<Family> load_family_file(const std::string& path) {
  return make_family(read_spec(path, read_text(path, "family file")));
}

std::unique_ptr<Family> parse_family_file(const std::string& text, const std::string& path,
                                          const std::string* source_text) {
  return make_family(read_spec(path, text, source_text));
}

std::unique_ptr<Family> parse_builtin_family_file(const std::string& text,
                                                  const std::string& path) {
  return make_family(read_spec(path, text, nullptr, /*builtin=*/true));
}

BuiltinFileFamily::BuiltinFileFamily(const std::string& name)
    : data_(parse_builtin_family_file(template_source(name + ".family.toml"),
                                      "families/" + name + "/" + name + ".family.toml")) {}

}  // namespace ktune

// The registry: the built-in families, compiled in, and the families of family files, loaded
// once per process from $KTUNE_FAMILY_FILES and $KTUNE_FAMILY_PATH or added by name.
#include "families/registry.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/util.hpp"
#include "families/file_family.hpp"
#include "ktune/error.hpp"

namespace fs = std::filesystem;

namespace ktune {

// Defined next to each built-in family's descriptor.
const Family& elementwise_family();
const Family& gemm_family();
const Family& gemm_skinny_family();
const Family& gemm_tc_family();
const Family& gemm_tc80_family();
const Family& gemm_tc_skinny_family();
const Family& histogram_family();

namespace {
// The built-in families by name, each made on first use: a family with a family file parses it
// (0.3 to 0.5 ms, more in a process's first parse), so a first call made through find_family()
// builds only the families it names (the runtime's first copy does not parse gemm's file).
struct Builtin {
  const char* name;
  const Family& (*get)();
};
constexpr Builtin kBuiltins[] = {
    {"elementwise", elementwise_family}, {"gemm", gemm_family},
    {"gemm_skinny", gemm_skinny_family}, {"gemm_tc", gemm_tc_family},
    {"gemm_tc80", gemm_tc80_family},     {"gemm_tc_skinny", gemm_tc_skinny_family},
    {"histogram", histogram_family}};

struct Registry {
  std::mutex mutex;
  bool loaded = false;
  std::string error;
  std::vector<std::unique_ptr<Family>> owned;
  std::vector<const Family*> families;
};

Registry& registry() {
  static Registry r;
  return r;
}

// Takes a loaded family unless its name is taken.
const Family& add_owned(Registry& r, std::unique_ptr<Family> family) {
  const std::string name = family->name();
  for (const Builtin& b : kBuiltins)  // by name: a family file does not make the built-ins
    if (name == b.name)
      throw Error(ErrorCode::kInvalidArgument,
                  family->origin() + ": name '" + name + "' is a built-in family's");
  for (const Family* f : r.families)
    if (f->name() == name)
      throw Error(ErrorCode::kInvalidArgument, family->origin() + ": family '" + name +
                                                   "' is already defined by " + f->origin());
  r.owned.push_back(std::move(family));
  r.families.push_back(r.owned.back().get());
  return *r.families.back();
}

void add_locked(Registry& r, const std::string& path) {
  const std::string canonical = fs::weakly_canonical(fs::absolute(path)).string();
  for (const Family* f : r.families)
    if (f->origin() == canonical) return;  // the same file twice (a flag and the environment)
  add_owned(r, load_family_file(canonical));
}

void load_environment(Registry& r) {
  if (r.loaded) {
    if (!r.error.empty()) throw Error(ErrorCode::kInvalidArgument, r.error);
    return;
  }
  r.loaded = true;
  try {
    for (const auto& file : split_paths(std::getenv("KTUNE_FAMILY_FILES"))) add_locked(r, file);
    for (const auto& folder : split_paths(std::getenv("KTUNE_FAMILY_PATH"))) {
      std::error_code ec;
      if (!fs::is_directory(folder, ec))
        throw Error(ErrorCode::kInvalidArgument,
                    "$KTUNE_FAMILY_PATH: " + folder + " is not a folder");
      std::vector<std::string> files;
      for (const auto& entry : fs::directory_iterator(folder, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.size() > 12 && name.compare(name.size() - 12, 12, ".family.toml") == 0)
          files.push_back(entry.path().string());
      }
      std::sort(files.begin(), files.end());
      for (const auto& f : files) add_locked(r, f);
    }
  } catch (const Error& e) {
    r.error = e.what();
    throw;
  }
}

}  // namespace

std::vector<const Family*> builtin_families() {
  std::vector<const Family*> out;
  for (const Builtin& b : kBuiltins) {
    const Family& f = b.get();
    if (f.name() != b.name)
      throw Error(ErrorCode::kInternal, std::string("family registry: '") + b.name +
                                            "' names the family '" + f.name() + "'");
    out.push_back(&f);
  }
  return out;
}

std::vector<const Family*> all_families() {
  std::vector<const Family*> out = builtin_families();
  for (const Family* f : user_families()) out.push_back(f);
  return out;
}

const Family& find_family(const std::string& name) {
  for (const Builtin& b : kBuiltins)
    if (name == b.name) return b.get();  // found without making the others or loading files
  std::string known;
  for (const Family* f : all_families()) {
    if (f->name() == name) return *f;
    known += (known.empty() ? "" : ", ") + f->name();
  }
  throw Error(ErrorCode::kInvalidArgument,
              "unknown family '" + name + "' (known: " + known +
                  "; a family of your own is named by --family-file or $KTUNE_FAMILY_PATH)");
}

const std::vector<const Family*>& user_families() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  load_environment(r);
  return r.families;
}

const Family& add_family_file(const std::string& path, bool for_child_processes) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  load_environment(r);
  const std::size_t before = r.families.size();
  add_locked(r, path);
  const Family* added = r.families.size() > before ? r.families.back() : nullptr;
  const std::string canonical = fs::weakly_canonical(fs::absolute(path)).string();
  if (!added)
    for (const Family* f : r.families)
      if (f->origin() == canonical) added = f;
  // Child processes (the tuner's workers) load the same files.
  std::string files = std::getenv("KTUNE_FAMILY_FILES") ? std::getenv("KTUNE_FAMILY_FILES") : "";
  if (for_child_processes && files.find(canonical) == std::string::npos) {
    files += (files.empty() ? "" : ":") + canonical;
    ::setenv("KTUNE_FAMILY_FILES", files.c_str(), 1);
  }
  return *added;
}

const Family& add_family(std::unique_ptr<Family> family) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  load_environment(r);
  return add_owned(r, std::move(family));
}

}  // namespace ktune

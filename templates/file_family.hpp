// Families described by a family file (TOML): a user's kernel, its parameters, constraints,
// problem axes, launch geometry, arguments, reference and metric, as data. See
// docs/FAMILY_FILES.md for the format.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ktune/launch.hpp"
#include "templates/family.hpp"

namespace ktune {

// Reads, parses and checks a family file: every key known, every expression parsed and naming
// only what exists, the sources read (the compile comes later, in `ktune check`). Throws
// Error(kInvalidArgument) naming the file, the line where known, and the key.
std::unique_ptr<Family> load_family_file(const std::string& path);
// The same for a family file's text; `path` names it in messages and its folder holds the sources.
std::unique_ptr<Family> parse_family_file(const std::string& text, const std::string& path);

// The family files a process knows besides the built-in families: those named in
// $KTUNE_FAMILY_FILES (paths separated by ':'; the CLI's --family-file adds to it, so that the
// tuner's worker processes see them too) and every *.family.toml in the folders of
// $KTUNE_FAMILY_PATH. Loaded once, at the first call; an error is thrown at every call.
const std::vector<const Family*>& user_families();

// Adds a family file to this process and, with `for_child_processes`, to $KTUNE_FAMILY_FILES
// (the CLI does, for the tuner's worker processes; a library leaves its host's environment
// alone). Throws when it cannot be loaded or its name is taken. Returns the family.
const Family& add_family_file(const std::string& path, bool for_child_processes = false);

// The arguments of a family file's workload (made by make_workload, after prepare()) as
// Runtime::launch takes them: for timing launch() against a raw launch of the same kernel.
std::vector<Arg> file_workload_args(const Workload& workload);

}  // namespace ktune

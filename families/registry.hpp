// The families a process knows: the built-in ones and those of family files, found by name.
#pragma once

#include <string>
#include <vector>

#include "families/family.hpp"

namespace ktune {

// Families by name; throws Error(kInvalidArgument) listing the known ones. all_families(): the
// built-in ones, then those of family files (loaded at first use).
const Family& find_family(const std::string& name);
std::vector<const Family*> all_families();
// The families compiled into ktune.
std::vector<const Family*> builtin_families();

// The family files a process knows besides the built-in families: those named in
// $KTUNE_FAMILY_FILES (paths separated by ':'; the CLI's --family-file adds to it, so that the
// tuner's worker processes see them too) and every *.family.toml in the folders of
// $KTUNE_FAMILY_PATH. Loaded once, at the first call; an error is thrown at every call.
const std::vector<const Family*>& user_families();

// Adds a family file to this process and, with `for_child_processes`, to $KTUNE_FAMILY_FILES
// (the CLI does, for the tuner's worker processes; a library leaves its host's environment
// alone). Throws when it cannot be loaded or its name is taken. Returns the family.
const Family& add_family_file(const std::string& path, bool for_child_processes = false);

// Adds a family made in this process (ktune::add_family of a FamilyBuilder). Throws when its name
// is taken. Returns the family.
const Family& add_family(std::unique_ptr<Family> family);

}  // namespace ktune

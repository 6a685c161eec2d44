// The configuration lookup chain: exact -> predicted (families with a model) -> nearest -> same
// architecture -> built-in default.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "families/family.hpp"
#include "ktune/ktune.hpp"
#include "platform/device.hpp"
#include "platform/problem.hpp"

namespace ktune {

class Database;

struct LookupResult {
  LookupStep step = LookupStep::kDefault;
  Config config;
  std::string tuned_problem;
  std::optional<double> measured;
  std::string unit;
  std::string device;
  std::optional<double> predicted_ms;         // kPredicted
  std::vector<Choice::Candidate> candidates;  // kPredicted: the ranking, fastest first
};

// Walks the chain for one problem. Every answer is checked valid for the problem on this device
// (parameter space, constraints) before it is returned; invalid or stale rows are skipped.
// `db` may be null (no database: the default answers).
// `predict` false skips the predicted step (Options::predict). `only`: every answer holds these
// parameters to their values (rows that do not are skipped; the default is
// Family::default_config_within): Options::strict_fp32. `shown`: how many of the predicted step's
// ranked candidates the result lists (0: all; `ktune explain --candidates`).
inline constexpr std::size_t kShownCandidates = 8;
LookupResult lookup_config(Database* db, const DeviceInfo& device, const Family& family,
                           const Problem& problem, bool predict = true,
                           const ParamValues& only = {}, std::size_t shown = kShownCandidates);

Choice to_choice(const LookupResult& r, const Family& family, const Problem& problem);

}  // namespace ktune

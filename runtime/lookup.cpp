// The lookup chain. Results of another template hash are stale and never used.
#include "runtime/lookup.hpp"

#include <algorithm>
#include <limits>
#include <map>

#include "db/database.hpp"
#include "families/family.hpp"

namespace ktune {

std::string_view to_string(LookupStep step) noexcept {
  switch (step) {
    case LookupStep::kCache:
      return "cache";
    case LookupStep::kExact:
      return "exact";
    case LookupStep::kNearest:
      return "nearest";
    case LookupStep::kSameArch:
      return "same-arch";
    case LookupStep::kDefault:
      return "default";
    case LookupStep::kPredicted:
      return "predicted";
  }
  return "?";
}

namespace {

// The configuration of a stored row, if it is valid for `problem` here.
std::optional<Config> usable(const ResultRecord& row, const Family& family, const Problem& problem,
                             const DeviceLimits& limits) {
  try {
    Config c = family.normalize(parse_config(row.config));
    family.check_config(c);
    c = family.adapt(c, problem, limits);
    if (!family.reject(c, problem, limits).empty()) return std::nullopt;
    return c;
  } catch (const Error&) {
    return std::nullopt;  // a row from an older parameter space: skip it
  }
}

LookupResult from_row(LookupStep step, const ResultRecord& row, Config config) {
  LookupResult r;
  r.step = step;
  r.config = std::move(config);
  r.tuned_problem = row.problem;
  r.measured = row.metric;
  r.unit = row.unit;
  r.device = row.device.identity();
  return r;
}

// The predicted step over the rows `eligible` accepts; nullopt where the family has no model or
// no row gives a prediction. Which rows measure the problem's kind (GEMM: its dtype) is the
// family's to say (predict_ms returns nullopt): a family file's axes are its own.
template <typename Eligible>
std::optional<LookupResult> predicted(const std::vector<ResultRecord>& rows, Eligible eligible,
                                      const Family& family, const Problem& problem,
                                      const DeviceInfo& device) {
  struct Ranked {
    double ms;
    const ResultRecord* row;
    Config config;
  };
  std::vector<Ranked> ranked;
  std::map<Config, std::size_t> seen;  // one entry per configuration: its best prediction
  for (const auto& row : rows) {
    if (!eligible(row) || !(row.time_median_ms > 0)) continue;
    Problem tuned;
    Config measured;
    try {
      tuned = family.parse_problem(row.problem);
      measured = family.normalize(parse_config(row.config));
    } catch (const Error&) {
      continue;
    }
    // A family without a model (or a row its model cannot use) answers nothing here: known
    // before the row is adapted, so such families pay next to nothing for this step.
    if (!family.predict_ms(measured, tuned, row.time_median_ms, measured, tuned, device)) continue;
    auto adapted = usable(row, family, problem, device.limits);
    if (!adapted) continue;
    std::vector<Config> candidates = family.variants(*adapted, problem, device.limits);
    candidates.insert(candidates.begin(), *adapted);
    for (auto& c : candidates) {
      if (&c != &candidates.front() && !family.reject(c, problem, device.limits).empty()) continue;
      const auto ms = family.predict_ms(measured, tuned, row.time_median_ms, c, problem, device);
      if (!ms) continue;
      auto [it, fresh] = seen.emplace(c, ranked.size());
      if (fresh)
        ranked.push_back({*ms, &row, std::move(c)});
      else if (*ms < ranked[it->second].ms)
        ranked[it->second] = {*ms, &row, std::move(c)};
    }
  }
  if (ranked.empty()) return std::nullopt;
  // Ties (equal predictions) to the configuration measured first in the rows' order.
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Ranked& a, const Ranked& b) { return a.ms < b.ms; });
  LookupResult r = from_row(LookupStep::kPredicted, *ranked.front().row, ranked.front().config);
  r.predicted_ms = ranked.front().ms;
  for (std::size_t i = 0; i < ranked.size() && i < 8; ++i)
    r.candidates.push_back({to_string(ranked[i].config), ranked[i].row->problem,
                            ranked[i].row->device.identity(), ranked[i].row->time_median_ms,
                            ranked[i].ms});
  return r;
}

}  // namespace

LookupResult lookup_config(Database* db, const DeviceInfo& device, const Family& family,
                           const Problem& problem, bool predict) {
  const DeviceLimits& limits = device.limits;
  if (db) {
    const std::string hash = family.template_hash();
    const std::string key = problem.key();
    auto same_device = [&](const ResultRecord& r) {
      return r.device.name == device.name && r.device.cc_major == limits.cc_major &&
             r.device.cc_minor == limits.cc_minor && r.device.sm_count == limits.sm_count;
    };
    // 1. exact problem on this device: the best usable row, through the index (a first call's
    //    whole lookup costs well under a millisecond this way).
    for (const auto& row : db->best_results_for_problem(family.name(), hash, key, device, 16))
      if (same_device(row))
        if (auto c = usable(row, family, problem, limits))
          return from_row(LookupStep::kExact, row, *c);
    std::vector<ResultRecord> best = db->best_results(family.name(), hash);
    // The usable row nearest to the problem (same attributes, log-scale distance in sizes)
    // among those `eligible` accepts.
    auto nearest = [&](LookupStep step, auto eligible) -> std::optional<LookupResult> {
      const ResultRecord* found = nullptr;
      std::optional<Config> config;
      double best_distance = std::numeric_limits<double>::infinity();
      for (const auto& row : best) {
        if (!eligible(row)) continue;
        double d;
        try {
          d = problem_distance(problem, family.parse_problem(row.problem));
        } catch (const Error&) {
          continue;
        }
        if (d >= best_distance) continue;
        if (auto c = usable(row, family, problem, limits)) {
          best_distance = d;
          found = &row;
          config = c;
        }
      }
      if (!found) return std::nullopt;
      return from_row(step, *found, *config);
    };
    // 2. predicted: every usable winner of this device (of its architecture where this device
    //    has none), adapted, with its variants, ranked by the family's model.
    if (predict) {
      if (auto r = predicted(best, same_device, family, problem, device)) return *r;
      auto same_arch = [&](const ResultRecord& row) {
        return row.device.cc_major == limits.cc_major && row.device.cc_minor == limits.cc_minor;
      };
      if (auto r = predicted(best, same_arch, family, problem, device)) return *r;
    }
    // 3. nearest tuned problem of this device
    if (auto r = nearest(LookupStep::kNearest, same_device)) return *r;
    // 4. the same compute capability on another device: nearest problem there
    if (auto r = nearest(LookupStep::kSameArch, [&](const ResultRecord& row) {
          return !same_device(row) && row.device.cc_major == limits.cc_major &&
                 row.device.cc_minor == limits.cc_minor;
        }))
      return *r;
  }
  // 5. built-in default, valid for every problem
  LookupResult r;
  r.step = LookupStep::kDefault;
  r.config = family.default_config(problem, limits);
  r.unit = family.metric_unit();
  return r;
}

Choice to_choice(const LookupResult& r, const Family& family, const Problem& problem) {
  Choice c;
  c.step = r.step;
  c.family = family.name();
  c.problem = problem.key();
  c.tuned_problem = r.tuned_problem;
  c.config = to_string(r.config);
  c.measured = r.measured;
  c.unit = r.unit;
  c.device = r.device;
  c.predicted_ms = r.predicted_ms;
  c.candidates = r.candidates;
  return c;
}

}  // namespace ktune

// Strategy replay on recorded measurements.
#include "tuner/replay.hpp"

#include <algorithm>
#include <deque>

#include "families/family.hpp"
#include "families/registry.hpp"
#include "ktune/error.hpp"
#include "tuner/strategy.hpp"

namespace ktune {
namespace {

DeviceLimits limits_of(const DeviceRecord& d) {
  DeviceLimits l = DeviceLimits::for_arch(d.cc_major, d.cc_minor);
  l.sm_count = d.sm_count;
  return l;
}

}  // namespace

Recording load_recording(Database& db, std::int64_t run_id) {
  const std::optional<RunRecord> run = db.find_run(run_id);
  if (!run)
    throw Error(ErrorCode::kInvalidArgument,
                "--replay: no run " + std::to_string(run_id) + " in " + db.path());
  const Family& family = find_family(run->family);
  std::optional<DeviceRecord> device;
  for (const auto& d : db.devices())
    if (d.id == run->device_id) device = d;
  if (!device)
    throw Error(ErrorCode::kDatabase, "database " + db.path() + ": run without its device");
  // A recording is data from a file: its problem key is checked like any other input before the
  // family's arithmetic sees it (k=-5 divided by zero in the space's walk).
  Problem problem;
  try {
    problem = family.parse_problem(run->problem);
  } catch (const Error& e) {
    throw Error(ErrorCode::kDatabase, "database " + db.path() + ": run " + std::to_string(run_id) +
                                          " records problem '" + run->problem +
                                          "', which is not a valid " + run->family +
                                          " problem: " + e.what());
  }
  Recording rec{run->family,
                run->problem,
                device->identity(),
                SearchSpace(family, problem, limits_of(*device)),
                *device,
                {},
                {},
                {},
                0,
                0};
  rec.time_ms.assign(rec.space.size(), std::nullopt);
  rec.status.assign(rec.space.size(), "");
  rec.metric.assign(rec.space.size(), 0.0);
  ResultFilter f;
  f.family = run->family;
  f.problem = run->problem;
  f.device_id = run->device_id;
  double best = 0;
  for (const auto& row : db.results(f)) {
    if (row.template_hash != run->template_hash) continue;
    std::size_t i = SearchSpace::npos;
    try {
      i = rec.space.index_of(to_string(family.normalize(parse_config(row.config))));
    } catch (const Error&) {
      continue;
    }
    if (i == SearchSpace::npos) continue;
    ++rec.measured;  // one row per configuration: the unique key of results
    rec.status[i] = row.status;
    if (row.status == status::kOk && row.time_median_ms > 0) {
      rec.time_ms[i] = row.time_median_ms;
      rec.metric[i] = row.metric;
      if (best == 0 || row.time_median_ms < best) best = row.time_median_ms;
    }
  }
  rec.best_ms = best;
  return rec;
}

double replay_best(const Recording& r, const std::string& strategy, std::uint64_t seed,
                   std::size_t budget, std::size_t lag) {
  auto st = make_strategy(strategy, r.space, seed, std::vector<bool>(r.space.size(), false));
  std::deque<std::size_t> in_flight;
  double best = 0;
  std::size_t evaluated = 0, proposed = 0;
  while (evaluated < budget) {
    while (in_flight.size() < pipeline_window(lag, evaluated, proposed, st->blind_proposals())) {
      auto i = st->propose();
      if (!i) break;
      ++proposed;
      in_flight.push_back(*i);
    }
    if (in_flight.empty()) break;
    const std::size_t i = in_flight.front();
    in_flight.pop_front();
    const std::optional<double> t = r.time_ms[i];
    st->observe(i, t);
    if (t && (best == 0 || *t < best)) best = *t;
    ++evaluated;
  }
  return best;
}

std::vector<StrategyScore> compare_strategies(const Recording& r,
                                              const std::vector<std::string>& strategies,
                                              const std::vector<std::size_t>& budgets,
                                              std::size_t seeds, std::size_t lag) {
  if (r.best_ms <= 0)
    throw Error(ErrorCode::kInvalidArgument, "--replay: the recording has no measured candidate");
  std::vector<StrategyScore> out;
  for (const auto& name : strategies)
    for (std::size_t budget : budgets) {
      std::vector<double> ratios;
      std::size_t within = 0;
      for (std::uint64_t seed = 1; seed <= seeds; ++seed) {
        const double found = replay_best(r, name, seed, budget, lag);
        const double ratio = found > 0 ? r.best_ms / found : 0;
        ratios.push_back(ratio);
        within += ratio >= 0.97;
      }
      std::sort(ratios.begin(), ratios.end());
      const std::size_t n = ratios.size();
      StrategyScore s;
      s.strategy = name;
      s.budget = budget;
      s.median_ratio = n % 2 ? ratios[n / 2] : 0.5 * (ratios[n / 2 - 1] + ratios[n / 2]);
      s.share_within_3pct = static_cast<double>(within) / static_cast<double>(seeds);
      out.push_back(s);
    }
  return out;
}

}  // namespace ktune

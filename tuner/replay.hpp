// Replay of a recorded tuning run: strategies draw measured times from the database instead of
// the GPU, so that strategies and seeds are compared on the CPU (in CI) in seconds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "db/database.hpp"
#include "tuner/space.hpp"

namespace ktune {

class Family;

// The measurements of one problem on one device: every stored row of the run's (device, family,
// template hash, problem), whichever run measured it (a resumed exhaustive run spans several).
struct Recording {
  std::string family;
  std::string problem;
  std::string device;
  SearchSpace space;
  DeviceRecord device_record;
  std::vector<std::optional<double>> time_ms;  // per space index; nullopt: failed or not measured
  std::vector<std::string> status;             // per space index; "" when not measured
  std::vector<double> metric;                  // per space index; 0 when not measured ok
  std::size_t measured = 0;                    // indices with a row (ok or not)
  double best_ms = 0;                          // the exhaustive optimum among the measured
};

// Loads the recording behind run `run_id`. Throws Error(kInvalidArgument) for an unknown run.
Recording load_recording(Database& db, std::int64_t run_id);

// Best time `strategy` finds within `budget` evaluations for `seed`, with proposals in flight
// ahead of the observations as the tuner keeps them (pipeline_window, growing to `lag`). Unmeasured
// or failed candidates count as evaluations that found nothing, as on the GPU.
double replay_best(const Recording& r, const std::string& strategy, std::uint64_t seed,
                   std::size_t budget, std::size_t lag);

struct StrategyScore {
  std::string strategy;
  std::size_t budget = 0;
  double median_ratio = 0;       // median over seeds of exhaustive best / best found (<= 1)
  double share_within_3pct = 0;  // share of seeds reaching >= 0.97 of the optimum
};

std::vector<StrategyScore> compare_strategies(const Recording& r,
                                              const std::vector<std::string>& strategies,
                                              const std::vector<std::size_t>& budgets,
                                              std::size_t seeds, std::size_t lag);

}  // namespace ktune

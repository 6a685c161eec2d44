// Tune-on-miss for ktune::Runtime: a problem the database has no exact result for is tuned at its
// first call, within a budget, and stored, so later calls and later processes use it.
// Link ktune::tuner (it brings the tuner into the application; ktune::ktune alone never tunes).
//
//   ktune::Options options;
//   options.tune_on_miss = ktune::make_miss_tuner({.max_evals = 48, .max_seconds = 15});
//   ktune::Runtime runtime(options);
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "ktune/ktune.hpp"

namespace ktune {

struct TuneOnMissOptions {
  std::size_t max_evals = 32;  // candidates evaluated per missed problem (> 0)
  double max_seconds = 10;     // wall time per missed problem, compiles included (> 0)
  std::string strategy = "auto";
  std::uint64_t seed = 1;
};

// Throws Error(kInvalidArgument) for a budget that is zero, negative or not finite, or an unknown
// strategy.
std::shared_ptr<MissTuner> make_miss_tuner(TuneOnMissOptions options = {});

}  // namespace ktune

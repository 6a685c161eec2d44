// MissTuner for ktune::Runtime: tunes a missed problem with the ordinary tuning loop, quietly,
// within a small budget, into the runtime's own database file.
#include "ktune/tune_on_miss.hpp"

#include <algorithm>
#include <cmath>

#include "db/database.hpp"
#include "families/family.hpp"
#include "families/registry.hpp"
#include "platform/device.hpp"
#include "runtime/miss_tuner_hook.hpp"
#include "tuner/strategy.hpp"
#include "tuner/tuner.hpp"

namespace ktune {
namespace {

class LoopMissTuner final : public MissTuner {
 public:
  explicit LoopMissTuner(TuneOnMissOptions options) : options_(std::move(options)) {}

  void tune(int device_index, const std::string& database, const std::string& family_name,
            const std::string& problem_key) override {
    const Family& family = find_family(family_name);
    const Problem problem = family.parse_problem(problem_key);
    Device device(device_index);
    Database db(database);
    TuneOptions o;
    o.strategy = options_.strategy;
    o.seed = options_.seed;
    o.max_evals = options_.max_evals;
    o.max_seconds = options_.max_seconds;
    o.progress = false;
    TuneSummary s = ktune::tune(db, device, family, problem, o);
    if (!s.best)
      throw Error(ErrorCode::kCuda, "tune-on-miss: no candidate of " + family_name + " " +
                                        problem_key + " passed verification (" +
                                        std::to_string(s.evaluated) +
                                        " tried; stopped: " + s.stop_reason + ")");
  }

 private:
  TuneOnMissOptions options_;
};

// The C API's tune_on_miss option (ktune_runtime_options): 0 keeps a default.
std::shared_ptr<MissTuner> from_c_api(std::size_t max_evals, double max_seconds) {
  TuneOnMissOptions o;
  if (max_evals != 0) o.max_evals = max_evals;
  if (max_seconds != 0) o.max_seconds = max_seconds;
  return make_miss_tuner(std::move(o));
}

// Set as this object is loaded (with libktune.so, or a program linking the tuner).
[[maybe_unused]] const bool c_api_hook_set = (detail::c_api_miss_tuner = &from_c_api, true);

}  // namespace

std::shared_ptr<MissTuner> make_miss_tuner(TuneOnMissOptions options) {
  if (options.max_evals == 0)
    throw Error(ErrorCode::kInvalidArgument, "TuneOnMissOptions::max_evals must be > 0");
  if (!(options.max_seconds > 0) || !std::isfinite(options.max_seconds))
    throw Error(ErrorCode::kInvalidArgument,
                "TuneOnMissOptions::max_seconds must be a finite number > 0");
  const auto names = strategy_names();
  if (options.strategy != "auto" &&
      std::find(names.begin(), names.end(), options.strategy) == names.end())
    throw Error(ErrorCode::kInvalidArgument,
                "TuneOnMissOptions::strategy: unknown strategy '" + options.strategy + "'");
  return std::make_shared<LoopMissTuner>(std::move(options));
}

}  // namespace ktune

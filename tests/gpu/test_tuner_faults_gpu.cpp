// GPU tests: a tuning run survives faulting and hanging candidates. The `faults` family of the
// tests (tests/families/faults) plants an out-of-bounds write, a misaligned vector load, a trap, an
// endless loop and a refused launch among good candidates; candidates run in worker processes (the
// ktune executable).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "../host/temp_dir.hpp"
#include "db/database.hpp"
#include "families/family.hpp"
#include "families/registry.hpp"
#include "gpu_util.hpp"
#include "tests/ktune_cli.hpp"
#include "tests/test_families.hpp"
#include "tuner/evaluator.hpp"
#include "tuner/tuner.hpp"

namespace ktune {
namespace {

// time_on_stream on a real stream: a run of about 0.3 ms (a 1 GiB memset) under a budget of 2 ms
// is timed a few times after one warm-up run; without the budget, every warm-up and repeat.
TEST(TimingGpu, ALongRunIsTimedFewerTimesWithinItsBudget) {
  KTUNE_REQUIRE_GPU();
  const std::size_t bytes = std::size_t(1) << 30;
  detail::DeviceBuffer buffer(bytes);
  detail::Stream stream;
  int runs = 0;
  auto run = [&](CUstream s) {
    ++runs;
    detail::check(
        detail::driver().cuMemsetD8Async(buffer.get(), static_cast<unsigned char>(runs), bytes, s),
        "cuMemsetD8Async");
  };
  TimingOptions fixed;
  fixed.warmup = 3;
  fixed.repeats = 20;
  const TimingStats all = time_on_stream(run, stream.get(), fixed, nullptr);
  EXPECT_EQ(all.repeats, 20);
  EXPECT_EQ(runs, 23);
  ASSERT_GT(all.median_ms, 0.05) << "the memset is too fast for this test on this GPU";
  TimingOptions budgeted = fixed;
  budgeted.budget_ms = 2;
  budgeted.min_repeats = 5;
  runs = 0;
  const TimingStats few = time_on_stream(run, stream.get(), budgeted, nullptr);
  EXPECT_GE(few.repeats, 5);
  EXPECT_LT(few.repeats, 20) << "median " << all.median_ms << " ms";
  EXPECT_EQ(runs, 1 + few.repeats);  // one warm-up run, timed, then the repeats
  // The same run's median either way, within the run's noise.
  EXPECT_NEAR(few.median_ms, all.median_ms, 0.2 * all.median_ms);
  // No warm-up: the first timed run tells.
  budgeted.warmup = 0;
  runs = 0;
  const TimingStats cold = time_on_stream(run, stream.get(), budgeted, nullptr);
  EXPECT_GE(cold.repeats, 5);
  EXPECT_LT(cold.repeats, 20);
  EXPECT_EQ(runs, cold.repeats);
}

TuneOptions worker_options() {
  TuneOptions o;
  o.strategy = "exhaustive";
  o.max_evals = 0;
  o.progress = false;
  o.timing.repeats = 5;
  o.worker.command = {testing::ktune_cli().c_str(), "__worker"};
  // Compiled in compiler processes, as the ktune command compiles.
  o.compiler_command = {testing::ktune_cli().c_str(), "__compiler"};
  o.worker.floor_s = 1.0;
  o.worker.first_s = 5.0;  // the endless loop may come before any good candidate
  return o;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(PlantedFaultsGpu, EveryFaultIsClassifiedAndEveryGoodCandidateMeasured) {
  KTUNE_REQUIRE_GPU();
  testing::TempDir dir;
  Database db(dir.file("faults.db"));
  const Family& family = testing::faults_family();
  const Problem problem = family.default_problems().front();
  const TuneSummary s = tune(db, ktune_held_device, family, problem, worker_options());

  EXPECT_EQ(s.stop_reason, "space exhausted");
  EXPECT_EQ(s.space_size, 14u);
  EXPECT_EQ(s.evaluated, 14u);
  EXPECT_EQ(s.ok, 9u);
  EXPECT_EQ(s.failed, 5u);
  // Three faults end their worker, the endless loop gets its worker killed; the refused launch
  // is not sticky and leaves its worker running.
  EXPECT_EQ(s.worker_restarts, 4);
  ASSERT_TRUE(s.best.has_value());

  ResultFilter f;
  f.run_id = s.run_id;
  std::map<std::int64_t, int> seen;
  for (const auto& row : db.results(f)) {
    const Config c = parse_config(row.config);
    const std::int64_t kind = c.at("KIND");
    ++seen[kind];
    SCOPED_TRACE(row.config + ": " + row.status + " " + row.message);
    switch (kind) {
      case 0:
        EXPECT_EQ(row.status, status::kOk);
        EXPECT_GT(row.time_median_ms, 0);
        EXPECT_GT(row.metric, 0);
        break;
      case 1:
        EXPECT_EQ(row.status, status::kFault);
        EXPECT_TRUE(contains(row.message, "CUDA_ERROR_ILLEGAL_ADDRESS"));
        break;
      case 2:
        EXPECT_EQ(row.status, status::kFault);
        EXPECT_TRUE(contains(row.message, "CUDA_ERROR_MISALIGNED_ADDRESS"));
        break;
      case 3:
        EXPECT_EQ(row.status, status::kFault);
        EXPECT_TRUE(contains(row.message, "CUDA_ERROR_LAUNCH_FAILED") ||
                    contains(row.message, "CUDA_ERROR_ILLEGAL_INSTRUCTION"));
        break;
      case 4:
        EXPECT_EQ(row.status, status::kTimeout);
        EXPECT_TRUE(contains(row.message, "worker killed"));
        break;
      case 5:  // a cluster of 2 blocks fixed at compile time, launched on 3 blocks
        EXPECT_EQ(row.status, status::kLaunchError);
        EXPECT_TRUE(contains(row.message, "CUDA_ERROR_")) << row.message;
        break;
      default:
        ADD_FAILURE() << "unexpected KIND";
    }
  }
  EXPECT_EQ(seen[0], 9);
  for (int kind = 1; kind <= 5; ++kind) EXPECT_EQ(seen[kind], 1) << "KIND=" << kind;
  ASSERT_TRUE(db.find_run(s.run_id).has_value());
  EXPECT_EQ(db.find_run(s.run_id)->status, "completed");

  // Nothing lost and nothing repeated: a second run finds every candidate done.
  const TuneSummary again = tune(db, ktune_held_device, family, problem, worker_options());
  EXPECT_EQ(again.already_done, 14u);
  EXPECT_EQ(again.evaluated, 0u);
  EXPECT_EQ(again.crashed_recovered, 0);
}

// The worker path measures real candidates as the in-process path does: same space, all correct.
TEST(PlantedFaultsGpu, WorkerMeasuresARealFamily) {
  KTUNE_REQUIRE_GPU();
  testing::TempDir dir;
  Database db(dir.file("copy.db"));
  const Family& family = find_family("elementwise");
  const Problem problem = family.default_problems().front();
  TuneOptions o = worker_options();
  o.strategy = "random";
  o.max_evals = 12;
  const TuneSummary s = tune(db, ktune_held_device, family, problem, o);
  EXPECT_EQ(s.evaluated, 12u);
  EXPECT_EQ(s.ok, 12u);
  EXPECT_EQ(s.worker_restarts, 0);
  ASSERT_TRUE(s.best.has_value());
  EXPECT_GT(s.best->metric, 100.0);  // GB/s: a copy on any data-centre GPU
}

}  // namespace
}  // namespace ktune

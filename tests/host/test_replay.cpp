// Host tests: replaying a recorded run. A synthetic recording stands in for GPU measurements
// here: this tests the replay machinery and the strategies, not the kernels.
#include <gtest/gtest.h>

#include <cmath>

#include "db/database.hpp"
#include "ktune/error.hpp"
#include "run_cli.hpp"
#include "synthetic_recording.hpp"
#include "temp_dir.hpp"
#include "templates/family.hpp"
#include "tuner/replay.hpp"

namespace ktune {
namespace {

using testing::record_synthetic;

TEST(Replay, LoadsTheRecordingAndComparesStrategies) {
  testing::TempDir dir;
  Database db(dir.file("rec.db"));
  const std::string key = "align=16;dtype=f32;n=1048576;op=copy";
  const std::int64_t run = record_synthetic(db, key);
  const Recording rec = load_recording(db, run);
  EXPECT_EQ(rec.measured, rec.space.size());
  EXPECT_GT(rec.best_ms, 0);
  std::size_t failed = 0;
  for (const auto& t : rec.time_ms) failed += !t.has_value();
  EXPECT_GT(failed, 0u);  // wrong results replay as failures
  // An exhaustive budget finds the optimum whatever the strategy.
  EXPECT_DOUBLE_EQ(replay_best(rec, "exhaustive", 1, rec.space.size(), 32), rec.best_ms);
  const auto scores = compare_strategies(rec, {"random", "evolve"}, {200}, 30, 32);
  ASSERT_EQ(scores.size(), 2u);
  EXPECT_GE(scores[1].median_ratio, scores[0].median_ratio);
  EXPECT_GE(scores[1].share_within_3pct, 0.8);
  EXPECT_THROW(load_recording(db, run + 100), Error);
}

TEST(Replay, CliPrintsTheTableAndNamesBadRuns) {
  testing::TempDir dir;
  std::int64_t run = 0;
  {
    Database db(dir.file("rec.db"));
    run = record_synthetic(db, "align=16;dtype=f32;n=1048576;op=add");
  }
  auto r = testing::run_cli({"strategies", "--db", dir.file("rec.db"), "--replay",
                             std::to_string(run), "--seeds", "5", "--csv", dir.file("out.csv")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("evolve"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(target)"), std::string::npos) << r.out;
  auto bad = testing::run_cli({"strategies", "--db", dir.file("rec.db"), "--replay", "999"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("999"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace ktune

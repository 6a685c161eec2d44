// Host tests: replaying a recorded run. A synthetic recording stands in for GPU measurements
// here: this tests the replay machinery and the strategies, not the kernels.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <fstream>
#include <set>

#include "db/database.hpp"
#include "families/family.hpp"
#include "ktune/error.hpp"
#include "run_cli.hpp"
#include "synthetic_recording.hpp"
#include "temp_dir.hpp"
#include "tuner/replay.hpp"
#include "tuner/strategy.hpp"

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
  // Every strategy but exhaustive (the reference) has rows in the CSV.
  std::ifstream csv(dir.file("out.csv"));
  std::set<std::string> compared;
  std::string line;
  std::getline(csv, line);  // header
  while (std::getline(csv, line)) {
    // family,"problem","device",space,measured,strategy,...: the problem and device hold no comma.
    std::size_t at = 0;
    for (int field = 0; field < 5; ++field) at = line.find(',', at) + 1;
    compared.insert(line.substr(at, line.find(',', at) - at));
  }
  std::set<std::string> expected;
  for (const auto& name : strategy_names())
    if (name != "exhaustive") expected.insert(name);
  EXPECT_EQ(compared, expected);
  auto bad = testing::run_cli({"strategies", "--db", dir.file("rec.db"), "--replay", "999"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  EXPECT_NE(bad.err.find("999"), std::string::npos) << bad.err;
}

// The strategies that choose from results. Each runs on the synthetic recording, which stands in
// for GPU measurements: a bowl in three parameters with roughness, and one configuration in 17
// recorded as a wrong result (a failure).
const std::vector<std::string> kAdaptive = {"evolve", "anneal", "genetic", "model", "hybrid"};

Recording synthetic_recording(const testing::TempDir& dir) {
  Database db(dir.file("rec.db"));
  return load_recording(db, record_synthetic(db, "align=16;dtype=f32;n=1048576;op=copy"));
}

// What `strategy` proposes, at most `limit` times, with up to `lag` proposals in flight and each
// result observed from the recording when it leaves the pipeline, as the tuner does. Indices in
// `done` are passed as evaluated; `seeded` are handed to seed() after the first proposals and
// observed like the others.
std::vector<std::size_t> proposals(const Recording& rec, const std::string& strategy,
                                   std::uint64_t seed, std::size_t lag,
                                   const std::vector<bool>& done,
                                   const std::set<std::size_t>& seeded, std::size_t limit) {
  auto st = make_strategy(strategy, rec.space, seed, done);
  std::vector<std::size_t> out;
  std::deque<std::size_t> in_flight;
  bool seeds_given = false;
  while (out.size() < limit) {
    if (out.size() == lag && !seeds_given) {
      for (std::size_t i : seeded) st->seed(i), in_flight.push_back(i);
      seeds_given = true;
    }
    std::optional<std::size_t> next;
    if (in_flight.size() < lag && (next = st->propose())) {
      out.push_back(*next);
      in_flight.push_back(*next);
      continue;
    }
    if (in_flight.empty()) break;
    st->observe(in_flight.front(), rec.time_ms[in_flight.front()]);
    in_flight.pop_front();
  }
  return out;
}

TEST(Replay, AdaptiveStrategiesAreDeterministicPerSeed) {
  testing::TempDir dir;
  const Recording rec = synthetic_recording(dir);
  const std::vector<bool> none(rec.space.size(), false);
  for (const auto& name : kAdaptive) {
    const auto first = proposals(rec, name, 7, 16, none, {}, 300);
    ASSERT_EQ(first.size(), 300u) << name;
    EXPECT_EQ(proposals(rec, name, 7, 16, none, {}, 300), first) << name;
    EXPECT_NE(proposals(rec, name, 8, 16, none, {}, 300), first) << name;
  }
}

TEST(Replay, AdaptiveStrategiesExhaustTheSpaceSkippingDoneAndSeeded) {
  testing::TempDir dir;
  const Recording rec = synthetic_recording(dir);
  const std::size_t n = rec.space.size();
  std::vector<bool> done(n, false);
  for (std::size_t i = 0; i < n; i += 7) done[i] = true;
  const std::set<std::size_t> seeded = {1, n / 2 + 1, n - 2};
  for (const auto& name : kAdaptive)
    for (std::size_t lag : {1, 32}) {
      const auto all = proposals(rec, name, 3, lag, done, seeded, 2 * n);
      std::vector<int> times(n, 0);
      for (std::size_t i : all) ++times[i];
      for (std::size_t i = 0; i < n; ++i) {
        const int expected = done[i] || seeded.count(i) ? 0 : 1;
        ASSERT_EQ(times[i], expected) << name << " lag " << lag << " index " << i;
      }
    }
}

TEST(Replay, AdaptiveStrategiesFindTheOptimumAndBeatRandom) {
  testing::TempDir dir;
  const Recording rec = synthetic_recording(dir);
  std::vector<std::string> names = {"random"};
  names.insert(names.end(), kAdaptive.begin(), kAdaptive.end());
  const auto scores = compare_strategies(rec, names, {50, 200}, 30, 32);
  ASSERT_EQ(scores.size(), 2 * names.size());
  const StrategyScore& random50 = scores[0];
  const StrategyScore& random200 = scores[1];
  for (std::size_t k = 2; k < scores.size(); k += 2) {
    const StrategyScore& at50 = scores[k];
    const StrategyScore& at200 = scores[k + 1];
    EXPECT_GT(at50.median_ratio, random50.median_ratio) << at50.strategy;
    EXPECT_GT(at200.median_ratio, random200.median_ratio) << at200.strategy;
    EXPECT_GE(at200.share_within_3pct, 0.8) << at200.strategy;
  }
}

}  // namespace
}  // namespace ktune

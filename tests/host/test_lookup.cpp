// Host tests: the lookup chain against a database built in the test (no GPU needed).
#include <gtest/gtest.h>

#include <random>

#include "db/database.hpp"
#include "families/family.hpp"
#include "families/registry.hpp"
#include "ktune/tune_on_miss.hpp"
#include "runtime/lookup.hpp"
#include "temp_dir.hpp"
#include "tuner/space.hpp"

namespace ktune {
namespace {

DeviceInfo device(const std::string& name, int major, int minor, int sms) {
  DeviceInfo d;
  d.name = name;
  d.limits = DeviceLimits::for_arch(major, minor);
  d.limits.sm_count = sms;
  return d;
}

class Lookup : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = std::make_unique<Database>(dir_.file("t.db"));
    h100_ = device("NVIDIA H100 80GB HBM3", 9, 0, 132);
    h200_ = device("NVIDIA H200", 9, 0, 132);
    a100_ = device("NVIDIA A100-SXM4-80GB", 8, 0, 108);
  }
  void put(const DeviceInfo& d, const std::string& problem, const std::string& config, double ms,
           const std::string& hash = "") {
    ResultRecord r;
    r.device_id = db_->ensure_device(d);
    r.family = "elementwise";
    r.template_hash = hash.empty() ? family().template_hash() : hash;
    r.problem = problem;
    r.config = config;
    r.status = "ok";
    r.time_median_ms = ms;
    r.metric = 100.0 / ms;
    r.unit = "GB/s";
    db_->put_result(r);
  }
  const Family& family() { return find_family("elementwise"); }
  Problem p(const std::string& key) { return Problem::parse("elementwise", key); }

  testing::TempDir dir_;
  std::unique_ptr<Database> db_;
  DeviceInfo h100_, h200_, a100_;
};

const char* kA = "BLOCK=256,CACHE=0,GRID=4,STRIDE=1,UNROLL=2,VEC=4";
const char* kB = "BLOCK=512,CACHE=1,GRID=8,STRIDE=0,UNROLL=4,VEC=2";
const char* kC = "BLOCK=128,CACHE=0,GRID=0,STRIDE=0,UNROLL=1,VEC=1";

// The exact step answers with the fastest row of the problem on this device, also among many.
TEST_F(Lookup, ExactIsTheFastestOfManyRows) {
  const std::string key = "align=4;dtype=f32;n=1048579;op=add";
  SearchSpace space(family(), p(key), h200_.limits);
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> ms(0.5, 2.0);
  double best = 1e9;
  std::string best_config;
  for (std::size_t i = 0; i < space.size(); ++i) {
    const double t = ms(rng);
    put(h200_, key, to_string(space.at(i)), t);
    if (t < best) best = t, best_config = to_string(space.at(i));
  }
  put(h100_, key, kC, 0.01);  // faster, but another device
  auto r = lookup_config(db_.get(), h200_, family(), p(key));
  EXPECT_EQ(r.step, LookupStep::kExact);
  EXPECT_EQ(to_string(r.config), best_config);
  EXPECT_DOUBLE_EQ(*r.measured, 100.0 / best);
  // Equal times (the event timer's resolution makes them common on short kernels): the row
  // measured first answers, in the lookup and in the tuner's best alike.
  const std::string tie = "align=16;dtype=f32;n=4096;op=copy";
  put(h200_, tie, kB, 1.0);
  put(h200_, tie, kA, 1.0);
  EXPECT_EQ(to_string(lookup_config(db_.get(), h200_, family(), p(tie)).config), kB);
  for (const auto& row : db_->best_results("elementwise", family().template_hash()))
    if (row.problem == tie) {
      EXPECT_EQ(row.config, kB);
    }
}

TEST_F(Lookup, DefaultWithoutDatabaseOrResults) {
  auto r = lookup_config(nullptr, h100_, family(), p("align=16;dtype=f32;n=1000;op=copy"));
  EXPECT_EQ(r.step, LookupStep::kDefault);
  r = lookup_config(db_.get(), h100_, family(), p("align=16;dtype=f32;n=1000;op=copy"));
  EXPECT_EQ(r.step, LookupStep::kDefault);
}

TEST_F(Lookup, ExactThenNearestThenSameArchThenDefault) {
  put(h100_, "align=16;dtype=f32;n=1048576;op=copy", kA, 1.0);
  put(h100_, "align=16;dtype=f32;n=1073741824;op=copy", kB, 1.0);
  put(h200_, "align=16;dtype=f32;n=1024;op=add", kC, 1.0);

  auto exact = lookup_config(db_.get(), h100_, family(), p("align=16;dtype=f32;n=1048576;op=copy"));
  EXPECT_EQ(exact.step, LookupStep::kExact);
  EXPECT_EQ(to_string(exact.config), kA);

  auto near_small =
      lookup_config(db_.get(), h100_, family(), p("align=16;dtype=f32;n=2000000;op=copy"));
  EXPECT_EQ(near_small.step, LookupStep::kNearest);
  EXPECT_EQ(to_string(near_small.config), kA);
  auto near_big =
      lookup_config(db_.get(), h100_, family(), p("align=16;dtype=f32;n=500000000;op=copy"));
  EXPECT_EQ(to_string(near_big.config), kB);

  // add was tuned only on the H200: same compute capability answers for the H100.
  auto same = lookup_config(db_.get(), h100_, family(), p("align=16;dtype=f32;n=4096;op=add"));
  EXPECT_EQ(same.step, LookupStep::kSameArch);
  EXPECT_EQ(to_string(same.config), kC);
  EXPECT_NE(same.device.find("H200"), std::string::npos);

  // Not for another architecture: the A100 gets the default.
  auto other = lookup_config(db_.get(), a100_, family(), p("align=16;dtype=f32;n=4096;op=add"));
  EXPECT_EQ(other.step, LookupStep::kDefault);
}

TEST_F(Lookup, StaleAndInvalidRowsAreSkipped) {
  put(h100_, "align=16;dtype=f64;n=1024;op=copy", kA, 1.0, "stale-template-hash");
  // VEC=4 is not valid for f64: such a row (imported by hand, say) must not be used.
  put(h100_, "align=16;dtype=f64;n=2048;op=copy", kA, 1.0);
  put(h100_, "align=16;dtype=f64;n=4096;op=copy", "BLOCK=256,UNKNOWN=1", 1.0);
  auto r = lookup_config(db_.get(), h100_, family(), p("align=16;dtype=f64;n=1024;op=copy"));
  EXPECT_EQ(r.step, LookupStep::kDefault);
  put(h100_, "align=16;dtype=f64;n=8192;op=copy", kB, 1.0);
  r = lookup_config(db_.get(), h100_, family(), p("align=16;dtype=f64;n=1024;op=copy"));
  EXPECT_EQ(r.step, LookupStep::kNearest);
  EXPECT_EQ(to_string(r.config), kB);
}

TEST_F(Lookup, AlignmentIsADimensionOfTheDistance) {
  put(h100_, "align=16;dtype=f32;n=1048576;op=copy", kA, 1.0);
  put(h100_, "align=4;dtype=f32;n=1048576;op=copy", kC, 1.0);
  auto r = lookup_config(db_.get(), h100_, family(), p("align=4;dtype=f32;n=1000000;op=copy"));
  EXPECT_EQ(to_string(r.config), kC);
}

}  // namespace
}  // namespace ktune

namespace ktune {
namespace {

TEST(TuneOnMiss, BudgetsAndStrategyAreChecked) {
  EXPECT_NO_THROW(make_miss_tuner());
  for (TuneOnMissOptions bad :
       {TuneOnMissOptions{.max_evals = 0}, TuneOnMissOptions{.max_seconds = 0},
        TuneOnMissOptions{.max_seconds = -1}, TuneOnMissOptions{.max_seconds = 1.0 / 0.0},
        TuneOnMissOptions{.strategy = "magic"}}) {
    try {
      make_miss_tuner(bad);
      ADD_FAILURE() << "accepted a bad budget";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("TuneOnMissOptions::"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace ktune

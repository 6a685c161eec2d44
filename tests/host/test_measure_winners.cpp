// Host tests: `ktune tune --measure-winners` measures the winners of the family's other problems
// on one problem, adapted, and nothing else; a plain tune starts from the nearest winners (the
// family's transfer distance). The runner stands in a synthetic objective for the
// GPU (no kernel is compiled or run): this tests which candidates the loop measures.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "db/database.hpp"
#include "families/registry.hpp"
#include "temp_dir.hpp"
#include "tuner/runner.hpp"
#include "tuner/tuner.hpp"

namespace ktune {
namespace {

class SyntheticRunner final : public CandidateRunner {
 public:
  SyntheticRunner() {
    info_.name = "NVIDIA H100 80GB HBM3";
    info_.limits = DeviceLimits::for_arch(9, 0);
    info_.limits.sm_count = 132;
  }
  const DeviceInfo& device() const override { return info_; }
  bool compiles() const override { return false; }
  Measurement measure(std::size_t, const Config& config, const CompileResult*, const std::string&,
                      ResultRecord&) override {
    measured.push_back(to_string(config));
    Measurement m;
    m.status = status::kOk;
    m.timing.min_ms = m.timing.median_ms = m.timing.max_ms = 1.0 + 0.01 * measured.size();
    m.timing.repeats = 1;
    m.metric = 1.0 / m.timing.median_ms;
    return m;
  }
  std::vector<std::string> measured;

 private:
  DeviceInfo info_;
};

// An ok result of `family` on `key` measured at `ms` on the device `device_id`.
void put_ok(Database& db, const Family& family, std::int64_t device_id, const std::string& key,
            const std::string& config, double ms, const std::string& origin = "tuned") {
  ResultRecord r;
  r.device_id = device_id;
  r.family = family.name();
  r.template_hash = family.template_hash();
  r.problem = family.parse_problem(key).key();
  r.config = config;
  r.status = "ok";
  r.time_median_ms = r.time_min_ms = r.time_max_ms = ms;
  r.metric = 1;
  r.unit = "TFLOPS";
  r.origin = origin;
  db.put_result(r);
}

const char* kBig =
    "BK=8,BM=256,BN=128,KCONTIG=0,MINB=1,MMA=0,PAD=4,PREFETCH=3,SPLITK=1,STAGES=2,SWIZZLE=1,"
    "TM=4,TN=4,UNROLL=0,VEC=4,WM=64,WN=64,WNITER=2";
const char* kSmall =
    "BK=16,BM=64,BN=64,KCONTIG=4,MINB=1,MMA=0,PAD=0,PREFETCH=0,SPLITK=1,STAGES=3,SWIZZLE=1,"
    "TM=4,TN=4,UNROLL=0,VEC=4,WM=32,WN=32,WNITER=2";
const char* kSplit =
    "BK=16,BM=64,BN=64,KCONTIG=4,MINB=1,MMA=0,PAD=0,PREFETCH=0,SPLITK=16,STAGES=3,SWIZZLE=1,"
    "TM=4,TN=4,UNROLL=0,VEC=4,WM=32,WN=32,WNITER=2";
const char* kMid =
    "BK=8,BM=128,BN=128,KCONTIG=0,MINB=1,MMA=0,PAD=4,PREFETCH=3,SPLITK=1,STAGES=2,SWIZZLE=4,"
    "TM=4,TN=4,UNROLL=0,VEC=4,WM=64,WN=64,WNITER=2";
const char* kA100 =
    "BK=8,BM=128,BN=64,KCONTIG=0,MINB=1,MMA=0,PAD=0,PREFETCH=2,SPLITK=1,STAGES=2,SWIZZLE=1,"
    "TM=4,TN=4,UNROLL=0,VEC=4,WM=64,WN=32,WNITER=2";
const char* kF64 =
    "BK=8,BM=64,BN=64,KCONTIG=0,MINB=1,MMA=3,PAD=4,PREFETCH=0,SPLITK=1,STAGES=3,SWIZZLE=1,"
    "TM=4,TN=4,UNROLL=0,VEC=1,WM=32,WN=32,WNITER=1";

// What the measure-winners tests start from: a database, the synthetic H100, another GPU of its
// architecture, the problem measured on and the options of such a run.
class MeasureWinners : public ::testing::Test {
 protected:
  MeasureWinners() {
    sibling.name = "NVIDIA H200";
    o.strategy = "random";
    o.progress = false;
    o.measure_winners = true;
  }
  // A winner's configuration adapted to the target.
  std::string adapted(const char* config) const {
    return to_string(gemm.adapt(parse_config(config), target, runner.device().limits));
  }

  testing::TempDir dir;
  Database db{dir.file("t.db")};
  const Family& gemm = find_family("gemm");
  SyntheticRunner runner;
  const std::int64_t device_id = db.ensure_device(runner.device());
  DeviceInfo sibling = runner.device();
  const Problem target = gemm.parse_problem("align=4;dtype=f32;k=65536;m=512;n=512;op=tn");
  TuneOptions o;
};

TEST_F(MeasureWinners, MeasuresTheWinnersOfTheDtypeOnTheProblemAndNothingElse) {
  DeviceInfo a100;
  a100.name = "NVIDIA A100-SXM4-80GB";
  a100.limits = DeviceLimits::for_arch(8, 0);
  a100.limits.sm_count = 108;
  auto put = [&](const std::string& key, const char* config, double ms, std::int64_t device = 0) {
    put_ok(db, gemm, device ? device : device_id, key, config, ms);
  };
  // Winners of three f32 problems in three ops (a loser of one of them too), one of f64.
  put("align=4;dtype=f32;k=4096;m=4096;n=4096;op=nn", kBig, 2.8);
  put("align=4;dtype=f32;k=1024;m=1024;n=1024;op=tt", kSmall, 0.06);
  put("align=4;dtype=f32;k=1024;m=1024;n=1024;op=tt", kBig, 0.09);
  put("align=4;dtype=f32;k=65536;m=64;n=64;op=nt", kSplit, 0.1);
  put("align=2;dtype=f64;k=1024;m=1024;n=1024;op=nn", kF64, 0.1);
  // A winner of another GPU of the architecture counts; one of another architecture does not.
  put("align=4;dtype=f32;k=8192;m=8192;n=8192;op=nn", kMid, 20.0, db.ensure_device(sibling));
  put("align=4;dtype=f32;k=512;m=512;n=512;op=nn", kA100, 0.02, db.ensure_device(a100));

  const TuneSummary s = tune(db, runner, gemm, target, o);
  // The four f32 winners of the architecture, each adapted to the target, and no proposal of
  // the strategy: the loser, the f64 winner and the A100's are not measured.
  const std::set<std::string> want = {adapted(kBig), adapted(kSmall), adapted(kSplit),
                                      adapted(kMid)};
  EXPECT_EQ(want.size(), 4u);  // four configurations after adapting, as this test wants
  EXPECT_EQ(std::set<std::string>(runner.measured.begin(), runner.measured.end()), want);
  EXPECT_EQ(runner.measured.size(), 4u);
  EXPECT_EQ(s.evaluated, 4u);
  // The nearest problem's first: 64 x 64 x 65536 (a log-size distance of 6 from 512 x 512 x
  // 65536, against 8 for 1024^3, 10 for 4096^3 and 14 for 8192^3).
  EXPECT_EQ(runner.measured.front(), adapted(kSplit));

  // Again: all four were measured on it, nothing is left to measure.
  SyntheticRunner again;
  const TuneSummary t = tune(db, again, gemm, target, o);
  EXPECT_EQ(t.evaluated, 0u);
  EXPECT_TRUE(again.measured.empty());
}

// A pair that this GPU's shipped rows measure already is not measured again (a cross measurement
// after new presets had measured 2977 of its 4177 pairs again); another GPU's row does not count,
// and a plain tune still takes shipped rows for no measurement of its own.
TEST_F(MeasureWinners, APairThisGpusShippedRowsMeasureIsNotMeasuredAgain) {
  put_ok(db, gemm, device_id, "align=4;dtype=f32;k=4096;m=4096;n=4096;op=nn", kBig, 2.8);
  put_ok(db, gemm, device_id, "align=4;dtype=f32;k=1024;m=1024;n=1024;op=tt", kSmall, 0.06);
  auto put_shipped = [&](std::int64_t device, const std::string& config) {
    put_ok(db, gemm, device, target.key(), config, 1.0, "shipped");
  };
  put_shipped(device_id, adapted(kBig));                    // this GPU's: measured
  put_shipped(db.ensure_device(sibling), adapted(kSmall));  // another GPU's: not one here
  const std::string hash = gemm.template_hash();
  EXPECT_TRUE(db.evaluated_configs(device_id, "gemm", hash, target.key()).empty());
  EXPECT_EQ(db.evaluated_configs(device_id, "gemm", hash, target.key(), true),
            std::set<std::string>{adapted(kBig)});

  const TuneSummary s = tune(db, runner, gemm, target, o);
  EXPECT_EQ(runner.measured, std::vector<std::string>{adapted(kSmall)});
  EXPECT_EQ(s.evaluated, 1u);
}

// A tune of a tensor-core shape starts from the winners nearest by the family's transfer distance:
// the bf16 winner of the same shape before the fp16 winners of other sizes (bf16 and fp16 run the
// same tiles alike), and nothing of gemm (another family) or of another op farther than those.
TEST(Transfer, AnFp16TensorCoreShapeStartsFromTheBf16WinnerOfTheSameShape) {
  testing::TempDir dir;
  Database db(dir.file("t.db"));
  const Family& tc = find_family("gemm_tc");
  SyntheticRunner runner;
  const std::int64_t device_id = db.ensure_device(runner.device());
  auto put = [&](const std::string& key, const std::string& config) {
    put_ok(db, tc, device_id, key, config, 1.0);
  };
  const std::string bf16_same =
      "BN=256,CLUSTER=1,CONSUMERS=2,GROUP=1,PERSIST=0,PINGPONG=0,STAGES=4,WM=64";
  const std::string f16_bigger =
      "BN=128,CLUSTER=2,CONSUMERS=2,GROUP=8,PERSIST=1,PINGPONG=0,STAGES=5,WM=64";
  const std::string tf32_same =
      "BN=128,CLUSTER=1,CONSUMERS=2,GROUP=8,PERSIST=0,PINGPONG=1,STAGES=6,WM=128";
  const std::string f16_other_op =
      "BN=64,CLUSTER=1,CONSUMERS=1,GROUP=1,PERSIST=0,PINGPONG=0,STAGES=3,WM=64";
  put("align=8;batch=1;dtype=f16;k=4096;m=4096;n=4096;op=tn;out=f16", f16_bigger);
  put("align=8;batch=1;dtype=bf16;k=2048;m=2048;n=2048;op=tn;out=bf16", bf16_same);
  put("align=4;batch=1;dtype=tf32;k=2048;m=2048;n=2048;op=tn;out=f32", tf32_same);
  put("align=8;batch=1;dtype=f16;k=8192;m=8192;n=8192;op=nn;out=f16", f16_other_op);

  TuneOptions o;
  o.strategy = "random";
  o.progress = false;
  o.max_evals = 4;
  o.start_from_lookup = false;  // the transfer order alone (the lookup's seeds: LookupSeeds.*)
  const Problem target =
      tc.parse_problem("align=8;batch=1;dtype=f16;k=2048;m=2048;n=2048;op=tn;out=f16");
  const TuneSummary s = tune(db, runner, tc, target, o);
  EXPECT_EQ(s.seeded, 4u);
  // bf16 of the shape (0.25), tf32 of the shape (1 for the type, 1 for C in f32, 0.85 for the
  // alignment), fp16 at 4096^3 (3 doublings of about 1 each), fp16 nn at 8192^3 (6 + 1).
  // Rows stored before SPLITK and EPI existed: measured unsplit with the register stores (the
  // parameters' first values).
  auto now = [](std::string config) {
    config.insert(config.find("GROUP"), "EPI=0,");
    return config.insert(config.find("STAGES"), "SPLITK=1,");
  };
  const std::vector<std::string> want = {now(bf16_same), now(tf32_same), now(f16_bigger),
                                         now(f16_other_op)};
  EXPECT_EQ(runner.measured, want);

  // Another family keeps its own rule: gemm seeds nothing from a problem of another dtype.
  EXPECT_FALSE(std::isfinite(find_family("gemm").transfer_distance(
      find_family("gemm").parse_problem("align=4;dtype=f32;k=64;m=64;n=64;op=nn"),
      find_family("gemm").parse_problem("align=2;dtype=f64;k=64;m=64;n=64;op=nn"))));
}

}  // namespace
}  // namespace ktune

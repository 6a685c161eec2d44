// Host tests: the tuning loop compiles each kernel once. Candidates it compiled for one problem
// are read back from the database's binary cache when another problem needs the same kernel
// (real NVRTC, real SQLite). The runner times candidates with a synthetic objective that stands in
// for the GPU: this tests the loop's use of the cache, not the kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "db/database.hpp"
#include "families/registry.hpp"
#include "platform/kernel_cache.hpp"
#include "synthetic_compiled_runner.hpp"
#include "temp_dir.hpp"
#include "tuner/runner.hpp"
#include "tuner/tuner.hpp"

namespace ktune {
namespace {

using testing::SyntheticCompiledRunner;

TuneOptions options(std::size_t evals) {
  TuneOptions o;
  o.strategy = "random";
  o.max_evals = evals;
  o.progress = false;
  o.compile_threads = 2;
  // Counts of compiles and evaluations: no launch variants besides (the test of those says so).
  o.launch_variants = false;
  return o;
}

// Two copies whose kernels are the same (an elementwise kernel does not depend on n).
Problem small_copy() {
  return Problem::parse("elementwise", "align=16;dtype=f32;n=1048576;op=copy");
}
Problem large_copy() {
  return Problem::parse("elementwise", "align=16;dtype=f32;n=16777216;op=copy");
}

DeviceInfo gpu(const std::string& name, int major, int minor, int sm_count) {
  DeviceInfo d;
  d.name = name;
  d.limits = DeviceLimits::for_arch(major, minor);
  d.limits.sm_count = sm_count;
  return d;
}

// An ok elementwise row of the current template: `config` measured for `key` on `device`.
void put_ok(Database& db, const DeviceInfo& device, const std::string& key,
            const std::string& config) {
  ResultRecord r;
  r.device_id = db.ensure_device(device);
  r.family = "elementwise";
  r.template_hash = find_family("elementwise").template_hash();
  r.problem = key;
  r.config = config;
  r.status = "ok";
  r.time_median_ms = 1.0;
  r.metric = 1.0;
  r.unit = "GB/s";
  db.put_result(r);
}

TEST(BinaryReuse, ASecondProblemReadsTheKernelsTheFirstCompiled) {
  testing::TempDir dir;
  Database db(dir.file("t.db"));
  const Family& family = find_family("elementwise");
  const Problem small = small_copy(), large = large_copy();

  SyntheticCompiledRunner first;
  const TuneSummary a = tune(db, first, family, small, options(6));
  EXPECT_EQ(a.evaluated, 6u);
  EXPECT_EQ(a.compiled, 6u);
  EXPECT_EQ(a.reused, 0u);
  EXPECT_EQ(db.binary_count(), 6);

  // The same seed proposes the same configurations for the larger copy: its kernels are the
  // same (an elementwise kernel does not depend on n), so none is compiled again.
  SyntheticCompiledRunner second;
  const TuneSummary b = tune(db, second, family, large, options(6));
  EXPECT_EQ(b.evaluated, 6u);
  EXPECT_EQ(b.reused, 6u);
  EXPECT_EQ(b.compiled, 0u);
  EXPECT_EQ(db.binary_count(), 6);
  // The binaries measured are byte for byte those compiled the first time.
  std::sort(first.binaries.begin(), first.binaries.end());
  std::sort(second.binaries.begin(), second.binaries.end());
  EXPECT_EQ(first.binaries, second.binaries);

  // A kernel of another type is another binary: compiled, then kept.
  const Problem add = Problem::parse("elementwise", "align=16;dtype=f32;n=1048576;op=add");
  SyntheticCompiledRunner third;
  const TuneSummary c = tune(db, third, family, add, options(3));
  EXPECT_EQ(c.reused, 0u);
  EXPECT_EQ(c.compiled, 3u);
  EXPECT_EQ(db.binary_count(), 9);
}

// The loop runs a candidate the cache holds before one still compiling ahead of it in the window:
// the GPU waits on a compile only when nothing else is ready.
TEST(BinaryReuse, ACandidateReadFromTheCacheRunsBeforeOneStillCompiling) {
  testing::TempDir dir;
  Database db(dir.file("t.db"));
  const Family& family = find_family("elementwise");
  const Problem small = small_copy(), large = large_copy();
  SyntheticCompiledRunner first;
  ASSERT_EQ(tune(db, first, family, small, options(6)).compiled, 6u);
  // Only the last three binaries stay (stored in the order measured): the larger copy proposes
  // the same six, the first three of which must compile again.
  std::uint64_t newest = 0;
  for (std::size_t i = 3; i < 6; ++i) newest += first.binaries[i].size();
  EXPECT_EQ(db.limit_binaries(newest), 3u);
  SyntheticCompiledRunner second;
  const TuneSummary b = tune(db, second, family, large, options(6));
  EXPECT_EQ(b.reused, 3u);
  EXPECT_EQ(b.compiled, 3u);
  // The three in the cache are measured first, whatever their place among the proposals.
  std::vector<std::string> cached(first.measured.begin() + 3, first.measured.end());
  ASSERT_EQ(second.measured.size(), 6u);
  std::vector<std::string> first_three(second.measured.begin(), second.measured.begin() + 3);
  std::sort(cached.begin(), cached.end());
  std::sort(first_three.begin(), first_three.end());
  EXPECT_EQ(first_three, cached);
}

// A tune of a new problem takes the kernels the cache holds for other problems' candidates as its
// warm-up, whatever its strategy and seed: the GPU measures them while the first compiles run.
TEST(BinaryReuse, ANewProblemWarmsUpOnTheKernelsTheCacheHolds) {
  testing::TempDir dir;
  Database db(dir.file("t.db"));
  const Family& family = find_family("elementwise");
  const Problem small = small_copy(), large = large_copy();
  SyntheticCompiledRunner first;
  ASSERT_EQ(tune(db, first, family, small, options(8)).compiled, 8u);

  SyntheticCompiledRunner second;
  TuneOptions o = options(12);
  o.strategy = "model";  // another strategy, another seed: its own random warm-up would differ
  o.seed = 99;
  const TuneSummary b = tune(db, second, family, large, o);
  EXPECT_EQ(b.evaluated, 12u);
  // At least those 8 (configurations that differ in BLOCK or GRID alone share a kernel).
  EXPECT_GE(b.reused, 8u);
  EXPECT_EQ(b.reused + b.compiled + b.shared, 12u);
  EXPECT_GE(b.cached_first + b.seeded, 8u);
  // The eight cached ones ran first.
  ASSERT_EQ(second.measured.size(), 12u);
  std::vector<std::string> a(first.measured),
      c(second.measured.begin(), second.measured.begin() + 8);
  std::sort(a.begin(), a.end());
  std::sort(c.begin(), c.end());
  EXPECT_EQ(a, c);

  // Without the cache the strategy draws its own warm-up.
  testing::TempDir other;
  Database fresh(other.file("t.db"));
  SyntheticCompiledRunner alone;
  o.reuse_binaries = false;
  ASSERT_EQ(tune(fresh, alone, family, large, o).cached_first, 0u);
}

// A tune starts from the runtime's answer for its problem: here the lookup chain's
// same-architecture step, a winner of another problem on another GPU of the architecture, which no
// transfer seed would have proposed (seeds from other GPUs are of the same problem only).
TEST(LookupSeeds, ATuneStartsFromTheRuntimesAnswer) {
  const Family& family = find_family("elementwise");
  const std::string winner = "BLOCK=512,CACHE=1,GRID=16,STRIDE=0,UNROLL=2,VEC=2";
  const Problem p = Problem::parse("elementwise", "align=16;dtype=f32;n=33554432;op=copy");
  for (bool from_lookup : {true, false}) {
    SCOPED_TRACE(from_lookup);
    testing::TempDir dir;
    Database db(dir.file("t.db"));
    put_ok(db, gpu("NVIDIA H200", 9, 0, 132), "align=16;dtype=f32;n=1048576;op=copy", winner);

    SyntheticCompiledRunner h100;
    TuneOptions o = options(3);
    o.start_from_lookup = from_lookup;
    const TuneSummary s = tune(db, h100, family, p, o);
    EXPECT_EQ(s.seeded, from_lookup ? 1u : 0u);
    ASSERT_FALSE(h100.measured.empty());
    EXPECT_EQ(h100.measured.front() == winner, from_lookup);
  }
}

// Candidates of one kernel proposed together wait on one compile: GEMM's split count is a kernel
// argument, so six counts of one tile are one NVRTC compile, not six at once (as a tune held to
// one kernel ran on an H200 before, "6 compiles on 16 threads").
TEST(BinaryReuse, CandidatesOfOneKernelShareItsCompile) {
  testing::TempDir dir;
  Database db(dir.file("t.db"));
  const Family& family = find_family("gemm");
  const Problem p = family.parse_problem("align=4;dtype=f32;k=479875;m=31;n=978;op=nn");
  TuneOptions o = options(0);
  o.only = {{"BK", {16}},     {"BM", {32}},      {"BN", {256}},
            {"KCONTIG", {0}}, {"MINB", {1}},     {"MMA", {0}},
            {"PAD", {0}},     {"PREFETCH", {3}}, {"STAGES", {2}},
            {"SWIZZLE", {1}}, {"TM", {4}},       {"TN", {4}},
            {"UNROLL", {0}},  {"VEC", {4}},      {"WM", {32}},
            {"WN", {64}},     {"WNITER", {1}},   {"SPLITK", {32, 48, 64, 96, 128, 256}}};
  SyntheticCompiledRunner runner;
  const TuneSummary s = tune(db, runner, family, p, o);
  EXPECT_EQ(s.evaluated, 6u);
  EXPECT_EQ(s.ok, 6u);
  EXPECT_EQ(s.compiled, 1u);
  EXPECT_GE(s.shared, 1u);  // those proposed while it compiled; the binary cache serves the rest
  EXPECT_EQ(s.shared + s.reused, 5u);
  EXPECT_EQ(db.binary_count(), 1);
  ASSERT_EQ(runner.binaries.size(), 6u);
  for (const auto& b : runner.binaries) EXPECT_EQ(b, runner.binaries.front());

  // Without the binary cache every candidate compiles its own, as before.
  testing::TempDir other;
  Database fresh(other.file("t.db"));
  o.reuse_binaries = false;
  SyntheticCompiledRunner alone;
  const TuneSummary t = tune(fresh, alone, family, p, o);
  EXPECT_EQ(t.compiled, 6u);
  EXPECT_EQ(t.shared, 0u);
}

// While every candidate in flight still compiles, the GPU measures a launch variant of a kernel
// measured before (GEMM's SWIZZLE is a kernel argument: no compile) instead of waiting, on that
// kernel's binary, as one of the evaluations the budget allows. Two kernels (PREFETCH 0 and 3),
// one compile thread, the exhaustive order (PREFETCH before SWIZZLE), no binary cache (which would
// serve the first kernel's next rasterisation at once): after the first candidate, the second
// compiles and the third waits for the compile thread; meanwhile the first kernel's SWIZZLE 4
// runs (the fourth evaluation the budget allows). With the budget all proposed and still nothing
// ready, the newest proposal (the third) gives its place to another variant, SWIZZLE 8, and its
// compile, not begun, is skipped; the second runs last.
TEST(BinaryReuse, LaunchVariantsFillTheWaitOnCompiles) {
  const Family& family = find_family("gemm");
  const Problem p = family.parse_problem("align=4;dtype=f32;k=2048;m=2048;n=2048;op=nn");
  TuneOptions o = options(4);
  o.launch_variants = true;
  o.reuse_binaries = false;
  o.strategy = "exhaustive";
  o.compile_threads = 1;
  o.start_from_lookup = false;
  o.only = {{"BK", {8}},      {"BM", {128}},        {"BN", {128}},
            {"KCONTIG", {0}}, {"MINB", {1}},        {"MMA", {0}},
            {"PAD", {4}},     {"PREFETCH", {0, 3}}, {"STAGES", {2}},
            {"SPLITK", {1}},  {"TM", {8}},          {"TN", {8}},
            {"UNROLL", {0}},  {"VEC", {4}},         {"WM", {64}},
            {"WN", {32}},     {"WNITER", {1}},      {"SWIZZLE", {1, 2, 4, 8}}};
  SyntheticCompiledRunner probe;
  ASSERT_EQ(SearchSpace(family, p, probe.device().limits, o.only).size(), 8u);

  testing::TempDir dir;
  Database db(dir.file("t.db"));
  SyntheticCompiledRunner runner;
  const TuneSummary s = tune(db, runner, family, p, o);
  EXPECT_EQ(s.evaluated, 4u);  // the budget, the variants among them
  EXPECT_EQ(s.ok, 4u);
  EXPECT_EQ(s.launch_variants, 2u);
  EXPECT_EQ(s.given_up, 1u);
  EXPECT_EQ(s.compiled, 2u);  // the given-up candidate's compile never began
  ASSERT_EQ(runner.measured.size(), 4u);
  // The variants ran second and third, on the first candidate's binary: its kernel with SWIZZLE
  // 4, then 8; the second kernel last.
  Config first = parse_config(runner.measured[0]);
  first["SWIZZLE"] = 4;
  EXPECT_EQ(runner.measured[1], to_string(first));
  first["SWIZZLE"] = 8;
  EXPECT_EQ(runner.measured[2], to_string(first));
  EXPECT_EQ(runner.binaries[1], runner.binaries[0]);
  EXPECT_EQ(runner.binaries[2], runner.binaries[0]);
  EXPECT_EQ(parse_config(runner.measured[3]).at("PREFETCH"),
            3 - parse_config(runner.measured[0]).at("PREFETCH"));
  std::vector<std::string> sorted = runner.measured;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
  EXPECT_EQ(db.evaluated_configs(db.ensure_device(runner.device()), "gemm", family.template_hash(),
                                 p.key(), false)
                .size(),
            4u);

  // Off: the GPU waits, and the four candidates compile four kernels.
  testing::TempDir other;
  Database fresh(other.file("t.db"));
  o.launch_variants = false;
  SyntheticCompiledRunner plain;
  const TuneSummary t = tune(fresh, plain, family, p, o);
  EXPECT_EQ(t.evaluated, 4u);
  EXPECT_EQ(t.launch_variants, 0u);
  EXPECT_EQ(t.compiled, 4u);
}

TEST(BinaryReuse, OffCompilesEverythingAndKeepsNothing) {
  testing::TempDir dir;
  Database db(dir.file("t.db"));
  const Family& family = find_family("elementwise");
  const Problem p = small_copy();
  TuneOptions o = options(4);
  o.reuse_binaries = false;
  SyntheticCompiledRunner runner;
  const TuneSummary s = tune(db, runner, family, p, o);
  EXPECT_EQ(s.compiled, 4u);
  EXPECT_EQ(s.reused, 0u);
  EXPECT_EQ(db.binary_count(), 0);
}

TEST(BinaryReuse, TheCacheStaysWithinItsLimitOldestFirst) {
  testing::TempDir dir;
  Database db(dir.file("t.db"));
  auto put = [&](const std::string& key, std::size_t bytes) {
    CachedBinary b;
    b.cubin.assign(bytes, 'x');
    b.lowered_names = {"k"};
    b.resources_json = "k 32 1 0 0 0 0\n";
    db.put_binary(key, "sm_90", b);
  };
  put("old", 1000);
  put("middle", 1000);
  put("new", 1000);
  EXPECT_EQ(db.limit_binaries(3000), 0u);
  EXPECT_EQ(db.binary_count(), 3);
  EXPECT_EQ(db.limit_binaries(2500), 1u);  // the oldest goes
  EXPECT_FALSE(db.find_binary("old"));
  EXPECT_TRUE(db.find_binary("middle"));
  EXPECT_TRUE(db.find_binary("new"));
  // A read-back binary is what was stored.
  CompileResult r;
  ASSERT_TRUE(from_cached_binary(*db.find_binary("new"), r));
  EXPECT_EQ(r.cubin.size(), 1000u);
  EXPECT_EQ(r.resources.at(0).registers, 32);
  EXPECT_EQ(db.limit_binaries(0), 2u);
  EXPECT_EQ(db.binary_count(), 0);
}

// A problem another GPU of the same architecture has a winner for (the shipped H200 presets, on an
// H100) starts from that winner.
TEST(Transfer, AProblemStartsFromItsWinnerOnAnotherGpuOfTheArchitecture) {
  testing::TempDir dir;
  Database db(dir.file("t.db"));
  const Family& family = find_family("elementwise");
  const std::string key = "align=16;dtype=f32;n=1048576;op=copy";
  const DeviceInfo h200 = gpu("NVIDIA H200", 9, 0, 0);
  const DeviceInfo a100 = gpu("NVIDIA A100-SXM4-80GB", 8, 0, 108);
  auto put = [&](const DeviceInfo& d, const std::string& config) { put_ok(db, d, key, config); };
  const std::string h200_winner = "BLOCK=512,CACHE=1,GRID=8,STRIDE=0,UNROLL=4,VEC=2";
  put(a100, "BLOCK=128,CACHE=0,GRID=0,STRIDE=0,UNROLL=1,VEC=1");  // another architecture
  put(h200, h200_winner);
  SyntheticCompiledRunner h100;
  TuneOptions o = options(2);
  const TuneSummary s = tune(db, h100, family, Problem::parse("elementwise", key), o);
  EXPECT_EQ(s.seeded, 1u);
  ASSERT_FALSE(h100.measured.empty());
  EXPECT_EQ(h100.measured.front(), h200_winner);
}

}  // namespace
}  // namespace ktune

// GPU tests: elementwise correctness for odd sizes and unaligned pointers, a tuning run into a
// temporary database, and the runtime reading that result back. Skipped without a device.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "../host/temp_dir.hpp"
#include "db/database.hpp"
#include "db/exchange.hpp"
#include "families/elementwise/elementwise.hpp"
#include "families/family.hpp"
#include "families/registry.hpp"
#include "gpu_util.hpp"
#include "ktune/ktune.hpp"
#include "platform/device.hpp"
#include "platform/driver.hpp"
#include "tuner/space.hpp"
#include "tuner/tuner.hpp"

namespace ktune {
namespace {

using detail::check;
using detail::driver;

using testing::download;
using testing::upload;
template <typename T>
std::vector<T> random_host(std::size_t n, std::uint64_t seed) {
  return testing::random_vector<T>(n, seed);
}

template <typename T>
void check_ops(Runtime& rt, std::size_t n, std::size_t offset) {
  const std::size_t guard = 8;
  const std::size_t total = n + offset + guard;
  detail::DeviceBuffer a(total * sizeof(T)), b(total * sizeof(T)), c(total * sizeof(T)),
      d(total * sizeof(T));
  auto ha = random_host<T>(total, n * 31 + offset), hb = random_host<T>(total, n * 17 + offset + 1);
  upload(a.get(), ha);
  upload(b.get(), hb);
  std::vector<T> poison(total);
  std::memset(poison.data(), 0xFF, total * sizeof(T));
  auto ptr = [&](const detail::DeviceBuffer& buf) {
    return buf.template as<T>(offset * sizeof(T));
  };
  auto expect_output = [&](const detail::DeviceBuffer& buf, auto expected, const char* what) {
    auto h = download<T>(buf.get(), total);
    for (std::size_t i = 0; i < total; ++i) {
      T want;
      if (i < offset || i >= offset + n)
        std::memcpy(&want, &poison[i], sizeof(T));
      else
        want = expected(i);
      ASSERT_EQ(std::memcmp(&h[i], &want, sizeof(T)), 0)
          << what << " n=" << n << " offset=" << offset << " index=" << i;
    }
  };
  // copy
  upload(c.get(), poison);
  rt.copy(ptr(c), ptr(a), n);
  check(driver().cuCtxSynchronize(), "sync");
  expect_output(
      c, [&](std::size_t i) { return ha[i]; }, "copy");
  // add
  upload(c.get(), poison);
  rt.add(ptr(c), ptr(a), ptr(b), n);
  check(driver().cuCtxSynchronize(), "sync");
  expect_output(
      c, [&](std::size_t i) { return static_cast<T>(ha[i] + hb[i]); }, "add");
  // complex copy
  upload(c.get(), poison);
  upload(d.get(), poison);
  rt.complex_copy(ptr(c), ptr(d), ptr(a), ptr(b), n);
  check(driver().cuCtxSynchronize(), "sync");
  expect_output(
      c, [&](std::size_t i) { return ha[i]; }, "complex re");
  expect_output(
      d, [&](std::size_t i) { return hb[i]; }, "complex im");
}

TEST(ElementwiseGpu, OddSizesAndUnalignedPointersWithDefaults) {
  KTUNE_REQUIRE_GPU();
  Options o;
  o.use_database = false;
  Runtime rt(o);
  for (std::size_t n : {0ul, 1ul, 2ul, 3ul, 5ul, 31ul, 127ul, 128ul, 129ul, 1023ul, 4097ul,
                        (1ul << 20) - 1, (1ul << 20) + 1, (1ul << 22) + 3})
    for (std::size_t offset : {0ul, 1ul, 2ul, 3ul}) {
      check_ops<float>(rt, n, offset);
      check_ops<double>(rt, n, offset);
    }
}

TEST(ElementwiseGpu, NullPointersAreRejectedBeforeLaunch) {
  KTUNE_REQUIRE_GPU();
  Options o;
  o.use_database = false;
  Runtime rt(o);
  detail::DeviceBuffer a(64);
  EXPECT_THROW(rt.copy(nullptr, a.as<float>(), 4), Error);
  EXPECT_THROW(rt.add(a.as<float>(), nullptr, a.as<float>(), 4), Error);
  EXPECT_NO_THROW(rt.copy(static_cast<float*>(nullptr), nullptr, 0));  // n = 0: nothing to do
}

// Every configuration of the space is verified by the tuner: a wrong kernel shows as
// wrong_result. Then the runtime reads the best back (exact step) and computes correctly with it.
TEST(ElementwiseGpu, TuningRunIntoTemporaryDatabaseThenRuntimeUsesIt) {
  KTUNE_REQUIRE_GPU();
  testing::TempDir dir;
  const std::string path = dir.file("tune.db");
  const std::size_t n = (1 << 20) + 3;
  Problem problem = elementwise_problem(ElementwiseOp::kAdd, "f32", n, 4);
  const Family& family = find_family("elementwise");
  std::string best_config;
  {
    Device& device = ktune_held_device;
    Database db(path);
    TuneOptions options;
    options.strategy = "exhaustive";
    options.max_evals = 0;
    options.timing.repeats = 3;
    options.timing.warmup = 1;
    options.progress = false;
    TuneSummary s = tune(db, device, family, problem, options);
    SearchSpace space(family, problem, device.limits());
    EXPECT_EQ(s.evaluated, space.size());
    auto rows = db.results({});
    EXPECT_EQ(rows.size(), space.size());
    // Every candidate is either correct and timed, or was set aside after compiling because its
    // registers cannot fit its block: nothing wrong, nothing failing at launch.
    std::size_t invalid = 0;
    for (const auto& r : rows) {
      if (r.status == "invalid") {
        ++invalid;
        EXPECT_EQ(r.config.find("BLOCK=1024"), 0u) << r.config << ": " << r.message;
        continue;
      }
      EXPECT_EQ(r.status, "ok") << r.config << ": " << r.message;
    }
    EXPECT_EQ(s.ok + invalid, space.size());
    EXPECT_LT(invalid, space.size() / 10);
    ASSERT_TRUE(s.best);
    best_config = s.best->config;
    // A second run resumes: nothing is left to evaluate.
    TuneSummary again = tune(db, device, family, problem, options);
    EXPECT_EQ(again.evaluated, 0u);
    EXPECT_EQ(again.already_done, space.size());
  }
  Options o;
  o.database = path;
  Runtime rt(o);
  Choice c = rt.explain("elementwise", problem.key());
  EXPECT_EQ(c.step, LookupStep::kExact);
  EXPECT_EQ(c.config, best_config);
  // Use it: float pointers offset by one element are 4-byte aligned, as tuned.
  detail::DeviceBuffer a((n + 1) * 4), b((n + 1) * 4), out((n + 1) * 4);
  auto ha = random_host<float>(n + 1, 5), hb = random_host<float>(n + 1, 6);
  upload(a.get(), ha);
  upload(b.get(), hb);
  rt.add(out.as<float>(4), a.as<float>(4), b.as<float>(4), n);
  check(driver().cuCtxSynchronize(), "sync");
  auto h = download<float>(out.get() + 4, n);
  for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(h[i], ha[i + 1] + hb[i + 1]) << i;
  EXPECT_EQ(rt.explain("elementwise", problem.key()).step, LookupStep::kCache);
}

// A Runtime keeps the binaries it compiles in its database, so the next one compiles nothing:
// on a database it created, and on one that existed before it (as after `ktune tune`; 76db277
// opened such a file read-only and lost them: every process compiled again).
TEST(ElementwiseGpu, WarmStartCompilesNothing) {
  KTUNE_REQUIRE_GPU();
  testing::TempDir dir;
  detail::DeviceBuffer a(4096), b(4096);
  for (const bool existed : {false, true}) {
    Options o;
    o.database = dir.file(existed ? "existed.db" : "new.db");
    if (existed) open_for_writing(o.database);
    {
      Runtime rt(o);
      rt.copy(b.as<float>(), a.as<float>(), 1000);
      EXPECT_GE(rt.compile_count(), 1u);
    }
    Runtime warm(o);
    warm.copy(b.as<float>(), a.as<float>(), 1000);
    check(driver().cuCtxSynchronize(), "sync");
    EXPECT_EQ(warm.compile_count(), 0u) << (existed ? "a database made before" : "a new database");
  }
}

}  // namespace
}  // namespace ktune

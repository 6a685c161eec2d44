// GPU tests: GEMM against a host reference for all ops and layouts, odd sizes, K = 0, alpha = 0,
// beta = 0 over NaN, lda > m, unaligned operands; a tuning run whose every candidate verifies.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <tuple>

#include "../host/temp_dir.hpp"
#include "db/database.hpp"
#include "db/exchange.hpp"
#include "families/family.hpp"
#include "families/gemm/gemm.hpp"
#include "families/registry.hpp"
#include "gpu_util.hpp"
#include "ktune/ktune.hpp"
#include "platform/kernel_cache.hpp"
#include "tuner/tuner.hpp"

namespace ktune {
namespace {

using testing::download;
using testing::random_vector;
using testing::upload;

struct Case {
  Layout layout = Layout::kColMajor;
  Op op_a = Op::kN, op_b = Op::kN;
  std::int64_t m = 1, n = 1, k = 1;
  double alpha = 1.25, beta = 0.0;
  std::int64_t pad = 0;     // extra leading-dimension elements beyond the minimum
  std::int64_t offset = 0;  // elements added to every pointer (misaligns them when odd)
  bool nan_c = false;       // C starts as NaN (only meaningful with beta == 0)
};

std::string describe(const Case& c) {
  return std::string(c.layout == Layout::kRowMajor ? "row" : "col") + " " +
         (c.op_a == Op::kT ? "T" : "N") + (c.op_b == Op::kT ? "T" : "N") +
         " m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
         " alpha=" + std::to_string(c.alpha) + " beta=" + std::to_string(c.beta) +
         " pad=" + std::to_string(c.pad) + " offset=" + std::to_string(c.offset);
}

// Runs one case through the runtime and compares with a double-precision host reference;
// `result` (if given) receives C as computed.
template <typename T>
void run_case(Runtime& rt, const Case& c, std::uint64_t seed, std::vector<T>* result = nullptr) {
  const bool row = c.layout == Layout::kRowMajor;
  const bool ta = c.op_a == Op::kT, tb = c.op_b == Op::kT;
  // Stored shapes (rows x cols in the storage order's sense).
  const std::int64_t a_rows = ta ? c.k : c.m, a_cols = ta ? c.m : c.k;  // op(A) = m x k
  const std::int64_t b_rows = tb ? c.n : c.k, b_cols = tb ? c.k : c.n;
  // Leading dimension = stride between consecutive columns (col-major) or rows (row-major).
  const std::int64_t lda = std::max<std::int64_t>(1, (row ? a_cols : a_rows) + c.pad);
  const std::int64_t ldb = std::max<std::int64_t>(1, (row ? b_cols : b_rows) + c.pad);
  const std::int64_t ldc = std::max<std::int64_t>(1, (row ? c.n : c.m) + c.pad);
  const std::int64_t a_size = lda * (row ? a_rows : a_cols), b_size = ldb * (row ? b_rows : b_cols);
  const std::int64_t c_size = ldc * (row ? c.m : c.n);
  auto ha = random_vector<T>(a_size + c.offset, seed),
       hb = random_vector<T>(b_size + c.offset, seed + 1);
  auto hc = random_vector<T>(c_size + c.offset, seed + 2);
  if (c.nan_c) std::fill(hc.begin(), hc.end(), std::numeric_limits<T>::quiet_NaN());
  detail::DeviceBuffer da((ha.size() + 1) * sizeof(T)), db((hb.size() + 1) * sizeof(T)),
      dc((hc.size() + 1) * sizeof(T));
  upload(da.get(), ha);
  upload(db.get(), hb);
  upload(dc.get(), hc);
  auto at = [&](const std::vector<T>& v, std::int64_t ld, std::int64_t r, std::int64_t col) {
    return static_cast<double>(row ? v[c.offset + r * ld + col] : v[c.offset + r + col * ld]);
  };
  rt.gemm(c.layout, c.op_a, c.op_b, c.m, c.n, c.k, static_cast<T>(c.alpha),
          da.as<T>(c.offset * sizeof(T)), lda, db.as<T>(c.offset * sizeof(T)), ldb,
          static_cast<T>(c.beta), dc.as<T>(c.offset * sizeof(T)), ldc);
  testing::synchronize();
  auto out = download<T>(dc.get(), hc.size());
  if (result) *result = out;
  const double eps = sizeof(T) == 4 ? 6e-8 : 1.2e-16;
  for (std::int64_t i = 0; i < c.m; ++i)
    for (std::int64_t j = 0; j < c.n; ++j) {
      double dot = 0, mag = 0;
      for (std::int64_t p = 0; p < c.k; ++p) {
        const double x = ta ? at(ha, lda, p, i) : at(ha, lda, i, p);
        const double y = tb ? at(hb, ldb, j, p) : at(hb, ldb, p, j);
        dot += x * y;
        mag += std::fabs(x * y);
      }
      const double c0 = at(hc, ldc, i, j);
      double want = c.alpha * dot, tol_mag = std::fabs(c.alpha) * mag;
      if (c.beta != 0) want += c.beta * c0, tol_mag += std::fabs(c.beta * c0);
      const double got = at(out, ldc, i, j);
      const double tol =
          16 * eps * std::sqrt(static_cast<double>(std::max<std::int64_t>(c.k, 1))) * tol_mag +
          1e-30;
      ASSERT_TRUE(std::fabs(got - want) <= tol)
          << describe(c) << " at (" << i << ", " << j << "): got " << got << ", want " << want;
    }
  // Nothing outside C (padding between columns, memory before it) was written.
  for (std::int64_t idx = 0; idx < static_cast<std::int64_t>(hc.size()); ++idx) {
    const std::int64_t rel = idx - c.offset;
    const bool inside = rel >= 0 && (row ? (rel / ldc < c.m && rel % ldc < c.n)
                                         : (rel % ldc < c.m && rel / ldc < c.n));
    if (!inside) {
      ASSERT_EQ(std::memcmp(&out[idx], &hc[idx], sizeof(T)), 0)
          << describe(c) << " wrote outside C at " << idx;
    }
  }
}

// Every layout and op combination with sizes 1, 7, 33, 127, 129 and 1000 in each dimension in
// turn, the other two at m, n and k; f(case, size) runs one. Stops at a fatal failure.
template <typename F>
void for_odd_shapes(std::int64_t m, std::int64_t n, std::int64_t k, F&& f) {
  for (Layout layout : {Layout::kColMajor, Layout::kRowMajor})
    for (Op oa : {Op::kN, Op::kT})
      for (Op ob : {Op::kN, Op::kT})
        for (std::int64_t size : {1, 7, 33, 127, 129, 1000})
          for (int dim = 0; dim < 3; ++dim) {
            Case c;
            c.layout = layout, c.op_a = oa, c.op_b = ob;
            c.m = dim == 0 ? size : m;
            c.n = dim == 1 ? size : n;
            c.k = dim == 2 ? size : k;
            f(c, size);
            if (::testing::Test::HasFatalFailure()) return;
          }
}

// A configuration pinned for tests: dtype and configuration text.
struct Pin {
  const char* dtype;
  const char* config;
};

// Stores `config` as the device's tuned result of `problem`, so the runtime's lookup finds it.
void put_pinned(Database& db, const Device& device, const Problem& problem, const Config& config) {
  const Family& family = find_family("gemm");
  ResultRecord r;
  r.device_id = db.ensure_device(device.info());
  r.family = "gemm";
  r.template_hash = family.template_hash();
  r.problem = problem.key();
  r.config = to_string(config);
  r.status = "ok";
  // Faster than anything measured: the pinned row is the problem's best and the predicted step's
  // first choice (the tests that pin keep the shipped presets out of their databases).
  r.time_median_ms = 1e-6;
  r.metric = 1e6;
  r.unit = "TFLOPS";
  db.put_result(r);
}

// A random sample of a space, briefly timed, without a progress line: the tuning runs of these
// tests check what each candidate computes, not how fast.
TuneOptions random_sample(std::size_t evals, int repeats, int warmup) {
  TuneOptions o;
  o.strategy = "random";
  o.max_evals = evals;
  o.timing.repeats = repeats;
  o.timing.warmup = warmup;
  o.progress = false;
  return o;
}

class GemmGpu : public ::testing::Test {
 protected:
  Options defaults() {
    Options o;
    o.use_database = false;  // built-in defaults: the configuration every problem can fall back to
    return o;
  }
};

TEST_F(GemmGpu, AllOpsAndLayoutsOddSizesInEachDimension) {
  KTUNE_REQUIRE_GPU();
  Runtime rt(defaults());
  std::uint64_t seed = 1;
  for_odd_shapes(65, 31, 47, [&](const Case& c, std::int64_t size) {
    run_case<float>(rt, c, ++seed);
    if (size <= 129) run_case<double>(rt, c, ++seed);
  });
}

TEST_F(GemmGpu, BlasEdgeCases) {
  KTUNE_REQUIRE_GPU();
  Runtime rt(defaults());
  std::uint64_t seed = 1000;
  Case c;
  c.m = 70, c.n = 50, c.k = 0, c.beta = 0.5;  // K = 0: C = beta * C
  run_case<float>(rt, c, ++seed);
  c.k = 30, c.alpha = 0, c.beta = 2;  // alpha = 0: C = beta * C
  run_case<float>(rt, c, ++seed);
  c.alpha = 1.5, c.beta = 0, c.nan_c = true;  // beta = 0: NaN in C must not survive
  run_case<float>(rt, c, ++seed);
  run_case<double>(rt, c, ++seed);
  c.k = 0;  // K = 0 and beta = 0 over NaN: zeros
  run_case<float>(rt, c, ++seed);
  c = Case{};
  c.m = 100, c.n = 90, c.k = 80, c.beta = -0.75, c.pad = 13;  // lda > m etc.
  for (Op oa : {Op::kN, Op::kT}) {
    c.op_a = oa;
    run_case<float>(rt, c, ++seed);
    run_case<double>(rt, c, ++seed);
  }
  c.pad = 0, c.m = 128, c.n = 192, c.k = 40;  // aligned C: interior tiles store vectors
  for (double beta : {0.0, 0.5}) {
    c.beta = beta;
    run_case<float>(rt, c, ++seed);
    run_case<double>(rt, c, ++seed);
  }
  c.pad = 3, c.offset = 1;  // pointers not 16-byte aligned
  for (Layout layout : {Layout::kColMajor, Layout::kRowMajor}) {
    c.layout = layout;
    run_case<float>(rt, c, ++seed);
    run_case<double>(rt, c, ++seed);
  }
  // m = 0 and n = 0: nothing happens (null pointers allowed; typed, since gemm() also takes
  // bf16 and fp16 pointers).
  const float* none = nullptr;
  float* none_c = nullptr;
  EXPECT_NO_THROW(
      rt.gemm(Layout::kColMajor, Op::kN, Op::kN, 0, 5, 5, 1.0f, none, 1, none, 5, 0.0f, none_c, 1));
  EXPECT_THROW(
      rt.gemm(Layout::kColMajor, Op::kN, Op::kN, 5, 5, 5, 1.0f, none, 5, none, 5, 0.0f, none_c, 5),
      Error);
}

TEST_F(GemmGpu, SplitKIsDeterministicAndCorrect) {
  KTUNE_REQUIRE_GPU();
  // A tuning run on a small-m,n, long-k problem explores split-K; every candidate verifies.
  ktune::testing::TempDir dir;
  const std::string path = dir.file("gemm.db");
  const Family& family = find_family("gemm");
  Problem problem = gemm_problem("f32", false, true, 64, 96, 20000, 1);
  {
    Database db(path);
    const TuneOptions o = random_sample(60, 3, 1);
    TuneSummary s = tune(db, ktune_held_device, family, problem, o);
    EXPECT_EQ(s.evaluated, 60u);
    for (const auto& r : db.results({})) {
      EXPECT_TRUE(r.status == "ok" || r.status == "invalid")
          << r.config << ": " << r.status << " " << r.message;
    }
    ASSERT_TRUE(s.best);
  }
  Options o;
  o.database = path;
  Runtime rt(o);
  Case c;
  c.op_b = Op::kT, c.m = 64, c.n = 96, c.k = 20000, c.beta = 0.25, c.offset = 1, c.pad = 1;
  run_case<float>(rt, c, 77);
  EXPECT_EQ(rt.explain("gemm", problem.key()).step, LookupStep::kCache);
}

// Split-K pinned for one odd problem (edge tiles in m and n, splits of 1256, 640, 80, 1672 or 424,
// the 80 leaving the 64th split empty): the partial
// sums and their reduction verify with beta and over NaN in C, for f32 and f64 on the FMA units and
// the tensor cores, and give the same bits run after run.
TEST_F(GemmGpu, SplitKPinnedVerifiesAndRepeatsBitForBit) {
  KTUNE_REQUIRE_GPU();
  const Family& family = find_family("gemm");
  const Pin pins[] = {
      {"f32",
       "BK=8,BM=128,BN=128,MMA=0,PAD=0,PREFETCH=1,SPLITK=4,STAGES=2,SWIZZLE=1,TM=4,TN=4,UNROLL=0,"
       "VEC=4,WM=64,WN=64,WNITER=2"},
      {"f32",
       "BK=16,BM=64,BN=64,KCONTIG=4,MMA=0,PAD=0,PREFETCH=0,SPLITK=8,STAGES=3,SWIZZLE=1,TM=4,TN=4,"
       "UNROLL=0,VEC=4,WM=32,WN=32,WNITER=2"},
      {"f64",
       "BK=8,BM=64,BN=128,MMA=2,PAD=4,PREFETCH=0,SPLITK=4,STAGES=3,SWIZZLE=1,TM=4,TN=4,UNROLL=0,"
       "VEC=2,WM=32,WN=64,WNITER=1"},
      {"f64",
       "BK=8,BM=128,BN=64,MMA=0,PAD=4,PREFETCH=1,SPLITK=4,STAGES=2,SWIZZLE=1,TM=4,TN=4,UNROLL=0,"
       "VEC=2,WM=32,WN=64,WNITER=2"},
      // 64 splits of 80 (whole k-tiles) cover 5000 in 63: the launch runs those.
      {"f32",
       "BK=8,BM=128,BN=128,MMA=0,PAD=0,PREFETCH=1,SPLITK=64,STAGES=2,SWIZZLE=1,TM=4,TN=4,UNROLL=0,"
       "VEC=4,WM=64,WN=64,WNITER=2"},
      {"f64",
       "BK=8,BM=64,BN=128,MMA=2,PAD=4,PREFETCH=0,SPLITK=64,STAGES=3,SWIZZLE=1,TM=4,TN=4,UNROLL=0,"
       "VEC=2,WM=32,WN=64,WNITER=1"},
      // Counts that are not powers of two: 3 splits of 1672 (the last 1656), 12 of 424 (the
      // last 336): the reduction's groups of splits do not divide them.
      {"f32",
       "BK=8,BM=128,BN=128,MMA=0,PAD=0,PREFETCH=1,SPLITK=3,STAGES=2,SWIZZLE=1,TM=4,TN=4,UNROLL=0,"
       "VEC=4,WM=64,WN=64,WNITER=2"},
      {"f64",
       "BK=8,BM=64,BN=128,MMA=2,PAD=4,PREFETCH=0,SPLITK=12,STAGES=3,SWIZZLE=1,TM=4,TN=4,UNROLL=0,"
       "VEC=2,WM=32,WN=64,WNITER=1"},
  };
  std::uint64_t seed = 9000;
  for (const Pin& pin : pins) {
    SCOPED_TRACE(std::string(pin.dtype) + " " + pin.config);
    const bool f32 = std::string(pin.dtype) == "f32";
    const Problem problem = gemm_problem(pin.dtype, false, false, 200, 150, 5000, f32 ? 4 : 2);
    const Config config = family.normalize(parse_config(pin.config));
    ASSERT_EQ(family.reject(config, problem, ktune_held_device.limits()), "");
    ktune::testing::TempDir dir;
    const std::string path = dir.file("pinned.db");
    {
      Database db(path);
      put_pinned(db, ktune_held_device, problem, config);
    }
    Options o;
    o.database = path;
    Runtime rt(o);
    std::vector<float> out32[2];
    std::vector<double> out64[2];
    // One case in the pin's element type; `slot` >= 0 keeps C as computed.
    auto run = [&](const Case& c, std::uint64_t s, int slot) {
      if (f32)
        run_case<float>(rt, c, s, slot >= 0 ? &out32[slot] : nullptr);
      else
        run_case<double>(rt, c, s, slot >= 0 ? &out64[slot] : nullptr);
    };
    Case c;
    c.m = 200, c.n = 150, c.k = 5000, c.beta = 0.5;
    for (int slot = 0; slot < 2; ++slot) {
      run(c, seed, slot);  // the same seed both times: the same inputs, so the same bits
      if (::testing::Test::HasFatalFailure()) return;
    }
    EXPECT_EQ(rt.explain("gemm", problem.key()).config, to_string(config));
    if (f32) {
      EXPECT_EQ(out32[0], out32[1]);
    } else {
      EXPECT_EQ(out64[0], out64[1]);
    }
    c.beta = 0, c.nan_c = true;  // beta = 0 over NaN: the sum is written, C not read
    run(c, seed + 1, -1);
    c.nan_c = false, c.beta = -1, c.pad = 3, c.offset = 1;  // C not 16-byte aligned
    run(c, seed + 2, -1);
    seed += 3;
  }
}

// The cp.async pipeline (STAGES 3, 4), the FP64 tensor-core paths (MMA 1 to 4), register caps
// (MINB), k-contiguous tiles (KCONTIG) and fragments read across k-tiles (PREFETCH 2, 3), pinned:
// a database holding one result of the configuration per op combination makes the lookup's
// nearest step use it (adapted to each call) for every call below, through the public API.
TEST_F(GemmGpu, PipelinedAndTensorCorePathsOnOddShapesOpsAndLayouts) {
  KTUNE_REQUIRE_GPU();
  const Family& family = find_family("gemm");
  const Pin pins[] = {
      {"f32",
       "BK=16,BM=128,BN=128,MMA=0,PAD=4,PREFETCH=1,SPLITK=1,STAGES=3,SWIZZLE=8,TM=4,TN=4,UNROLL=0,"
       "VEC=4,WM=64,WN=32,WNITER=2"},
      {"f32",
       "BK=8,BM=64,BN=64,MMA=0,PAD=4,PREFETCH=0,SPLITK=4,STAGES=4,SWIZZLE=1,TM=4,TN=4,UNROLL=0,"
       "VEC=4,WM=32,WN=32,WNITER=1"},
      {"f64",
       "BK=16,BM=128,BN=64,MMA=1,PAD=4,PREFETCH=0,SPLITK=1,STAGES=2,SWIZZLE=8,TM=4,TN=4,UNROLL=0,"
       "VEC=2,WM=32,WN=32,WNITER=1"},
      {"f64",
       "BK=8,BM=64,BN=128,MMA=1,PAD=0,PREFETCH=0,SPLITK=4,STAGES=3,SWIZZLE=1,TM=4,TN=4,UNROLL=0,"
       "VEC=2,WM=32,WN=64,WNITER=1"},
      {"f64",
       "BK=8,BM=128,BN=64,MMA=2,PAD=4,PREFETCH=0,SPLITK=1,STAGES=4,SWIZZLE=1,TM=4,TN=4,UNROLL=0,"
       "VEC=2,WM=64,WN=32,WNITER=1"},
      {"f64",
       "BK=16,BM=64,BN=128,MMA=3,PAD=4,PREFETCH=0,SPLITK=1,STAGES=3,SWIZZLE=1,TM=4,TN=4,UNROLL=0,"
       "VEC=2,WM=32,WN=64,WNITER=1"},
      {"f64",
       "BK=16,BM=128,BN=128,MMA=4,PAD=4,PREFETCH=0,SPLITK=4,STAGES=2,SWIZZLE=1,TM=4,TN=4,UNROLL=0,"
       "VEC=2,WM=32,WN=64,WNITER=1"},
      {"f64",
       "BK=8,BM=64,BN=64,MMA=0,PAD=4,PREFETCH=1,SPLITK=1,STAGES=4,SWIZZLE=1,TM=4,TN=4,UNROLL=0,"
       "VEC=2,WM=32,WN=32,WNITER=1"},
      // Register caps for more resident blocks (MINB; the pins above leave it at 1).
      {"f32",
       "BK=16,BM=256,BN=64,MINB=2,MMA=0,PAD=4,PREFETCH=0,SPLITK=1,STAGES=3,SWIZZLE=1,TM=4,TN=4,"
       "UNROLL=0,VEC=4,WM=64,WN=32,WNITER=2"},
      {"f64",
       "BK=8,BM=64,BN=64,MINB=3,MMA=0,PAD=4,PREFETCH=0,SPLITK=1,STAGES=2,SWIZZLE=8,TM=4,TN=4,"
       "UNROLL=0,VEC=2,WM=32,WN=32,WNITER=1"},
      // k-contiguous operands kept so in shared memory (KCONTIG; nt has none, so it runs 0):
      // through cp.async, through registers with split-K, unbuffered, and for f64.
      {"f32",
       "BK=16,BM=128,BN=128,KCONTIG=4,MMA=0,PAD=4,PREFETCH=0,SPLITK=1,STAGES=3,SWIZZLE=8,TM=4,"
       "TN=4,UNROLL=0,VEC=4,WM=64,WN=32,WNITER=2"},
      {"f32",
       "BK=8,BM=64,BN=64,KCONTIG=2,MMA=0,PAD=4,PREFETCH=0,SPLITK=4,STAGES=2,SWIZZLE=1,TM=4,TN=4,"
       "UNROLL=2,VEC=4,WM=32,WN=32,WNITER=1"},
      {"f32",
       "BK=16,BM=64,BN=128,KCONTIG=4,MMA=0,PAD=0,PREFETCH=0,SPLITK=1,STAGES=1,SWIZZLE=1,TM=4,TN=4,"
       "UNROLL=0,VEC=4,WM=32,WN=64,WNITER=2"},
      {"f64",
       "BK=8,BM=64,BN=64,KCONTIG=2,MMA=0,PAD=4,PREFETCH=0,SPLITK=1,STAGES=4,SWIZZLE=1,TM=4,TN=4,"
       "UNROLL=0,VEC=2,WM=32,WN=32,WNITER=1"},
      // Fragments read across the k-tile barrier (PREFETCH 2: one k-step ahead inside a tile
      // too; 3: not), through registers and through cp.async, split-K included.
      {"f32",
       "BK=16,BM=128,BN=128,MMA=0,PAD=4,PREFETCH=2,SPLITK=1,STAGES=2,SWIZZLE=8,TM=4,TN=4,UNROLL=0,"
       "VEC=4,WM=64,WN=32,WNITER=2"},
      {"f32",
       "BK=8,BM=64,BN=64,MMA=0,PAD=4,PREFETCH=3,SPLITK=4,STAGES=3,SWIZZLE=1,TM=4,TN=4,UNROLL=0,"
       "VEC=4,WM=32,WN=32,WNITER=1"},
      {"f64",
       "BK=8,BM=128,BN=64,MMA=0,PAD=4,PREFETCH=3,SPLITK=1,STAGES=2,SWIZZLE=1,TM=4,TN=4,UNROLL=0,"
       "VEC=2,WM=32,WN=64,WNITER=2"},
      {"f64",
       "BK=16,BM=64,BN=64,MMA=0,PAD=4,PREFETCH=2,SPLITK=4,STAGES=4,SWIZZLE=1,TM=4,TN=4,UNROLL=0,"
       "VEC=2,WM=32,WN=32,WNITER=1"},
      // The smallest tiles: two warps (64 threads) and warp tiles of 16 rows or columns, on the
      // FMA units and each tensor-core shape, split-K included.
      {"f32",
       "BK=8,BM=32,BN=64,MMA=0,PAD=4,PREFETCH=1,SPLITK=1,STAGES=3,SWIZZLE=8,TM=4,TN=4,UNROLL=0,"
       "VEC=4,WM=32,WN=32,WNITER=1"},
      {"f32",
       "BK=16,BM=32,BN=32,MMA=0,PAD=4,PREFETCH=0,SPLITK=4,STAGES=2,SWIZZLE=1,TM=4,TN=4,UNROLL=2,"
       "VEC=4,WM=16,WN=32,WNITER=1"},
      {"f32",
       "BK=16,BM=64,BN=32,KCONTIG=2,MMA=0,PAD=4,PREFETCH=0,SPLITK=1,STAGES=4,SWIZZLE=1,TM=4,TN=4,"
       "UNROLL=0,VEC=4,WM=32,WN=16,WNITER=1"},
      {"f64",
       "BK=16,BM=32,BN=32,MMA=4,PAD=4,PREFETCH=0,SPLITK=1,STAGES=4,SWIZZLE=1,TM=4,TN=4,UNROLL=0,"
       "VEC=2,WM=16,WN=32,WNITER=1"},
      {"f64",
       "BK=8,BM=32,BN=64,MMA=3,PAD=4,PREFETCH=0,SPLITK=4,STAGES=3,SWIZZLE=1,TM=4,TN=4,UNROLL=0,"
       "VEC=2,WM=16,WN=32,WNITER=1"},
      {"f64",
       "BK=8,BM=64,BN=32,MMA=1,PAD=4,PREFETCH=0,SPLITK=1,STAGES=2,SWIZZLE=4,TM=4,TN=4,UNROLL=0,"
       "VEC=2,WM=32,WN=16,WNITER=1"},
      {"f64",
       "BK=8,BM=32,BN=32,MMA=0,PAD=4,PREFETCH=1,SPLITK=1,STAGES=2,SWIZZLE=1,TM=4,TN=4,UNROLL=0,"
       "VEC=2,WM=32,WN=16,WNITER=1"},
  };
  std::uint64_t seed = 5000;
  for (const Pin& pin : pins) {
    SCOPED_TRACE(std::string(pin.dtype) + " " + pin.config);
    ktune::testing::TempDir dir;
    const std::string path = dir.file("pinned.db");
    {
      Database db(path);
      // The shipped presets count as loaded: the pinned rows are this database's only
      // measurements, so the predicted step (the nearest measurement of each kernel) can answer
      // with nothing else. With the presets, measurements of problems nearer than the pinned
      // ones won, and the odd shapes ran other configurations than the pinned one.
      for (const auto& p : shipped_presets()) db.record_preset(p.name, std::string(p.digest));
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          // Split-K needs few tiles; SWIZZLE=8 needs more than 8 rows of tiles; the smallest
          // tiles (32 x 64 at most) are for C smaller than four waves of 64 x 64 tiles.
          const Config parsed = parse_config(pin.config);
          const bool smallest = parsed.at("BM") * parsed.at("BN") <= 2048;
          const bool split = std::string(pin.config).find("SPLITK=1,") == std::string::npos;
          const std::int64_t size = (split ? 512 : 2048) / (smallest ? 2 : 1);
          const Problem tuned = gemm_problem(pin.dtype, ta, tb, size, size, size,
                                             std::string(pin.dtype) == "f32" ? 4 : 2);
          // FMA tiles of nt are stored without a transpose: no padding there.
          Config config = family.normalize(parse_config(pin.config));
          if (!ta && tb && config.at("MMA") == 0) config["PAD"] = 0, config["KCONTIG"] = 0;
          ASSERT_EQ(family.reject(config, tuned, ktune_held_device.limits()), "");
          put_pinned(db, ktune_held_device, tuned, config);
        }
    }
    Options o;
    o.database = path;
    Runtime rt(o);
    const bool f32 = std::string(pin.dtype) == "f32";
    auto run = [&](const Case& c) {
      if (f32)
        run_case<float>(rt, c, ++seed);
      else
        run_case<double>(rt, c, ++seed);
    };
    for_odd_shapes(130, 70, 75, [&](Case c, std::int64_t size) {
      c.beta = size == 33 ? 0.5 : 0.0;
      c.nan_c = c.beta == 0 && size == 127;
      c.offset = size == 7 ? 1 : 0;  // unaligned pointers: narrower copies
      c.pad = size == 129 ? 3 : 0;
      run(c);
    });
    if (::testing::Test::HasFatalFailure()) return;
    // An aligned interior-tile case, and proof that the pinned configuration was the one used.
    Case c;
    c.m = 256, c.n = 256, c.k = 96, c.beta = -0.5;
    run(c);
    const Choice choice =
        rt.explain("gemm", gemm_problem(pin.dtype, false, false, 256, 256, 96, f32 ? 4 : 2).key());
    EXPECT_EQ(choice.step, LookupStep::kCache);       // looked up by the call above
    EXPECT_NE(choice.tuned_problem, choice.problem);  // from the pinned row, adapted
    const Config used = parse_config(choice.config);
    const Config pinned = parse_config(pin.config);
    EXPECT_EQ(used.at("STAGES"), pinned.at("STAGES")) << choice.config;
    EXPECT_EQ(used.at("MMA"), pinned.at("MMA")) << choice.config;
    EXPECT_EQ(used.at("BM"), pinned.at("BM")) << choice.config;
    EXPECT_EQ(used.at("PREFETCH"), pinned.at("PREFETCH")) << choice.config;
    if (pinned.count("KCONTIG")) {
      EXPECT_EQ(used.at("KCONTIG"), pinned.at("KCONTIG")) << choice.config;  // nn keeps it
    }
  }
}

// The workloads' reference splits k where the output has few tiles (gemm_reference.cuh): on
// outputs of 4 and 6 tiles with k in the hundred thousands, in every op, a correct kernel passes
// and C left poisoned (the kernel not run) or one element changed fails; a short tune of such a
// shape finds candidates that pass, none wrong.
TEST_F(GemmGpu, HugeKShapesVerifyThroughTheSplitReference) {
  KTUNE_REQUIRE_GPU();
  Device& device = ktune_held_device;
  KernelCache cache(device, nullptr);
  detail::Stream stream;
  const Family& family = find_family("gemm");
  for (const char* dtype : {"f32", "f64"})
    for (const auto& [ta, tb] :
         {std::pair{false, false}, {false, true}, {true, false}, {true, true}}) {
      const std::int64_t m = ta ? 122 : 70, n = tb ? 171 : 90;
      const Problem problem = gemm_problem(dtype, ta, tb, m, n, 300001, 1);
      SCOPED_TRACE(problem.key());
      ASSERT_GT(gemm_reference_split_plan(m, n, 300001, device.limits().sm_count).splits, 1);
      auto workload = family.make_workload(problem, device, cache);
      const Config config = family.default_config(problem, device.limits());
      auto kernel = cache.get(family.compile_request(config, problem, device.limits().arch()));
      workload->prepare(7, stream.get());
      workload->run(*kernel, config, stream.get());
      stream.synchronize();
      EXPECT_EQ(workload->verify(stream.get()), "");
      // The same seed with C left poisoned: the kept reference says wrong, so it is made again
      // (KeptReference) and still says wrong; made again, its splits add into zeroed sums, so a
      // correct C then passes against it.
      const std::size_t made = gemm_workload_references(*workload);
      workload->prepare(7, stream.get());
      stream.synchronize();
      EXPECT_NE(workload->verify(stream.get()), "");
      EXPECT_EQ(gemm_workload_references(*workload), made + 1);
      workload->prepare(7, stream.get());
      workload->run(*kernel, config, stream.get());
      stream.synchronize();
      EXPECT_EQ(workload->verify(stream.get()), "");
      EXPECT_EQ(gemm_workload_references(*workload), made + 1);
      workload->prepare(8, stream.get());  // C poisoned, the kernel not run
      stream.synchronize();
      EXPECT_NE(workload->verify(stream.get()), "");
      // One element of a correct C off by 10^4: above the tolerance, 16 eps sqrt(k) times the
      // sum of the terms' magnitudes (about 39 for f32 here).
      workload->prepare(9, stream.get());
      workload->run(*kernel, config, stream.get());
      stream.synchronize();
      const GemmCall& call = gemm_workload_call(*workload);
      const std::size_t bytes = call.element_bytes;
      const CUdeviceptr at = reinterpret_cast<CUdeviceptr>(call.c) + (5 + 3 * call.ldc) * bytes;
      double value = 0;
      float value32 = 0;
      void* host = bytes == 4 ? static_cast<void*>(&value32) : static_cast<void*>(&value);
      detail::check(detail::driver().cuMemcpyDtoH(host, at, bytes), "cuMemcpyDtoH");
      if (bytes == 4)
        value32 += 1e4f;
      else
        value += 1e4;
      detail::check(detail::driver().cuMemcpyHtoD(at, host, bytes), "cuMemcpyHtoD");
      EXPECT_NE(workload->verify(stream.get()), "");
    }
  ktune::testing::TempDir dir;
  Database db(dir.file("t.db"));
  const Problem problem = gemm_problem("f32", true, false, 122, 171, 200000, 4);
  const TuneSummary s = tune(db, device, family, problem, random_sample(12, 2, 0));
  EXPECT_GT(s.ok, 0u);
  for (const auto& r : db.results({})) EXPECT_NE(r.status, "wrong_result") << r.config;
}

// A workload makes its reference once for the inputs of one seed (the tuner prepares every
// candidate of a run from one), and again where that reference says a candidate is wrong: inputs
// a candidate overwrote (here by hand, as a stray write would) do not fail the right candidates
// after it. gemm and gemm_skinny, both dtypes.
TEST_F(GemmGpu, AReferenceIsMadeOncePerSeedAndAgainWhereItSaysWrong) {
  KTUNE_REQUIRE_GPU();
  Device& device = ktune_held_device;
  KernelCache cache(device, nullptr);
  detail::Stream stream;
  for (const char* dtype : {"f32", "f64"})
    for (const char* family_name : {"gemm", "gemm_skinny"}) {
      const Family& family = find_family(family_name);
      const bool skinny = std::string(family_name) == "gemm_skinny";
      const Problem problem = skinny ? gemm_skinny_problem(dtype, true, false, 7, 3001, 517, 1)
                                     : gemm_problem(dtype, false, true, 301, 203, 517, 1);
      SCOPED_TRACE(problem.key());
      auto workload = family.make_workload(problem, device, cache);
      const Config config = family.default_config(problem, device.limits());
      auto kernel = cache.get(family.compile_request(config, problem, device.limits().arch()));
      auto run_and_verify = [&](std::uint64_t seed) {
        workload->prepare(seed, stream.get());
        workload->run(*kernel, config, stream.get());
        stream.synchronize();
        return workload->verify(stream.get());
      };
      EXPECT_EQ(run_and_verify(7), "");
      EXPECT_EQ(gemm_workload_references(*workload), 1u);
      EXPECT_EQ(run_and_verify(7), "");
      EXPECT_EQ(gemm_workload_references(*workload), 1u);  // kept
      // Not run: C keeps its poison. Wrong against the kept reference, made again, still wrong.
      workload->prepare(7, stream.get());
      stream.synchronize();
      EXPECT_NE(workload->verify(stream.get()), "");
      EXPECT_EQ(gemm_workload_references(*workload), 2u);
      // A overwritten after prepare(): the kernel's C is right for what A now holds, not for the
      // kept reference; made again from what A holds, the candidate passes.
      const GemmCall call = gemm_workload_call(*workload);
      const std::int64_t a_elements = call.lda * (call.trans_a ? call.m : call.k);
      workload->prepare(7, stream.get());
      detail::check(detail::driver().cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(call.a), 0x3F,
                                                     a_elements * call.element_bytes, stream.get()),
                    "cuMemsetD8Async");
      workload->run(*kernel, config, stream.get());
      stream.synchronize();
      EXPECT_EQ(workload->verify(stream.get()), "");
      EXPECT_EQ(gemm_workload_references(*workload), 3u);
      // prepare() fills A again from the seed: the reference kept is of the overwritten A, so it
      // is made again, and the right C passes.
      EXPECT_EQ(run_and_verify(7), "");
      EXPECT_EQ(gemm_workload_references(*workload), 4u);
      // Another seed: other inputs, a reference of their own.
      EXPECT_EQ(run_and_verify(8), "");
      EXPECT_EQ(gemm_workload_references(*workload), 5u);
      workload->prepare(8, stream.get());
      stream.synchronize();
      EXPECT_NE(workload->verify(stream.get()), "");
    }
}

// The workload's verifying run (the first after prepare()) asks the launch to poison the split-K
// scratch, and the timed runs after it do not (GemmCall::poison_scratch): every candidate of a
// run has the same inputs, so partial sums a candidate left unwritten must not be read as the
// candidate before it wrote them. A split candidate still verifies with its scratch poisoned.
std::vector<bool> poison_flags;  // what the recording launcher below was asked, in order
void recording_launch(const Kernel& kernel, const Config& config, const DeviceLimits& limits,
                      const GemmCall& call, CUstream stream) {
  poison_flags.push_back(call.poison_scratch);
  gemm_launch(kernel, config, limits, call, stream);
}

TEST_F(GemmGpu, TheVerifyingRunPoisonsTheSplitScratchAndTheTimedRunsDoNot) {
  KTUNE_REQUIRE_GPU();
  Device& device = ktune_held_device;
  KernelCache cache(device, nullptr);
  detail::Stream stream;
  const Family& family = find_family("gemm");
  const Problem problem = gemm_problem("f32", false, false, 70, 90, 300001, 1);
  const Config config = family.default_config(problem, device.limits());
  ASSERT_GT(config.at("SPLITK"), 1) << to_string(config);
  auto workload = make_gemm_workload(problem, device, cache, recording_launch);
  auto kernel = cache.get(family.compile_request(config, problem, device.limits().arch()));
  poison_flags.clear();
  for (std::uint64_t seed : {7, 7}) {
    workload->prepare(seed, stream.get());
    for (int i = 0; i < 3; ++i) workload->run(*kernel, config, stream.get());
    stream.synchronize();
    EXPECT_EQ(workload->verify(stream.get()), "");  // the last run's C, as the first's
  }
  EXPECT_EQ(poison_flags, (std::vector<bool>{true, false, false, true, false, false}));
  // The call the benches read has no poison in it.
  EXPECT_FALSE(gemm_workload_call(*workload).poison_scratch);
}

TEST_F(GemmGpu, TunedConfigurationsOfTheSpaceVerify) {
  KTUNE_REQUIRE_GPU();
  // A random sample of the space for an odd, unaligned problem: every candidate that compiles
  // within the register budget computes the right result (the tuner verifies each one).
  ktune::testing::TempDir dir;
  Database db(dir.file("t.db"));
  for (const char* dtype : {"f32", "f64"}) {
    Problem problem = gemm_problem(dtype, true, false, 257, 129, 300, 1);
    const TuneOptions o = random_sample(80, 2, 0);
    TuneSummary s = tune(db, ktune_held_device, find_family("gemm"), problem, o);
    // Most of the sample fits the registers (tn with KCONTIG holds both operands' k-vectors and
    // spills at the larger tiles, which the tuner records as invalid).
    EXPECT_GT(s.ok, 30u) << dtype;
  }
  for (const auto& r : db.results({}))
    EXPECT_TRUE(r.status == "ok" || r.status == "invalid")
        << r.problem << " " << r.config << ": " << r.status << " " << r.message;
}

// Block tiles of 48, 96 and 192 rows or columns (warp tiles of 48, WNITER 3; the f64 tensor-core
// path too) on short sides they pad less: a random sample of those alone, every candidate that
// compiles within the register budget computes the right result (the tuner verifies each one),
// in edge tiles, split K included.
TEST_F(GemmGpu, TilesBetweenPowersOfTwoVerify) {
  KTUNE_REQUIRE_GPU();
  ktune::testing::TempDir dir;
  Database db(dir.file("t.db"));
  for (const char* dtype : {"f32", "f64"})
    for (const auto& [only, ta, tb, m, n, k] :
         {std::tuple{SearchSpace::Only{{"BM", {48, 96, 192}}}, true, true, 130, 118, 40000},
          std::tuple{SearchSpace::Only{{"BN", {48, 96, 192}}}, false, false, 301, 136, 3000}}) {
      Problem problem = gemm_problem(dtype, ta, tb, m, n, k, 1);
      TuneOptions o = random_sample(40, 2, 0);
      o.only = only;
      TuneSummary s = tune(db, ktune_held_device, find_family("gemm"), problem, o);
      // (Scalar loads, align 1: the larger tiles spill, which the tuner records as invalid.)
      EXPECT_GT(s.ok, 8u) << dtype << " " << problem.key();
    }
  std::size_t rows = 0;
  for (const auto& r : db.results({})) {
    ++rows;
    EXPECT_TRUE(r.status == "ok" || r.status == "invalid")
        << r.problem << " " << r.config << ": " << r.status << " " << r.message;
  }
  EXPECT_GE(rows, 100u);
}

// Options::strict_fp32: f32 products of 9 to 16 columns run the FMA kernels, not 3xTF32, and
// compute the right result in every op and layout; without it the default is the 3xTF32 kernel.
TEST_F(GemmGpu, StrictFp32RunsTheFmaKernels) {
  KTUNE_REQUIRE_GPU();
  Options strict = defaults();
  strict.strict_fp32 = true;
  Runtime rt(strict), fast(defaults());
  const std::string key = gemm_skinny_problem("f32", false, false, 12, 4096, 4096, 4).key();
  std::uint64_t seed = 7000;
  Case c;
  c.m = 12, c.n = 4096, c.k = 4096;
  run_case<float>(rt, c, ++seed);
  run_case<float>(fast, c, ++seed);
  const Choice held = rt.explain("gemm_skinny", key), unheld = fast.explain("gemm_skinny", key);
  EXPECT_EQ(held.step, LookupStep::kCache);  // the call above ran it
  EXPECT_EQ(parse_config(held.config).at("MMA"), 0) << held.config;
  EXPECT_EQ(parse_config(unheld.config).at("MMA"), 1) << unheld.config;
  for (Layout layout : {Layout::kColMajor, Layout::kRowMajor})
    for (Op oa : {Op::kN, Op::kT})
      for (Op ob : {Op::kN, Op::kT})
        for (std::int64_t small : {9, 16}) {
          Case s;
          s.layout = layout, s.op_a = oa, s.op_b = ob;
          s.m = small, s.n = 2049, s.k = 3001;
          s.beta = small == 9 ? 0.5 : 0.0;
          run_case<float>(rt, s, ++seed);
          std::swap(s.m, s.n);
          run_case<float>(rt, s, ++seed);
          if (HasFatalFailure()) return;
        }
}

// The skinny kernels (m or n at most 16) through the runtime's defaults: every op, layout and
// orientation, short and long k (split by the default), beta over C and beta = 0 over NaN,
// padded leading dimensions and misaligned pointers.
TEST_F(GemmGpu, SkinnyShapesEveryOpLayoutAndOrientation) {
  KTUNE_REQUIRE_GPU();
  Runtime rt(defaults());
  std::uint64_t seed = 5000;
  int index = 0;
  for (Layout layout : {Layout::kColMajor, Layout::kRowMajor})
    for (Op oa : {Op::kN, Op::kT})
      for (Op ob : {Op::kN, Op::kT})
        for (std::int64_t small : {1, 5, 16})
          for (bool small_m : {false, true})
            for (std::int64_t k : {3, 1500}) {
              Case c;
              c.layout = layout, c.op_a = oa, c.op_b = ob;
              c.m = small_m ? small : 1037;
              c.n = small_m ? 1037 : small;
              c.k = k;
              ++index;
              c.beta = index % 3 == 0 ? 0.5 : 0.0;
              c.nan_c = c.beta == 0 && index % 2 == 0;
              c.pad = index % 4 == 1 ? 3 : 0;
              c.offset = index % 5 == 2 ? 1 : 0;
              run_case<float>(rt, c, ++seed);
              if (small == 5 && k == 1500) run_case<double>(rt, c, ++seed);
              if (HasFatalFailure()) return;
            }
  // Long k over few rows: the default splits k; the partial sums are added by the second kernel.
  for (bool small_m : {false, true})
    for (Op oa : {Op::kN, Op::kT}) {
      Case c;
      c.op_a = oa, c.op_b = oa == Op::kN ? Op::kT : Op::kN;
      c.m = small_m ? 3 : 200;
      c.n = small_m ? 200 : 3;
      c.k = 100000;
      c.beta = 0.25;
      run_case<float>(rt, c, ++seed);
      run_case<double>(rt, c, ++seed);
      const Problem p =
          gemm_skinny_problem("f32", c.op_a == Op::kT, c.op_b == Op::kT, c.m, c.n, c.k, 4);
      EXPECT_GT(parse_config(rt.explain("gemm_skinny", p.key()).config).at("SPLITK"), 1);
    }
  // A huge k over 33 rows of an m-contiguous X: hundreds of splits, added by a warp per result.
  for (Op oa : {Op::kN, Op::kT}) {
    Case c;
    c.op_a = oa, c.op_b = Op::kT;
    c.m = 16, c.n = 33, c.k = 300001;
    c.beta = 0.5;
    run_case<float>(rt, c, ++seed);
    run_case<double>(rt, c, ++seed);
    const Problem p = gemm_skinny_problem("f64", oa == Op::kT, true, c.m, c.n, c.k, 2);
    EXPECT_GT(parse_config(rt.explain("gemm_skinny", p.key()).config).at("SPLITK"), 32);
  }
}

// A tuning sample of the skinny space on odd, unaligned and long-k problems: every candidate
// that compiles verifies (the tuner checks each against the reference); the winner answers the
// runtime and gives the same bits call after call.
TEST_F(GemmGpu, SkinnyTunedCandidatesVerifyAndRepeatBitForBit) {
  KTUNE_REQUIRE_GPU();
  ktune::testing::TempDir dir;
  const std::string path = dir.file("skinny.db");
  const Family& family = find_family("gemm_skinny");
  const Problem problems[] = {gemm_skinny_problem("f32", true, false, 301, 3, 50001, 1),
                              gemm_skinny_problem("f32", false, false, 4099, 1, 3001, 1),
                              gemm_skinny_problem("f64", false, true, 7, 2049, 20000, 1)};
  {
    Database db(path);
    for (const Problem& problem : problems) {
      const TuneOptions o = random_sample(40, 2, 0);
      const TuneSummary s = tune(db, ktune_held_device, family, problem, o);
      EXPECT_GT(s.ok, 10u) << problem.key();
      ASSERT_TRUE(s.best) << problem.key();
    }
    for (const auto& r : db.results({}))
      EXPECT_TRUE(r.status == "ok" || r.status == "invalid")
          << r.problem << " " << r.config << ": " << r.status << " " << r.message;
  }
  Options o;
  o.database = path;
  Runtime rt(o);
  Case c;
  c.op_a = Op::kT, c.m = 301, c.n = 3, c.k = 50001, c.beta = 0.5, c.offset = 1;
  std::vector<float> first, second;
  run_case<float>(rt, c, 91, &first);
  run_case<float>(rt, c, 91, &second);
  EXPECT_EQ(std::memcmp(first.data(), second.data(), first.size() * sizeof(float)), 0);
  EXPECT_EQ(rt.explain("gemm_skinny", problems[0].key()).step, LookupStep::kCache);
}

// The staged dot kernel (GROUPS > 0: Y in shared memory for row groups) alone, then the
// tensor-core one (MMA = 1: f64, and f32 as 3xTF32): a tuning sample of each on problems whose X is
// k-contiguous (and for the tensor cores m-contiguous), Y n-contiguous (the n x k operand of few
// rows) and k-contiguous, odd and unaligned sizes, rows short of a block, a long k split. The tuner
// checks each candidate against the reference: every one that compiles verifies.
TEST_F(GemmGpu, SkinnyStagedAndTensorCoreCandidatesVerify) {
  KTUNE_REQUIRE_GPU();
  ktune::testing::TempDir dir;
  const Family& family = find_family("gemm_skinny");
  const Problem problems[] = {gemm_skinny_problem("f64", false, false, 14, 895, 6362, 2),
                              gemm_skinny_problem("f32", true, false, 1001, 13, 3001, 1),
                              gemm_skinny_problem("f64", true, true, 9565, 10, 2517, 1),
                              gemm_skinny_problem("f32", false, false, 5, 301, 100003, 4),
                              // X m-contiguous (B stored n x k): the tensor-core kernel only.
                              gemm_skinny_problem("f64", true, true, 11, 1079, 5353, 2),
                              gemm_skinny_problem("f64", false, true, 4077, 13, 482, 1),
                              gemm_skinny_problem("f32", true, true, 11, 1079, 5353, 4)};
  Database db(dir.file("staged.db"));
  for (const Problem& problem : problems)
    for (bool mma : {false, true}) {
      const bool x_kcontig = problem.size("m") < problem.size("n")  // as geometry_of reads it
                                 ? problem.attr("op")[1] == 'n'
                                 : problem.attr("op")[0] == 't';
      if (!mma && !x_kcontig) continue;
      TuneOptions o = random_sample(24, 2, 0);
      o.only["MMA"] = {mma ? 1 : 0};
      o.only["GROUPS"] = mma ? std::vector<std::int64_t>{0} : std::vector<std::int64_t>{1, 2, 4};
      const TuneSummary s = tune(db, ktune_held_device, family, problem, o);
      EXPECT_GT(s.ok, 8u) << problem.key() << (mma ? " MMA" : " staged");
    }
  constexpr auto npos = std::string::npos;
  std::size_t staged = 0, mma = 0, mma_f32 = 0;
  for (const auto& r : db.results({})) {
    EXPECT_TRUE(r.status == "ok" || r.status == "invalid")
        << r.problem << " " << r.config << ": " << r.status << " " << r.message;
    const Config c = parse_config(r.config);
    staged += r.status == "ok" && c.at("GROUPS") > 0;
    mma += r.status == "ok" && c.at("MMA") == 1;
    mma_f32 += r.status == "ok" && c.at("MMA") == 1 && r.problem.find("dtype=f32") != npos;
  }
  EXPECT_GT(staged, 32u);
  EXPECT_GT(mma, 16u);
  EXPECT_GT(mma_f32, 16u);  // 3xTF32, verified like the rest
}

}  // namespace
}  // namespace ktune

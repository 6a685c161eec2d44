// Host tests of the histogram family: space and constraints, problem checks, the default config,
// bin arithmetic, the host reference of the tuning inputs, and argument checks of the API.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <random>
#include <set>

#include "families/family.hpp"
#include "families/histogram/histogram.hpp"
#include "families/registry.hpp"
#include "ktune/error.hpp"
#include "platform/driver.hpp"
#include "platform/nvrtc.hpp"
#include "run_cli.hpp"
#include "tuner/space.hpp"

namespace ktune {
namespace {

__extension__ typedef __int128 Wide;  // exact products of 64-bit values

const Family& hist() { return find_family("histogram"); }

Problem problem(HistogramDtype dtype, std::uint64_t n, int bins, int align) {
  return histogram_problem(dtype, n, bins, align);
}

// floor((s - lower) * bins / (upper - lower)) in 128-bit integers, or -1 outside [lower, upper).
long long exact_int_bin(long long s, long long lower, long long upper, int bins) {
  if (s < lower || s >= upper) return -1;
  return static_cast<long long>(static_cast<Wide>(s - lower) * bins / (upper - lower));
}

// CUB's float formula written out again, with the clamp at the top edge.
long long exact_float_bin(float s, float lower, float upper, int bins) {
  if (!(s >= lower && s < upper)) return -1;
  const float scale = static_cast<float>(bins) / (upper - lower);
  const float x = (s - lower) * scale;
  return std::min<long long>(static_cast<long long>(x), bins - 1);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.what();
  }
  return "no error";
}

TEST(HistogramSpace, ConstraintsHoldForEveryConfiguration) {
  const DeviceLimits limits = DeviceLimits::for_arch(9, 0);
  for (const Problem& p : hist().check_problems()) {
    SearchSpace space(hist(), p, limits);
    ASSERT_GT(space.size(), 0u) << p.key();
    const int bytes = histogram_sample_bytes(parse_histogram_dtype(p.attr("dtype")));
    for (const Config& c : space.configs()) {
      EXPECT_GE(c.at("VEC"), bytes);
      if (c.at("AGG")) {
        EXPECT_GE(c.at("VEC") / bytes, 2);
      }
      EXPECT_EQ(c.at("R") > 1, c.at("PRIV") == kHistLanes) << to_string(c);
      if (c.at("PRIV") != kHistLanes) {
        EXPECT_EQ(c.at("LAYOUT"), 0);
      }
      if (c.at("CLUSTER") > 1) {
        EXPECT_NE(c.at("PRIV"), kHistGlobal);
      }
      EXPECT_LE(c.at("GRID") * c.at("BLOCK"), limits.max_threads_per_sm);
      EXPECT_GE(c.at("GRID") * c.at("BLOCK") * c.at("ITEMS") * c.at("VEC") * 2, 64 * 1024);
      const int pbins = bytes == 1 ? 256 : static_cast<int>(p.size("bins"));
      const std::int64_t smem =
          4 * static_cast<std::int64_t>(histogram_smem_words(
                  static_cast<int>(c.at("PRIV")), static_cast<int>(c.at("R")),
                  static_cast<int>(c.at("LAYOUT")), static_cast<int>(c.at("BLOCK")), pbins,
                  static_cast<int>(c.at("CLUSTER"))));
      EXPECT_LE(smem, limits.smem_per_block_optin);
      EXPECT_LE(c.at("GRID") * (smem + 1024), limits.smem_per_sm) << to_string(c);
    }
  }
}

TEST(HistogramSpace, SizesAndPruning) {
  const DeviceLimits h100 = DeviceLimits::for_arch(9, 0);
  SearchSpace big(hist(), problem(HistogramDtype::kU8, 1ull << 30, 256, 16), h100);
  SearchSpace small(hist(), problem(HistogramDtype::kU8, 1 << 20, 256, 16), h100);
  // Global atomics only where constant input cannot serialise seconds of atomics.
  std::set<std::int64_t> privs_big, privs_small;
  for (const auto& c : big.configs()) privs_big.insert(c.at("PRIV"));
  for (const auto& c : small.configs()) privs_small.insert(c.at("PRIV"));
  EXPECT_EQ(privs_big, (std::set<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(privs_small, (std::set<std::int64_t>{0, 1, 2, 3}));
  // No clusters before compute capability 9.0.
  SearchSpace a100(hist(), problem(HistogramDtype::kU8, 1ull << 30, 256, 16),
                   DeviceLimits::for_arch(8, 0));
  for (const auto& c : a100.configs()) EXPECT_EQ(c.at("CLUSTER"), 1);
  EXPECT_LT(a100.size(), big.size());
  // 4096 float bins leave fewer replicas room in shared memory than 1024.
  SearchSpace f1k(hist(), problem(HistogramDtype::kF32, 1 << 20, 1024, 16), h100);
  SearchSpace f4k(hist(), problem(HistogramDtype::kF32, 1 << 20, 4096, 16), h100);
  EXPECT_LT(f4k.size(), f1k.size());
  for (std::size_t i = 0; i < big.size(); ++i) EXPECT_EQ(big.index_of(to_string(big.at(i))), i);
}

TEST(HistogramFamily, ValidateNamesWhatIsWrong) {
  const Family& f = hist();
  auto bad = [&](const std::string& key) {
    return error_of([&] { f.validate(Problem::parse("histogram", key)); });
  };
  EXPECT_NE(bad("align=16;bins=256;dtype=f16;n=10").find("dtype"), std::string::npos);
  EXPECT_NE(bad("align=16;bins=0;dtype=u8;n=10").find("bins must be in [1, 4096], not 0"),
            std::string::npos);
  EXPECT_NE(bad("align=16;bins=4097;dtype=u8;n=10").find("bins"), std::string::npos);
  EXPECT_NE(bad("align=3;bins=256;dtype=u8;n=10").find("align"), std::string::npos);
  EXPECT_NE(bad("align=2;bins=256;dtype=f32;n=10").find("align 2 is below"), std::string::npos);
  EXPECT_NE(bad("align=16;bins=256;dtype=u8;n=-1").find("n must be"), std::string::npos);
  EXPECT_NE(bad("bins=256;dtype=u8;n=10").find("has no align"), std::string::npos);
  EXPECT_NE(bad("align=16;bins=256;dtype=u8;n=10;op=copy").find("not one of the axes"),
            std::string::npos);
  EXPECT_NO_THROW(f.validate(problem(HistogramDtype::kU16, 0, 1, 2)));
  EXPECT_NO_THROW(f.validate(problem(HistogramDtype::kF32, 5ull << 32, 4096, 4)));
  Problem p = problem(HistogramDtype::kI32, 12345, 1000, 8);
  EXPECT_EQ(Problem::parse("histogram", p.key()), p);
  EXPECT_EQ(p.key(), "align=8;bins=1000;dtype=i32;n=12345");
}

TEST(HistogramFamily, DefaultConfigIsValidForEveryProblemOnEveryDevice) {
  const Family& f = hist();
  std::vector<Problem> problems = f.check_problems();
  problems.push_back(problem(HistogramDtype::kU8, 1ull << 30, 256, 16));
  problems.push_back(problem(HistogramDtype::kU16, 7, 4096, 2));
  problems.push_back(problem(HistogramDtype::kF32, 0, 1, 4));
  for (auto [major, minor] : {std::pair{9, 0}, {8, 0}, {8, 6}, {7, 5}, {7, 0}, {10, 0}})
    for (const Problem& p : problems) {
      const DeviceLimits limits = DeviceLimits::for_arch(major, minor);
      const Config c = f.default_config(p, limits);
      EXPECT_NO_THROW(f.check_config(c));
      EXPECT_EQ(f.reject(c, p, limits), "") << p.key() << " sm_" << major << minor;
      EXPECT_EQ(c.at("CLUSTER"), 1);
      // Without opting in to more shared memory.
      const int pbins = p.attr("dtype") == "u8" ? 256 : static_cast<int>(p.size("bins"));
      EXPECT_LE(
          4 * histogram_smem_words(static_cast<int>(c.at("PRIV")), static_cast<int>(c.at("R")),
                                   static_cast<int>(c.at("LAYOUT")),
                                   static_cast<int>(c.at("BLOCK")), pbins, 1),
          48u * 1024);
    }
}

TEST(HistogramFamily, NamesCarryTheTemplateParametersAndTheHashTheHeaders) {
  const Family& f = hist();
  Problem p = problem(HistogramDtype::kF32, 1000, 1024, 16);
  Config c = f.default_config(p, DeviceLimits::for_arch(9, 0));
  auto names = f.name_expressions(c, p);
  ASSERT_EQ(names.size(), 1u);
  EXPECT_EQ(names[0].rfind("ktune::histogram_kernel<float, 512, 16, 4, 2, 2, 1>", 0), 0u)
      << names[0];
  EXPECT_NE(template_source("histogram.cuh").find("histogram_kernel"), std::string::npos);
  EXPECT_NE(template_source("histogram_math.cuh").find("histogram_bin_int"), std::string::npos);
  EXPECT_EQ(f.template_hash().size(), 16u);
}

TEST(HistogramFamily, StaticAssertRejectsAFloatLoadNarrowerThanASample) {
  const Family& f = hist();
  Problem p = problem(HistogramDtype::kF32, 1000, 1024, 16);
  CompileRequest r =
      f.compile_request(f.default_config(p, DeviceLimits::for_arch(9, 0)), p, "sm_90");
  r.name_expressions = {"ktune::histogram_kernel<float, 256, 1, 2, 1, 0, 0>"};
  try {
    compile(r);
    FAIL() << "a 1-byte load of float samples compiled";
  } catch (const Error& e) {
    EXPECT_NE(e.details().find("a load holds whole samples"), std::string::npos) << e.details();
  }
}

TEST(HistogramBins, IntegerBinsAreExactAcrossRanges) {
  std::mt19937_64 rng(7);
  const std::pair<long long, long long> ranges[] = {{0, 256},
                                                    {4, 251},
                                                    {0, 1},
                                                    {-5, 5},
                                                    {100, 60000},
                                                    {-2147483648LL, 2147483647LL},
                                                    {-2147483648LL, -2147483647LL},
                                                    {-1000000007, 999999937}};
  for (auto [lower, upper] : ranges)
    for (int bins : {1, 2, 3, 7, 100, 255, 256, 1000, 4095, 4096}) {
      HistogramArgs a{};
      a.bins = bins;
      a.lower = lower;
      a.upper = upper;
      a.range = static_cast<unsigned long long>(upper - lower);
      a.inv_range = 1.0 / static_cast<double>(a.range);
      std::uniform_int_distribution<long long> any(lower - 3, upper + 3);
      std::vector<long long> samples = {lower, upper - 1, upper, lower - 1};
      for (int b = 0; b <= bins; ++b)  // every bin edge, and its neighbours
        for (long long d : {-1LL, 0LL, 1LL}) {
          long long edge =
              lower + static_cast<long long>(static_cast<Wide>(upper - lower) * b / bins);
          samples.push_back(edge + d);
        }
      for (int i = 0; i < 2000; ++i) samples.push_back(any(rng));
      for (long long s : samples) {
        const unsigned got = histogram_bin_int(s, a);
        const long long want = exact_int_bin(s, lower, upper, bins);
        ASSERT_EQ(got == kHistogramNoBin ? -1LL : static_cast<long long>(got), want)
            << "s=" << s << " [" << lower << ", " << upper << ") bins=" << bins;
      }
    }
}

TEST(HistogramBins, FloatBinsFollowCubAndClampTheTopEdge) {
  const HistogramCall c = histogram_even_call(nullptr, 0, 1024, -1.0f, 1.0f, nullptr, true);
  const HistogramArgs& a = c.args;
  EXPECT_EQ(a.scale_f, 512.0f);
  EXPECT_EQ(histogram_bin_float(-1.0f, a), 0u);
  EXPECT_EQ(histogram_bin_float(1.0f, a), kHistogramNoBin);
  EXPECT_EQ(histogram_bin_float(std::nanf(""), a), kHistogramNoBin);
  EXPECT_EQ(histogram_bin_float(-std::numeric_limits<float>::infinity(), a), kHistogramNoBin);
  EXPECT_EQ(histogram_bin_float(0.0f, a), 512u);
  EXPECT_EQ(histogram_bin_float(-0.0f, a), 512u);
  EXPECT_EQ(histogram_bin_float(0.5f, a), 768u);
  // 1 - 2^-24 + 1 rounds to 2 in float: bin 1024 by the formula, a valid sample, the last bin.
  const float top = std::nextafter(1.0f, 0.0f);
  EXPECT_EQ(static_cast<int>((top - -1.0f) * 512.0f), 1024);
  EXPECT_EQ(histogram_bin_float(top, a), 1023u);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.5f, 1.5f);
  for (int bins : {1, 3, 1000, 1024, 4096})
    for (auto [lo, hi] : {std::pair{-1.0f, 1.0f}, {0.1f, 0.7f}, {-1e6f, 3.5f}}) {
      const HistogramArgs b = histogram_even_call(nullptr, 0, bins, lo, hi, nullptr, true).args;
      for (int i = 0; i < 5000; ++i) {
        const float s = dist(rng) * (hi - lo);
        const unsigned got = histogram_bin_float(s, b);
        ASSERT_EQ(got == kHistogramNoBin ? -1LL : static_cast<long long>(got),
                  exact_float_bin(s, lo, hi, bins))
            << s;
      }
    }
}

TEST(HistogramBins, BytesWith256BinsAreTheirOwnBin) {
  const HistogramArgs a = histogram_bytes_call(nullptr, 0, nullptr, true).args;
  EXPECT_EQ(a.identity, 1);
  for (int v = 0; v < 256; ++v) {
    EXPECT_EQ(histogram_bin(static_cast<unsigned char>(v), a), static_cast<unsigned>(v));
    EXPECT_EQ(histogram_bin_int(v, a), static_cast<unsigned>(v));  // the same by the formula
  }
}

// The reference counts samples [first, first + n) of the generator; recount them one by one.
template <typename T>
std::vector<std::uint32_t> brute_force(const HistogramData& g, std::uint64_t first, std::uint64_t n,
                                       const HistogramArgs& a, bool is_float) {
  constexpr std::uint64_t kSamples = 8 / sizeof(T);
  std::vector<std::uint32_t> counts(a.bins, 0);
  for (std::uint64_t i = first; i < first + n; ++i) {
    T v[kSamples];
    histogram_data_word<T>(g, i / kSamples, v);
    const T s = v[i % kSamples];
    long long b;
    if (is_float)
      b = exact_float_bin(static_cast<float>(s), a.lower_f, a.upper_f, a.bins);
    else if (a.identity)
      b = static_cast<long long>(s);
    else
      b = exact_int_bin(static_cast<long long>(s), a.lower, a.upper, a.bins);
    if (b >= 0) ++counts[b];
  }
  return counts;
}

TEST(HistogramReference, MatchesABruteForceCountOfEveryClassAndType) {
  struct Case {
    HistogramDtype dtype;
    int bins;
  };
  for (Case k : {Case{HistogramDtype::kU8, 256}, Case{HistogramDtype::kU8, 100},
                 Case{HistogramDtype::kU16, 1024}, Case{HistogramDtype::kI32, 1000},
                 Case{HistogramDtype::kF32, 1024}, Case{HistogramDtype::kF32, 4096}}) {
    const HistogramArgs a = histogram_workload_args(k.dtype, k.bins);
    for (HistogramInput input : {kHistUniform, kHistSkewed, kHistConstant})
      for (auto [first, n] : {std::pair<std::uint64_t, std::uint64_t>{0, 0},
                              {0, 1},
                              {3, 1},
                              {1, 4097},
                              {5, (3u << 20) + 11}}) {
        const HistogramData g = histogram_input_data(k.dtype, input, 42, a);
        const auto got = histogram_reference(k.dtype, g, first, n, a, 3);
        std::vector<std::uint32_t> want;
        switch (k.dtype) {
          case HistogramDtype::kU8:
            want = brute_force<unsigned char>(g, first, n, a, false);
            break;
          case HistogramDtype::kU16:
            want = brute_force<unsigned short>(g, first, n, a, false);
            break;
          case HistogramDtype::kI32:
            want = brute_force<int>(g, first, n, a, false);
            break;
          case HistogramDtype::kF32:
            want = brute_force<float>(g, first, n, a, true);
            break;
        }
        ASSERT_EQ(got, want) << histogram_dtype_name(k.dtype) << " bins " << k.bins << " "
                             << histogram_input_name(input) << " first " << first << " n " << n;
      }
  }
}

TEST(HistogramReference, InputClassesHaveTheirShape) {
  const HistogramArgs a = histogram_workload_args(HistogramDtype::kU8, 256);
  const std::uint64_t n = 1 << 20;
  auto counts = [&](HistogramInput input) {
    return histogram_reference(HistogramDtype::kU8,
                               histogram_input_data(HistogramDtype::kU8, input, 9, a), 0, n, a);
  };
  auto nonzero = [](const std::vector<std::uint32_t>& c) {
    return std::count_if(c.begin(), c.end(), [](std::uint32_t v) { return v > 0; });
  };
  const auto uniform = counts(kHistUniform), skewed = counts(kHistSkewed),
             constant = counts(kHistConstant);
  EXPECT_EQ(nonzero(uniform), 256);
  for (auto v : uniform) EXPECT_NEAR(v, n / 256.0, n / 256.0 * 0.1);
  EXPECT_EQ(nonzero(skewed), 17);  // a binomial offset of +-8 around the centre
  EXPECT_GT(*std::max_element(skewed.begin(), skewed.end()), n / 8);
  EXPECT_EQ(nonzero(constant), 1);
  EXPECT_EQ(*std::max_element(constant.begin(), constant.end()), n);
  // Another seed, other samples.
  EXPECT_NE(histogram_input_data(HistogramDtype::kU8, kHistUniform, 1, a).seed,
            histogram_input_data(HistogramDtype::kU8, kHistUniform, 2, a).seed);
  // Float inputs: NaN and out-of-range samples are part of the uniform class.
  const HistogramArgs f = histogram_workload_args(HistogramDtype::kF32, 1024);
  const auto fc =
      histogram_reference(HistogramDtype::kF32,
                          histogram_input_data(HistogramDtype::kF32, kHistUniform, 9, f), 0, n, f);
  const std::uint64_t counted = std::accumulate(fc.begin(), fc.end(), std::uint64_t(0));
  EXPECT_LT(counted, n - n / 200);
  EXPECT_GT(counted, n - n / 32);
}

TEST(HistogramArguments, InvalidArgumentsNameTheArgument) {
  std::uint32_t counts[8];
  auto* c = counts;
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(counts);
  EXPECT_NE(error_of([&] { histogram_bytes_call(nullptr, 5, c, false); }).find("samples is null"),
            std::string::npos);
  EXPECT_NE(error_of([&] { histogram_bytes_call(bytes, 5, nullptr, false); }).find("counts"),
            std::string::npos);
  EXPECT_NE(error_of([&] { histogram_bytes_call(nullptr, 0, nullptr, false); }).find("counts"),
            std::string::npos);  // n = 0 still zeroes the counts
  EXPECT_NO_THROW(histogram_bytes_call(nullptr, 0, nullptr, true));
  EXPECT_NO_THROW(histogram_bytes_call(bytes + 1, 3, c, false));  // unaligned bytes are fine
  EXPECT_NE(error_of([&] {
              histogram_bytes_call(
                  bytes, 5,
                  reinterpret_cast<std::uint32_t*>(reinterpret_cast<std::uintptr_t>(c) + 2), false);
            }).find("counts is not aligned"),
            std::string::npos);
  EXPECT_EQ(
      error_of([&] { histogram_even_call(HistogramDtype::kU8, bytes, 5, 0, 0, 10, c, false); }),
      "histogram_even: bins must be in [1, 4096], got 0");
  EXPECT_NE(error_of([&] {
              histogram_even_call(HistogramDtype::kU16, bytes, 5, 4097, 0, 10, c, false);
            }).find("bins"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              histogram_even_call(HistogramDtype::kI32, bytes, 5, 10, 7, 7, c, false);
            }).find("lower must be less than upper"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              histogram_even_call(HistogramDtype::kU16, bytes + 1, 5, 10, 0, 7, c, false);
            }).find("samples is not aligned"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              histogram_even_call(HistogramDtype::kI32, nullptr, 5, 10, 0, 7, c, false);
            }).find("samples is null"),
            std::string::npos);
  const float* f = reinterpret_cast<const float*>(counts);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_NE(error_of([&] {
              histogram_even_call(f, 5, 10, 1.0f, 0.0f, c, false);
            }).find("lower must be less than upper"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              histogram_even_call(f, 5, 10, std::nanf(""), 1.0f, c, false);
            }).find("finite"),
            std::string::npos);
  EXPECT_NE(error_of([&] { histogram_even_call(f, 5, 10, 0.0f, inf, c, false); }).find("finite"),
            std::string::npos);
  EXPECT_NE(
      error_of([&] { histogram_even_call(f, 5, 10, -3e38f, 3e38f, c, false); }).find("overflows"),
      std::string::npos);
  EXPECT_NE(
      error_of([&] { histogram_even_call(f, 5, 4096, 0.0f, 1e-44f, c, false); }).find("too narrow"),
      std::string::npos);
  EXPECT_NE(error_of([&] {
              histogram_even_call(f, 5, 10, 0.0f, 1.0f, nullptr, false);
            }).find("counts is null"),
            std::string::npos);
  EXPECT_NO_THROW(histogram_even_call(f, 5, 4096, -1e30f, 1e30f, c, false));
}

TEST(HistogramCli, BadArgumentsExitTwoNamingTheArgument) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"tune", "histogram", "--bins", "0"}, "--bins"},
      {{"tune", "histogram", "--bins", "5000"}, "--bins"},
      {{"tune", "histogram", "--dtype", "f16"}, "--dtype"},
      {{"tune", "histogram", "--align", "3"}, "--align"},
      {{"tune", "histogram", "--dtype", "f32", "--align", "2"}, "align"},
      {{"tune", "histogram", "--n", "1x"}, "--n"},
      {{"explain", "histogram", "bins=256;dtype=u8;n=1"}, "align"},
  };
  for (const auto& [args, names] : cases) {
    auto r = testing::run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args[1] << " " << args.back() << "\n" << r.err;
    EXPECT_NE(r.err.find(names), std::string::npos) << r.err;
  }
  auto help = testing::run_cli({"tune", "histogram", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--bins"), std::string::npos);
}

TEST(HistogramCli, TuneAndBenchWithoutADeviceExitThree) {
  if (detail::driver_available())
    GTEST_SKIP() << "a CUDA device is present; this test covers machines without one";
  testing::TempDir dir;
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"tune", "histogram", "--dtype", "f32", "--bins", "1024", "--n", "1M"},
           {"bench", "histogram"}}) {
    auto r = testing::run_cli(args, "KTUNE_DB=" + dir.file("t.db"));
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_NE(r.err.find("no CUDA"), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace ktune

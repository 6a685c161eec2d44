// GPU tests of the histogram family: exact counts through the public API for odd sizes, unaligned
// starts, n = 0 and 1, bin edges, NaN and out-of-range samples, accumulation, every sample type,
// n > 2^32; and tuning runs into a temporary database. Skipped without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "../host/temp_dir.hpp"
#include "db/database.hpp"
#include "families/family.hpp"
#include "families/histogram/histogram.hpp"
#include "families/registry.hpp"
#include "ktune/ktune.hpp"
#include "platform/device.hpp"
#include "platform/driver.hpp"
#include "tuner/space.hpp"
#include "tuner/tuner.hpp"

namespace ktune {
namespace {

__extension__ typedef __int128 Wide;  // exact products of 64-bit values

using detail::check;
using detail::driver;

// Skips without a GPU; otherwise holds device 0's primary context for the whole test, so that
// buffers made before (or outlive) a Runtime stay valid.
#define REQUIRE_GPU()                                                                   \
  std::string why_no_gpu;                                                               \
  if (!detail::driver_available(&why_no_gpu)) GTEST_SKIP() << "no GPU: " << why_no_gpu; \
  Device held_device(0)

constexpr std::size_t kGuard = 8;
constexpr std::uint32_t kPoison = 0xDEADBEEFu;

// Expected bins, written independently of the library's arithmetic: exact integer quotients, and
// CUB's float formula with the top edge clamped. -1: not counted.
long long bin_of(long long s, long long lower, long long upper, int bins) {
  if (s < lower || s >= upper) return -1;
  return static_cast<long long>(static_cast<Wide>(s - lower) * bins / (upper - lower));
}
long long bin_of(float s, float lower, float upper, int bins) {
  if (!(s >= lower && s < upper)) return -1;
  const float x = (s - lower) * (static_cast<float>(bins) / (upper - lower));
  return std::min<long long>(static_cast<long long>(x), bins - 1);
}

// Samples at `offset` elements into a device buffer; counts between poisoned guard words.
template <typename T>
struct Buffers {
  detail::DeviceBuffer samples, counts;
  std::size_t offset = 0;
  int bins = 0;

  Buffers(const std::vector<T>& host, std::size_t offset_, int bins_)
      : samples((host.size() + offset_ + 1) * sizeof(T)),
        counts((bins_ + 2 * kGuard) * 4),
        offset(offset_),
        bins(bins_) {
    if (!host.empty())
      check(driver().cuMemcpyHtoD(samples.get() + offset * sizeof(T), host.data(),
                                  host.size() * sizeof(T)),
            "cuMemcpyHtoD");
    fill_counts(kPoison);
  }
  const T* data() const { return samples.template as<const T>(offset * sizeof(T)); }
  std::uint32_t* out() const { return counts.template as<std::uint32_t>(kGuard * 4); }
  void fill_counts(std::uint32_t v) {
    std::vector<std::uint32_t> h(bins + 2 * kGuard, v);
    check(driver().cuMemcpyHtoD(counts.get(), h.data(), h.size() * 4), "cuMemcpyHtoD");
  }
  // The counts, after checking that the guard words are untouched.
  std::vector<std::uint32_t> result() const {
    check(driver().cuCtxSynchronize(), "sync");
    std::vector<std::uint32_t> h(bins + 2 * kGuard);
    check(driver().cuMemcpyDtoH(h.data(), counts.get(), h.size() * 4), "cuMemcpyDtoH");
    for (std::size_t i = 0; i < kGuard; ++i) {
      EXPECT_EQ(h[i], kPoison) << "guard before the counts overwritten";
      EXPECT_EQ(h[kGuard + bins + i], kPoison) << "guard after the counts overwritten";
    }
    return std::vector<std::uint32_t>(h.begin() + kGuard, h.begin() + kGuard + bins);
  }
};

template <typename T, typename Bin>
std::vector<std::uint32_t> expected(const std::vector<T>& samples, int bins, Bin bin) {
  std::vector<std::uint32_t> c(bins, 0);
  for (T s : samples) {
    const long long b = bin(s);
    if (b >= 0) ++c[b];
  }
  return c;
}

std::vector<std::uint8_t> random_bytes(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> v(n);
  for (auto& x : v) x = static_cast<std::uint8_t>(rng());
  // Runs of equal bytes, so that aggregation has something to aggregate.
  for (std::size_t i = 0; i + 40 < n; i += 97) std::memset(&v[i], v[i], 40);
  return v;
}

Options no_database() {
  Options o;
  o.use_database = false;
  return o;
}

TEST(HistogramGpu, BytesExactForOddSizesAndUnalignedStarts) {
  REQUIRE_GPU();
  Runtime rt(no_database());
  for (std::size_t n : {0ul, 1ul, 2ul, 3ul, 15ul, 16ul, 17ul, 31ul, 255ul, 4097ul, 65535ul,
                        (1ul << 20) + 13, (1ul << 22) + 7})
    for (std::size_t offset : {0ul, 1ul, 3ul, 7ul, 15ul}) {
      auto host = random_bytes(n, n * 16 + offset);
      Buffers<std::uint8_t> buf(host, offset, 256);
      rt.histogram(buf.data(), n, buf.out());
      ASSERT_EQ(buf.result(), expected(host, 256, [](std::uint8_t s) { return (long long)s; }))
          << "n=" << n << " offset=" << offset;
    }
}

TEST(HistogramGpu, ConstantAndSkewedBytesOnTheUsersStream) {
  REQUIRE_GPU();
  Runtime rt(no_database());
  detail::Stream stream;
  const std::size_t n = (3ul << 20) + 5;
  std::vector<std::uint8_t> constant(n, 0x5A), skewed(n);
  std::mt19937_64 rng(11);
  std::binomial_distribution<int> bin(16, 0.5);
  for (auto& x : skewed) x = static_cast<std::uint8_t>(120 + bin(rng));
  for (const auto* host : {&constant, &skewed}) {
    Buffers<std::uint8_t> buf(*host, 1, 256);
    rt.histogram(buf.data(), n, buf.out(), false, stream.get());
    stream.synchronize();
    ASSERT_EQ(buf.result(), expected(*host, 256, [](std::uint8_t s) { return (long long)s; }));
  }
}

TEST(HistogramGpu, AccumulateAddsAndZeroSamplesZeroTheCounts) {
  REQUIRE_GPU();
  Runtime rt(no_database());
  const std::size_t n = 100003;
  auto host = random_bytes(n, 5);
  auto once = expected(host, 256, [](std::uint8_t s) { return (long long)s; });
  Buffers<std::uint8_t> buf(host, 2, 256);
  rt.histogram(buf.data(), n, buf.out());
  rt.histogram(buf.data(), n, buf.out(), true);
  auto twice = buf.result();
  for (int b = 0; b < 256; ++b) ASSERT_EQ(twice[b], 2 * once[b]) << b;
  rt.histogram(buf.data(), 0, buf.out(), true);  // nothing added
  EXPECT_EQ(buf.result(), twice);
  rt.histogram(nullptr, 0, buf.out());  // overwritten with zeros
  EXPECT_EQ(buf.result(), std::vector<std::uint32_t>(256, 0));
  // Accumulating floats onto counts that are not zero.
  std::vector<float> f = {0.25f, 0.25f, -3.0f, 0.75f};
  Buffers<float> fb(f, 1, 4);
  fb.fill_counts(kPoison);
  rt.histogram_even(fb.data(), f.size(), 4, 0.0f, 1.0f, fb.out());
  rt.histogram_even(fb.data(), f.size(), 4, 0.0f, 1.0f, fb.out(), true);
  EXPECT_EQ(fb.result(), (std::vector<std::uint32_t>{0, 4, 0, 2}));
}

TEST(HistogramGpu, EvenBinsOfEveryTypeWithEdgesNanAndOutOfRange) {
  REQUIRE_GPU();
  Runtime rt(no_database());
  std::mt19937_64 rng(21);
  for (std::size_t n : {1ul, 5ul, 1001ul, (1ul << 20) + 3}) {
    for (std::size_t offset : {0ul, 1ul, 3ul}) {
      // u8: 7 bins over [10, 200)
      {
        std::vector<std::uint8_t> h(n);
        for (auto& x : h) x = static_cast<std::uint8_t>(rng());
        for (std::size_t i = 0; i < std::min<std::size_t>(n, 8); ++i)
          h[i] = std::vector<std::uint8_t>{10, 199, 200, 9, 0, 255, 37, 64}[i];
        Buffers<std::uint8_t> buf(h, offset, 7);
        rt.histogram_even(buf.data(), n, 7, std::uint8_t(10), std::uint8_t(200), buf.out());
        ASSERT_EQ(buf.result(),
                  expected(h, 7, [](std::uint8_t s) { return bin_of((long long)s, 10, 200, 7); }))
            << "u8 n=" << n << " offset=" << offset;
      }
      // u16: 1000 bins over [100, 60000)
      {
        std::vector<std::uint16_t> h(n);
        for (auto& x : h) x = static_cast<std::uint16_t>(rng());
        for (std::size_t i = 0; i < std::min<std::size_t>(n, 6); ++i)
          h[i] = std::vector<std::uint16_t>{100, 159, 160, 59999, 60000, 99}[i];
        Buffers<std::uint16_t> buf(h, offset, 1000);
        rt.histogram_even(buf.data(), n, 1000, std::uint16_t(100), std::uint16_t(60000), buf.out());
        ASSERT_EQ(buf.result(),
                  expected(h, 1000,
                           [](std::uint16_t s) { return bin_of((long long)s, 100, 60000, 1000); }))
            << "u16 n=" << n << " offset=" << offset;
      }
      // i32: 4096 bins over the widest range, and 3 bins over a narrow one
      for (auto [lo, hi, bins] : {std::tuple{std::numeric_limits<std::int32_t>::min(),
                                             std::numeric_limits<std::int32_t>::max(), 4096},
                                  std::tuple{-7, 11, 3}}) {
        std::vector<std::int32_t> h(n);
        for (auto& x : h) x = bins == 3 ? static_cast<int>(rng() % 24) - 10 : (int)rng();
        for (std::size_t i = 0; i < std::min<std::size_t>(n, 4); ++i)
          h[i] = std::vector<std::int32_t>{lo, hi, hi - 1, 0}[i];
        Buffers<std::int32_t> buf(h, offset, bins);
        rt.histogram_even(buf.data(), n, bins, lo, hi, buf.out());
        ASSERT_EQ(
            buf.result(),
            expected(h, bins, [&](std::int32_t s) { return bin_of((long long)s, lo, hi, bins); }))
            << "i32 n=" << n << " offset=" << offset << " bins=" << bins;
      }
      // f32: 1024 bins over [-1, 1) and 3 over [0.1, 0.7): edges, NaN, infinities, the float
      // just below upper (which rounds up to the top edge), -0.
      for (auto [lo, hi, bins] : {std::tuple{-1.0f, 1.0f, 1024}, std::tuple{0.1f, 0.7f, 3}}) {
        std::vector<float> h(n);
        std::uniform_real_distribution<float> dist(lo - 0.2f, hi + 0.2f);
        for (auto& x : h) x = dist(rng);
        const float inf = std::numeric_limits<float>::infinity();
        const std::vector<float> special = {
            lo,    std::nextafter(hi, lo), hi,   std::nanf(""),         -inf, inf,
            -0.0f, lo + (hi - lo) / bins,  0.5f, std::nextafter(lo, hi)};
        for (std::size_t i = 0; i < std::min(n, special.size()); ++i) h[i] = special[i];
        Buffers<float> buf(h, offset, bins);
        rt.histogram_even(buf.data(), n, bins, lo, hi, buf.out());
        ASSERT_EQ(buf.result(), expected(h, bins, [&](float s) { return bin_of(s, lo, hi, bins); }))
            << "f32 n=" << n << " offset=" << offset << " bins=" << bins;
      }
    }
  }
}

TEST(HistogramGpu, MoreThanTwoToThe32Samples) {
  REQUIRE_GPU();
  const std::size_t n = (1ul << 32) + 4097;
  std::size_t free_bytes = 0, total = 0;
  check(driver().cuMemGetInfo(&free_bytes, &total), "cuMemGetInfo");
  if (free_bytes < n + (1ul << 30)) GTEST_SKIP() << "needs " << n << " bytes of device memory";
  Runtime rt(no_database());
  detail::DeviceBuffer data(n + 16), counts(256 * 4);
  check(driver().cuMemsetD8Async(data.get(), 7, n + 16, nullptr), "cuMemsetD8Async");
  const std::uint8_t ends[] = {1, 2, 3};
  check(driver().cuMemcpyHtoD(data.get() + 3, ends, 3), "cuMemcpyHtoD");                // the head
  check(driver().cuMemcpyHtoD(data.get() + n, ends, 3), "cuMemcpyHtoD");                // the tail
  check(driver().cuMemcpyHtoD(data.get() + 3 + (1ul << 32), ends, 1), "cuMemcpyHtoD");  // > 2^32
  rt.histogram(data.as<const std::uint8_t>(3), n, counts.as<std::uint32_t>());
  check(driver().cuCtxSynchronize(), "sync");
  std::vector<std::uint32_t> h(256);
  check(driver().cuMemcpyDtoH(h.data(), counts.get(), 1024), "cuMemcpyDtoH");
  // Samples [3, 3 + n): bytes 1, 2, 3 at the start, byte 1 at 2^32, bytes 1, 2, 3 ending at n+3.
  std::vector<std::uint32_t> want(256, 0);
  want[1] = 3, want[2] = 2, want[3] = 2;
  want[7] = static_cast<std::uint32_t>(n - 7);  // modulo 2^32
  EXPECT_EQ(h, want);
}

TEST(HistogramGpu, InvalidArgumentsAreRejectedBeforeLaunch) {
  REQUIRE_GPU();
  Runtime rt(no_database());
  detail::DeviceBuffer a(64);
  EXPECT_THROW(rt.histogram(nullptr, 4, a.as<std::uint32_t>()), Error);
  EXPECT_THROW(rt.histogram(a.as<std::uint8_t>(), 4, nullptr), Error);
  EXPECT_THROW(rt.histogram_even(a.as<float>(), 4, 0, 0.0f, 1.0f, a.as<std::uint32_t>()), Error);
  EXPECT_THROW(rt.histogram_even(a.as<std::int32_t>(), 4, 10, 5, 5, a.as<std::uint32_t>()), Error);
  check(driver().cuCtxSynchronize(), "sync");  // nothing was launched that could have failed
}

// Every candidate of a random sample of the space is verified by the tuner on three input
// classes: each is correct and timed, or set aside after compiling; none computes a wrong count or
// fails to launch. Then the runtime reads the best back and counts correctly with it.
TEST(HistogramGpu, TuningRunsIntoATemporaryDatabase) {
  REQUIRE_GPU();
  testing::TempDir dir;
  const std::string path = dir.file("tune.db");
  const Family& family = find_family("histogram");
  struct Case {
    Problem problem;
    std::size_t evals;
  };
  const std::vector<Case> cases = {
      {histogram_problem(HistogramDtype::kU8, (1 << 20) + 3, 256, 1), 60},
      {histogram_problem(HistogramDtype::kU8, (1 << 18) + 1, 100, 16), 20},
      {histogram_problem(HistogramDtype::kU16, (1 << 18) + 1, 1024, 2), 20},
      {histogram_problem(HistogramDtype::kI32, (1 << 18) + 1, 1000, 4), 20},
      {histogram_problem(HistogramDtype::kF32, (1 << 18) + 1, 4096, 8), 25}};
  {
    Database db(path);
    for (const Case& k : cases) {
      TuneOptions options;
      options.strategy = "random";
      options.max_evals = k.evals;
      options.timing.repeats = 3;
      options.timing.warmup = 1;
      options.progress = false;
      TuneSummary s = tune(db, held_device, family, k.problem, options);
      EXPECT_EQ(s.evaluated, k.evals) << k.problem.key() << ": " << s.stop_reason;
      ResultFilter f;
      f.problem = k.problem.key();
      for (const auto& r : db.results(f))
        EXPECT_TRUE(r.status == "ok" || r.status == "invalid")
            << k.problem.key() << " " << r.config << ": " << r.status << " " << r.message;
      EXPECT_TRUE(s.best) << k.problem.key();
    }
  }
  Options o;
  o.database = path;
  Runtime rt(o);
  const Problem& p = cases[0].problem;
  EXPECT_EQ(rt.explain("histogram", p.key()).step, LookupStep::kExact);
  const std::size_t n = (1 << 20) + 3;
  auto host = random_bytes(n, 77);
  Buffers<std::uint8_t> buf(host, 1, 256);  // one byte in: the tuned alignment class
  rt.histogram(buf.data(), n, buf.out());
  EXPECT_EQ(buf.result(), expected(host, 256, [](std::uint8_t s) { return (long long)s; }));
}

}  // namespace
}  // namespace ktune

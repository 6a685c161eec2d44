// GPU tests of the runtime as applications use it: many host threads at once, tune-on-miss, and
// the tuner giving back the device memory it used. Skipped without a device.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "../host/temp_dir.hpp"
#include "db/database.hpp"
#include "families/elementwise/elementwise.hpp"
#include "families/family.hpp"
#include "families/histogram/histogram.hpp"
#include "families/registry.hpp"
#include "gpu_util.hpp"
#include "ktune/ktune.hpp"
#include "ktune/tune_on_miss.hpp"
#include "platform/device.hpp"
#include "platform/kernel_cache.hpp"
#include "platform/nvrtc.hpp"
#include "tuner/tuner.hpp"

namespace ktune {
namespace {

using detail::check;
using detail::driver;
using testing::download;
using testing::random_vector;
using testing::upload;

// A new host thread has no current context; an application's thread gets one from the CUDA
// runtime. The tests' threads take the primary context that the test holds.
void use_context_of(CUcontext context) {
  check(driver().cuCtxSetCurrent(context), "cuCtxSetCurrent");
}
CUcontext current_context() {
  CUcontext c = nullptr;
  check(driver().cuCtxGetCurrent(&c), "cuCtxGetCurrent");
  return c;
}

// One thread's work: a GEMM, a byte histogram and a copy of sizes of its own, on its own stream,
// each checked against the host after every round. Returns the number of wrong results.
int thread_rounds(Runtime& rt, int t, int rounds) {
  int wrong = 0;
  detail::Stream stream;
  // GEMM m x n x k, column-major, alpha = 1, beta = 0.
  const std::int64_t m = 61 + 8 * t, n = 47 + 5 * t, k = 33 + 3 * t;
  auto ha = random_vector<float>(std::size_t(m * k), 100 + t);
  auto hb = random_vector<float>(std::size_t(k * n), 200 + t);
  std::vector<double> ref(std::size_t(m * n), 0.0);
  for (std::int64_t j = 0; j < n; ++j)
    for (std::int64_t p = 0; p < k; ++p)
      for (std::int64_t i = 0; i < m; ++i)
        ref[std::size_t(i + j * m)] +=
            double(ha[std::size_t(i + p * m)]) * hb[std::size_t(p + j * k)];
  detail::DeviceBuffer da(ha.size() * 4), db(hb.size() * 4), dc(ref.size() * 4);
  upload(da.get(), ha);
  upload(db.get(), hb);
  // Histogram of bytes.
  const std::size_t hn = 100003 + 977 * std::size_t(t);
  std::vector<std::uint8_t> bytes(hn);
  for (std::size_t i = 0; i < hn; ++i)
    bytes[i] = static_cast<std::uint8_t>((i * 2654435761u) >> 13);
  std::vector<std::uint32_t> counts_ref(256, 0);
  for (auto b : bytes) ++counts_ref[b];
  detail::DeviceBuffer dbytes(hn), dcounts(256 * 4);
  upload(dbytes.get(), bytes);
  // Copy.
  const std::size_t cn = 50021 + 313 * std::size_t(t);
  auto src = random_vector<float>(cn, 300 + t);
  detail::DeviceBuffer dsrc(cn * 4), ddst(cn * 4);
  upload(dsrc.get(), src);

  for (int r = 0; r < rounds; ++r) {
    check(driver().cuMemsetD32Async(dc.get(), 0x7fc00000u, ref.size(), stream.get()), "memset");
    check(driver().cuMemsetD32Async(ddst.get(), 0, cn, stream.get()), "memset");
    rt.gemm(Layout::kColMajor, Op::kN, Op::kN, m, n, k, 1.0f, da.as<const float>(), m,
            db.as<const float>(), k, 0.0f, dc.as<float>(), m, stream.get());
    rt.histogram(dbytes.as<const std::uint8_t>(), hn, dcounts.as<std::uint32_t>(), false,
                 stream.get());
    rt.copy(ddst.as<float>(), dsrc.as<const float>(), cn, stream.get());
    stream.synchronize();
    auto c = download<float>(dc.get(), ref.size());
    for (std::size_t i = 0; i < ref.size(); ++i)
      if (!(std::abs(c[i] - ref[i]) <= 1e-4 * (1 + std::abs(ref[i])) * std::sqrt(double(k)))) {
        ++wrong;
        break;
      }
    if (download<std::uint32_t>(dcounts.get(), 256) != counts_ref) ++wrong;
    if (download<float>(ddst.get(), cn) != src) ++wrong;
  }
  return wrong;
}

// Even bins of float samples (with NaN and out-of-range ones) and a double GEMM, checked.
int more_families(Runtime& rt) {
  int wrong = 0;
  const std::size_t n = (1 << 20) + 7;
  const int bins = 1024;
  auto samples = random_vector<float>(n, 41);  // [-1, 1): half of them below lower = 0
  samples[5] = std::nanf("");
  std::vector<std::uint32_t> ref(bins, 0);
  for (float v : samples)
    if (v >= 0.0f && v < 1.0f) {
      // The kernels' binning: (v - lower) * (bins / (upper - lower)), as CUB does it.
      const int b = std::min(bins - 1, static_cast<int>((v - 0.0f) * (float(bins) / 1.0f)));
      ++ref[std::size_t(b)];
    }
  detail::DeviceBuffer ds(n * 4), dc(bins * 4);
  upload(ds.get(), samples);
  rt.histogram_even(ds.as<const float>(), n, bins, 0.0f, 1.0f, dc.as<std::uint32_t>());
  testing::synchronize();
  if (download<std::uint32_t>(dc.get(), bins) != ref) ++wrong;

  const std::int64_t m = 129, nn = 97, k = 65;
  auto a = random_vector<double>(std::size_t(m * k), 51),
       b = random_vector<double>(std::size_t(k * nn), 52);
  detail::DeviceBuffer da(a.size() * 8), db(b.size() * 8), dd(std::size_t(m * nn) * 8);
  upload(da.get(), a);
  upload(db.get(), b);
  rt.gemm(Layout::kRowMajor, Op::kN, Op::kN, m, nn, k, 1.0, da.as<const double>(), k,
          db.as<const double>(), nn, 0.0, dd.as<double>(), nn);
  testing::synchronize();
  auto c = download<double>(dd.get(), std::size_t(m * nn));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < nn; ++j) {
      double r = 0;
      for (std::int64_t p = 0; p < k; ++p)
        r += a[std::size_t(i * k + p)] * b[std::size_t(p * nn + j)];
      if (std::abs(c[std::size_t(i * nn + j)] - r) > 1e-12 * k) {
        ++wrong;
        i = m;
        break;
      }
    }
  return wrong;
}

// Each family with its built-in default configuration (no database): the test that
// scripts/gpu-check.sh runs under compute-sanitizer's memcheck, racecheck and synccheck.
// Every entry point leaves the calling thread's current context as it found it: here, none.
TEST(RuntimeGpu, CallsLeaveTheThreadsContextAsTheyFoundIt) {
  KTUNE_REQUIRE_GPU();
  const auto& d = driver();
  constexpr std::size_t n = 4096;
  detail::DeviceBuffer src(n * sizeof(float)), dst(n * sizeof(float));
  upload(src.get(), random_vector<float>(n, 7));
  check(d.cuCtxSetCurrent(nullptr), "cuCtxSetCurrent");
  auto current = [&] {
    CUcontext c = reinterpret_cast<CUcontext>(std::uintptr_t{1});  // a failed read shows
    check(d.cuCtxGetCurrent(&c), "cuCtxGetCurrent");
    return c;
  };
  {
    Options o;
    o.use_database = false;
    Runtime rt(o);
    EXPECT_EQ(current(), nullptr) << "after the constructor";
    rt.copy(reinterpret_cast<float*>(dst.get()), reinterpret_cast<const float*>(src.get()), n);
    EXPECT_EQ(current(), nullptr) << "after copy";
  }
  EXPECT_EQ(current(), nullptr) << "after the destructor";
  check(d.cuCtxSetCurrent(ktune_held_device.context()), "cuCtxSetCurrent");
  testing::synchronize();
  EXPECT_EQ(download<float>(dst.get(), n), download<float>(src.get(), n));
}

TEST(RuntimeGpu, DefaultConfigurationsOfEachFamily) {
  KTUNE_REQUIRE_GPU();
  Options o;
  o.use_database = false;
  Runtime rt(o);
  EXPECT_EQ(thread_rounds(rt, 0, 1), 0);
  EXPECT_EQ(thread_rounds(rt, 5, 1), 0);
  EXPECT_EQ(more_families(rt), 0);
  // lda = 61 is no multiple of 4 floats: alignment class 1.
  EXPECT_EQ(rt.explain("gemm", "align=1;dtype=f32;k=33;m=61;n=47;op=nn").step, LookupStep::kCache);
}

// The same calls with the tuned configurations of the database in $KTUNE_DB (the GPU machine's
// tuning database): every problem answered by a tuned result of this GPU, not a default.
TEST(RuntimeGpu, TunedConfigurationsOfEachFamily) {
  KTUNE_REQUIRE_GPU();
  const char* path = std::getenv("KTUNE_DB");
  if (!path || !std::filesystem::exists(path))
    GTEST_SKIP() << "set KTUNE_DB to a tuning database to run the tuned configurations";
  Options o;
  o.database = path;
  Runtime rt(o);
  const std::vector<std::pair<std::string, std::string>> problems = {
      {"gemm", "align=1;dtype=f32;k=33;m=61;n=47;op=nn"},
      {"gemm", "align=2;dtype=f64;k=65;m=97;n=129;op=nn"},
      {"histogram", "align=16;bins=256;dtype=u8;n=100003"},
      {"histogram", "align=16;bins=1024;dtype=f32;n=1048583"},
      {"elementwise", "align=16;dtype=f32;n=50021;op=copy"}};
  // The answer comes from a result of this GPU: exact, nearest, or predicted from its winners.
  const std::string here = ktune::Device(0).info().identity();
  auto tuned_here = [&](const Choice& c) {
    return c.step == LookupStep::kExact || c.step == LookupStep::kNearest ||
           (c.step == LookupStep::kPredicted && c.device == here);
  };
  // A family with results of other GPUs only (the shipped H200 presets of histogram on an H100)
  // answers from the same architecture: nothing of this GPU to test for it. The shipped H100
  // presets hold GEMM alone.
  std::set<std::string> tuned_families;
  for (const auto& [family, problem] : problems)
    if (tuned_here(rt.explain(family, problem))) tuned_families.insert(family);
  if (tuned_families.empty())
    GTEST_SKIP() << path << " holds no tuned results of this GPU (run ktune tune first)";
  for (const auto& [family, problem] : problems) {
    if (!tuned_families.count(family)) {
      std::cout << "[ untuned  ] " << family << ": no result of this GPU in " << path << "\n";
      continue;
    }
    const Choice c = rt.explain(family, problem);
    EXPECT_TRUE(tuned_here(c)) << family << " " << problem << ": " << to_string(c.step);
    std::cout << "[ tuned    ] " << family << " " << problem << ": " << to_string(c.step) << " "
              << c.config << "\n";
  }
  EXPECT_EQ(thread_rounds(rt, 0, 1), 0);
  EXPECT_EQ(thread_rounds(rt, 5, 1), 0);
  EXPECT_EQ(more_families(rt), 0);
}

// 8 host threads share one Runtime over a new database, so their first calls race through the
// lookup, the compiles and the caches; then they keep calling. Every result is checked.
TEST(RuntimeGpu, EightThreadsCallGemmHistogramAndCopyConcurrently) {
  KTUNE_REQUIRE_GPU();
  ::ktune::testing::TempDir dir;
  Options o;
  o.database = dir.file("threads.db");
  Runtime rt(o);
  constexpr int kThreads = 8, kRounds = 25;
  std::vector<int> wrong(kThreads, -1);
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  const CUcontext context = current_context();
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        use_context_of(context);
        wrong[t] = thread_rounds(rt, t, kRounds);
      } catch (const std::exception& e) {
        errors[t] = e.what();
      }
    });
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_TRUE(errors[t].empty()) << "thread " << t << ": " << errors[t];
    EXPECT_EQ(wrong[t], 0) << "thread " << t;
  }
  std::cout << "[ threads  ] " << kThreads << " threads x " << kRounds
            << " rounds of gemm + histogram + copy, all checked; " << rt.compile_count()
            << " compiles\n";
}

// The kernel cache calls its binary store one thread at a time (a Database is one SQLite
// connection, whose transactions do not nest across threads): 8 threads storing and finding
// binaries at once through one cache never overlap in the store, and everything stored is found.
TEST(RuntimeGpu, TheKernelCacheCallsItsBinaryStoreOneThreadAtATime) {
  KTUNE_REQUIRE_GPU();
  class CountingStore final : public BinaryStore {
   public:
    std::optional<CachedBinary> find_binary(const std::string& key) override {
      Inside in(*this);
      std::lock_guard lock(map_mutex);
      auto it = stored.find(key);
      return it == stored.end() ? std::nullopt : std::optional<CachedBinary>(it->second);
    }
    void put_binary(const std::string& key, const std::string&, const CachedBinary& b) override {
      Inside in(*this);
      std::this_thread::sleep_for(std::chrono::microseconds(200));  // as long as a commit
      std::lock_guard lock(map_mutex);
      stored[key] = b;
    }
    bool accepts_binaries() const override { return true; }
    std::atomic<int> inside{0}, most{0};
    std::mutex map_mutex;
    std::map<std::string, CachedBinary> stored;

   private:
    struct Inside {
      CountingStore& s;
      explicit Inside(CountingStore& store) : s(store) {
        const int now = ++s.inside;
        int seen = s.most.load();
        while (now > seen && !s.most.compare_exchange_weak(seen, now)) {
        }
      }
      ~Inside() { --s.inside; }
    };
  } store;
  KernelCache cache(ktune_held_device, &store);
  CompileResult compiled;
  compiled.cubin = {1, 2, 3, 4};
  compiled.lowered_names = {"k"};
  compiled.resources.resize(1);
  compiled.resources[0].mangled_name = "k";
  CompileRequest request;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i) {
        const std::string key = std::to_string(t) + "-" + std::to_string(i);
        cache.store_binary(key, request, compiled);
        CompileResult back;
        EXPECT_TRUE(cache.find_binary(key, back)) << key;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(store.most.load(), 1);
  EXPECT_EQ(store.stored.size(), 400u);
}

// No lock is held across a compile or a launch: while one thread compiles a GEMM nobody has
// asked for yet (hundreds of milliseconds in NVRTC), another keeps launching copies unhindered.
TEST(RuntimeGpu, CallsProceedWhileAnotherThreadCompiles) {
  KTUNE_REQUIRE_GPU();
  ::ktune::testing::TempDir dir;
  Options o;
  o.database = dir.file("compile.db");
  Runtime rt(o);
  detail::Stream stream;
  constexpr std::size_t kN = 4096;
  detail::DeviceBuffer src(kN * 4), dst(kN * 4);
  rt.copy(dst.as<float>(), src.as<const float>(), kN, stream.get());  // resolved and loaded
  stream.synchronize();
  detail::DeviceBuffer a(64 * 64 * 8), b(64 * 64 * 8), c(64 * 64 * 8);
  std::atomic<bool> compiling{true};
  const std::uint64_t compiles_before = nvrtc_compile_calls();
  const auto t0 = std::chrono::steady_clock::now();
  double compile_ms = 0;
  const CUcontext context = current_context();
  std::string compiler_error;
  std::thread compiler([&] {
    try {
      use_context_of(context);
      detail::Stream s;
      rt.gemm(Layout::kColMajor, Op::kN, Op::kT, 64, 64, 64, 1.0, a.as<const double>(), 64,
              b.as<const double>(), 64, 0.0, c.as<double>(), 64, s.get());
      s.synchronize();
    } catch (const std::exception& e) {
      compiler_error = e.what();
    }
    compile_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    compiling = false;
  });
  double worst_ms = 0;
  std::size_t calls = 0;
  while (compiling) {
    const auto c0 = std::chrono::steady_clock::now();
    rt.copy(dst.as<float>(), src.as<const float>(), kN, stream.get());
    worst_ms = std::max(
        worst_ms,
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - c0).count());
    if (++calls % 256 == 0) stream.synchronize();
  }
  compiler.join();
  stream.synchronize();
  ASSERT_TRUE(compiler_error.empty()) << compiler_error;
  EXPECT_GE(nvrtc_compile_calls() - compiles_before, 1u) << "the GEMM did not compile";
  std::cout << "[ no lock  ] " << calls << " copies during a " << compile_ms
            << " ms GEMM first call (compile); slowest copy call " << worst_ms << " ms\n";
  EXPECT_GT(calls, 100u);
  EXPECT_LT(worst_ms, compile_ms / 4) << "copies waited on the other thread's compile";
}

// Tune-on-miss: the first call of an unseen problem tunes it within the budget and stores it;
// the call's result is right; another runtime (another process, as far as the database goes)
// then finds it exactly, and a second tune-on-miss runtime does not tune it again.
TEST(RuntimeGpu, TuneOnMissTunesStoresAndUsesTheResult) {
  KTUNE_REQUIRE_GPU();
  ::ktune::testing::TempDir dir;
  const std::string path = dir.file("miss.db");
  constexpr std::size_t kN = 333333;
  auto host = random_vector<float>(kN, 9);
  detail::DeviceBuffer src(kN * 4), dst(kN * 4);
  upload(src.get(), host);
  const std::string key = elementwise_problem(ElementwiseOp::kCopy, "f32", kN, 16).key();
  Options o;
  o.database = path;
  o.tune_on_miss = make_miss_tuner({.max_evals = 12, .max_seconds = 30});
  std::size_t rows_after_first = 0;
  {
    Runtime rt(o);
    EXPECT_NE(rt.explain("elementwise", key).step, LookupStep::kExact);
    rt.copy(dst.as<float>(), src.as<const float>(), kN);
    testing::synchronize();
    EXPECT_EQ(download<float>(dst.get(), kN), host);
    Database db(path, Database::Mode::kReadOnly);
    ResultFilter f;
    f.family = "elementwise";
    f.problem = key;
    rows_after_first = db.results(f).size();
    EXPECT_GE(rows_after_first, 1u);
    EXPECT_LE(rows_after_first, 12u);
  }
  {
    Options plain;
    plain.database = path;
    Runtime rt(plain);
    EXPECT_EQ(rt.explain("elementwise", key).step, LookupStep::kExact);
  }
  {
    Runtime rt(o);
    rt.copy(dst.as<float>(), src.as<const float>(), kN);
    testing::synchronize();
    Database db(path, Database::Mode::kReadOnly);
    ResultFilter f;
    f.family = "elementwise";
    f.problem = key;
    EXPECT_EQ(db.results(f).size(), rows_after_first) << "tuned again";
  }
  Options no_db;
  no_db.use_database = false;
  no_db.tune_on_miss = o.tune_on_miss;
  EXPECT_THROW(Runtime{no_db}, Error);
}

// A MissTuner that waits for the test's go before it runs the real tuner: a call that waited for
// the tuning would never return while the tuner is held.
class HeldTuner final : public MissTuner {
 public:
  explicit HeldTuner(std::shared_ptr<MissTuner> real) : real_(std::move(real)) {}
  void tune(int device, const std::string& database, const std::string& family,
            const std::string& problem) override {
    started = true;
    std::unique_lock lock(mutex_);
    released_.wait_for(lock, std::chrono::seconds(60), [&] { return go_; });
    lock.unlock();
    real_->tune(device, database, family, problem);
    ++runs;
  }
  void release() {
    {
      std::lock_guard lock(mutex_);
      go_ = true;
    }
    released_.notify_all();
  }
  std::atomic<bool> started{false};
  std::atomic<int> runs{0};

 private:
  std::shared_ptr<MissTuner> real_;
  std::mutex mutex_;
  std::condition_variable released_;
  bool go_ = false;
};

// Tuning in the background: the call that misses returns while the tuner is held (answered by
// the lookup chain, right), the problem is tuned once, and later calls run the tuned
// configuration (explain: the runtime's cache holding the exact result), still right.
TEST(RuntimeGpu, TuneInTheBackgroundAnswersAtOnceAndSwitchesWhenStored) {
  KTUNE_REQUIRE_GPU();
  ::ktune::testing::TempDir dir;
  constexpr std::size_t kN = 444444;
  auto host = random_vector<float>(kN, 10);
  detail::DeviceBuffer src(kN * 4), dst(kN * 4);
  upload(src.get(), host);
  const std::string key = elementwise_problem(ElementwiseOp::kCopy, "f32", kN, 16).key();
  auto held = std::make_shared<HeldTuner>(make_miss_tuner({.max_evals = 10, .max_seconds = 30}));
  Options o;
  o.database = dir.file("bg.db");
  o.tune_on_miss = held;
  o.tune_in_background = true;
  Runtime rt(o);
  const Choice before = rt.explain("elementwise", key);
  EXPECT_NE(before.step, LookupStep::kExact);
  rt.copy(dst.as<float>(), src.as<const float>(), kN);  // returns with the tuner still held
  testing::synchronize();
  EXPECT_EQ(download<float>(dst.get(), kN), host);
  EXPECT_EQ(held->runs.load(), 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!held->started && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(held->started.load()) << "the miss was not queued";
  EXPECT_EQ(rt.explain("elementwise", key).step, LookupStep::kCache);
  EXPECT_EQ(rt.explain("elementwise", key).config, before.config);  // the chain's answer
  held->release();
  rt.wait_for_tuning();
  EXPECT_EQ(held->runs.load(), 1);
  const Choice after = rt.explain("elementwise", key);
  EXPECT_EQ(after.step, LookupStep::kCache);
  {
    Options plain;
    plain.database = o.database;
    Runtime other(plain);
    const Choice stored = other.explain("elementwise", key);
    EXPECT_EQ(stored.step, LookupStep::kExact);
    EXPECT_EQ(after.config, stored.config) << "the runtime did not switch to the tuned kernel";
  }
  std::vector<float> zeros(kN, 0.0f);
  upload(dst.get(), zeros);
  rt.copy(dst.as<float>(), src.as<const float>(), kN);  // through the hot map's new entry
  testing::synchronize();
  EXPECT_EQ(download<float>(dst.get(), kN), host);
  rt.copy(dst.as<float>(), src.as<const float>(), kN);
  rt.wait_for_tuning();
  EXPECT_EQ(held->runs.load(), 1) << "tuned twice";
  // Background tuning takes a tuner.
  Options none;
  none.use_database = false;
  none.tune_in_background = true;
  EXPECT_THROW(Runtime{none}, Error);
}

// The tuner gives back the device memory it uses: free memory after each tuning run is what it
// was after the first. KTUNE_STRESS_CANDIDATES sets the candidates in all (the reliability run
// uses 1000), in runs of 100 over one histogram problem, each resuming where the last stopped.
TEST(RuntimeGpu, TuningRunsGiveBackDeviceMemory) {
  KTUNE_REQUIRE_GPU();
  const char* env = std::getenv("KTUNE_STRESS_CANDIDATES");
  const std::size_t total = env ? std::strtoull(env, nullptr, 10) : 200;
  constexpr std::size_t kPerRun = 100;
  ::ktune::testing::TempDir dir;
  Database db(dir.file("memory.db"));
  const Family& family = find_family("histogram");
  const Problem problem = histogram_problem(HistogramDtype::kU8, 1 << 20, 256, 16);
  auto free_bytes = [] {
    testing::synchronize();
    std::size_t free = 0, all = 0;
    check(driver().cuMemGetInfo(&free, &all), "cuMemGetInfo");
    return free;
  };
  TuneOptions options;
  options.strategy = "random";
  options.max_evals = kPerRun;
  options.timing.repeats = 3;
  options.timing.warmup = 1;
  options.progress = false;
  std::size_t measured = 0, baseline = 0;
  double worst_drop_mib = 0;
  for (std::size_t run = 0; measured < total; ++run) {
    options.seed = run + 1;
    TuneSummary s = tune(db, ktune_held_device, family, problem, options);
    ASSERT_EQ(s.evaluated, kPerRun) << s.stop_reason;
    measured += s.evaluated;
    const std::size_t now = free_bytes();
    if (run == 0) baseline = now;  // the first run's one-time allocations (module pools) settle
    worst_drop_mib = std::max(worst_drop_mib, (double(baseline) - double(now)) / (1 << 20));
  }
  std::cout << "[ memory   ] " << measured << " candidates in runs of " << kPerRun
            << ": free device memory after the first run " << baseline / (1 << 20)
            << " MiB, largest drop after a later run " << worst_drop_mib << " MiB\n";
  EXPECT_LE(worst_drop_mib, 2.0);
}

// A linked application never crashes on a bad database: a file of a schema version ktune never
// wrote, another application's file, a FIFO. The Runtime warns, answers from the shipped results
// and the defaults, computes right, and leaves the file as it was.
TEST(RuntimeGpu, ABadDatabaseIsWarnedAboutAndLeftAloneAndCallsStillWork) {
  KTUNE_REQUIRE_GPU();
  testing::TempDir dir;
  const std::string negative = dir.file("negative.db"), fifo = dir.file("fifo.db");
  { Database db(negative); }
  {
    sqlite3* h = nullptr;
    ASSERT_EQ(sqlite3_open(negative.c_str(), &h), SQLITE_OK);
    sqlite3_exec(h, "PRAGMA user_version=-1000000", nullptr, nullptr, nullptr);
    sqlite3_close(h);
  }
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  auto bytes = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  const std::string before = bytes(negative);
  const std::size_t n = 1 << 20;
  const auto host = random_vector<float>(n, 5);
  detail::DeviceBuffer src(n * 4), dst(n * 4);
  upload(src.get(), host);
  for (const std::string& path : {negative, fifo}) {
    std::vector<std::string> warnings;
    Options options;
    options.database = path;
    options.on_warning = [&](const std::string& w) { warnings.push_back(w); };
    Runtime rt(options);
    ASSERT_EQ(warnings.size(), 1u) << path;
    EXPECT_NE(warnings[0].find(path), std::string::npos) << warnings[0];
    EXPECT_NE(rt.database_path().find("shipped"), std::string::npos) << rt.database_path();
    rt.copy(dst.as<float>(), src.as<const float>(), n);
    testing::synchronize();
    EXPECT_EQ(download<float>(dst.get(), n), host);
  }
  EXPECT_EQ(bytes(negative), before);
}

TEST(RuntimeGpu, AMovedFromRuntimeThrowsInsteadOfCrashing) {
  KTUNE_REQUIRE_GPU();
  Options options;
  options.use_database = false;
  Runtime a(options);
  Runtime b(std::move(a));
  detail::DeviceBuffer buffer(1024);
  try {
    a.copy(buffer.as<float>(), buffer.as<const float>(), 16);  // NOLINT(bugprone-use-after-move)
    FAIL() << "a moved-from Runtime ran a copy";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("moved from"), std::string::npos) << e.what();
  }
  EXPECT_THROW(a.explain("elementwise", "align=16;dtype=f32;n=16;op=copy"), Error);
  EXPECT_THROW(a.compile_count(), Error);
  b.copy(buffer.as<float>(), buffer.as<const float>(), 16);  // the new owner works
  testing::synchronize();
}

}  // namespace
}  // namespace ktune

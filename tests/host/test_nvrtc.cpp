// Host tests: NVRTC compiles for sm_90 without a GPU, lowered names, ptxas report, errors, threads.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iostream>
#include <thread>

#include "families/elementwise/elementwise.hpp"
#include "families/family.hpp"
#include "families/registry.hpp"
#include "ktune/error.hpp"
#include "platform/nvrtc.hpp"
#include "tuner/space.hpp"

namespace ktune {
namespace {

const char* kSource = R"(
namespace demo {
template <int N> __global__ void scale(float* p) {
  __shared__ float tile[N];
  tile[threadIdx.x % N] = p[threadIdx.x];
  __syncthreads();
  p[threadIdx.x] = tile[(threadIdx.x + 1) % N] * N;
}
}
)";

TEST(Nvrtc, CompilesForExplicitArchWithoutGpuAndLowersNames) {
  CompileRequest r;
  r.source_name = "demo.cu";
  r.source = kSource;
  r.name_expressions = {"demo::scale<64>", "demo::scale<128>"};
  r.arch = "sm_90";
  CompileResult c = compile(r);
  EXPECT_GT(c.cubin.size(), 100u);
  ASSERT_EQ(c.lowered_names.size(), 2u);
  EXPECT_EQ(c.lowered_names[0], "_ZN4demo5scaleILi64EEEvPf");
  ASSERT_EQ(c.resources.size(), 2u);
  EXPECT_GT(c.resources[0].registers, 0);
  EXPECT_EQ(c.resources[0].smem_static, 64 * 4);
  EXPECT_EQ(c.resources[1].smem_static, 128 * 4);
  EXPECT_FALSE(c.resources[0].spills());
}

TEST(Nvrtc, CompileErrorCarriesLogAndOptions) {
  CompileRequest r;
  r.source_name = "broken.cu";
  r.source = "__global__ void k() { this_is_not_declared = 1; }";
  r.name_expressions = {"k"};
  try {
    compile(r);
    FAIL() << "compiled a broken source";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kCompile);
    EXPECT_NE(e.details().find("this_is_not_declared"), std::string::npos) << e.details();
    EXPECT_NE(e.details().find("--gpu-architecture=sm_90"), std::string::npos) << e.details();
  }
}

TEST(Nvrtc, StaticAssertRejectsImpossibleTemplateCombination) {
  const Family& f = find_family("elementwise");
  CompileRequest r = f.compile_request(
      {{"BLOCK", 256}, {"GRID", 8}, {"STRIDE", 1}, {"UNROLL", 4}, {"VEC", 4}, {"CACHE", 0}},
      Problem::parse("elementwise", "align=16;dtype=f32;n=100;op=copy"), "sm_90");
  r.name_expressions = {"ktune::elementwise_kernel<0, double, 4, 1, 1, 0>"};  // 32-byte access
  try {
    compile(r);
    FAIL() << "a 32-byte vector access compiled";
  } catch (const Error& e) {
    EXPECT_NE(e.details().find("at most 16 bytes"), std::string::npos) << e.details();
  }
}

TEST(Nvrtc, SafeFromSeveralThreads) {
  std::vector<std::future<CompileResult>> results;
  for (int i = 0; i < 4; ++i)
    results.push_back(std::async(std::launch::async, [i] {
      CompileRequest r;
      r.source_name = "demo.cu";
      r.source = kSource;
      r.name_expressions = {"demo::scale<" + std::to_string(32 << i) + ">"};
      return compile(r);
    }));
  for (int i = 0; i < 4; ++i) {
    CompileResult c = results[i].get();
    EXPECT_EQ(c.resources[0].smem_static, (32 << i) * 4);
  }
}

// Resident set of this process in bytes (/proc/self/statm: pages).
std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * 4096;
}

// Host memory stays flat over many compiles of the families' kernels: nothing of a program,
// its log or its CUBIN outlives compile(). KTUNE_STRESS_COMPILES sets the count (the reliability
// run uses 5000); the first fifth warms NVRTC's own caches, the growth is measured after that.
TEST(Nvrtc, HostMemoryStaysFlatOverManyCompiles) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's quarantine keeps freed memory resident; in this build "
                  "LeakSanitizer checks for leaks instead";
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "AddressSanitizer's quarantine keeps freed memory resident; in this build "
                  "LeakSanitizer checks for leaks instead";
#endif
#endif
  const char* env = std::getenv("KTUNE_STRESS_COMPILES");
  const std::size_t count = env ? std::strtoull(env, nullptr, 10) : 60;
  ASSERT_GE(count, 10u);
  const Family& family = find_family("elementwise");
  const Problem problem = elementwise_problem(ElementwiseOp::kAdd, "f32", 1 << 20, 16);
  SearchSpace space(family, problem, DeviceLimits::for_arch(9, 0));
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::atomic<std::size_t> next{0};
  std::size_t after_warmup = 0;
  auto worker = [&](std::size_t until) {
    for (std::size_t i; (i = next++) < until;) {
      CompileResult c =
          compile(family.compile_request(space.at(i % space.size()), problem, "sm_90"));
      ASSERT_FALSE(c.cubin.empty());
    }
  };
  for (std::size_t until : {count / 5, count}) {
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) pool.emplace_back(worker, until);
    for (auto& t : pool) t.join();
    next = until;
    if (until == count / 5) after_warmup = resident_bytes();
  }
  const std::size_t at_end = resident_bytes();
  const double growth_mib =
      (static_cast<double>(at_end) - static_cast<double>(after_warmup)) / (1 << 20);
  std::cout << "[ stress   ] " << count << " NVRTC compiles on " << threads << " threads: resident "
            << after_warmup / (1 << 20) << " MiB after " << count / 5 << ", " << at_end / (1 << 20)
            << " MiB after " << count << " (growth " << growth_mib << " MiB)\n";
  EXPECT_LT(growth_mib, 16.0);
}

TEST(PtxasLog, ParsesRegistersSpillsSharedMemory) {
  const char* log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function '_Z1av' for 'sm_90'\n"
      "ptxas info    : Function properties for _Z1av\n"
      "ptxas         .     16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 16384 bytes smem, 400 bytes cmem[0]\n"
      "ptxas info    : Compiling entry function '_Z1bv' for 'sm_90'\n"
      "ptxas info    : Function properties for _Z1bv\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 32 registers, used 0 barriers, 380 bytes cmem[0]\n";
  auto r = parse_ptxas_log(log);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].mangled_name, "_Z1av");
  EXPECT_EQ(r[0].registers, 255);
  EXPECT_EQ(r[0].barriers, 1);
  EXPECT_EQ(r[0].smem_static, 16384);
  EXPECT_EQ(r[0].stack_frame, 16);
  EXPECT_EQ(r[0].spill_stores, 8);
  EXPECT_EQ(r[0].spill_loads, 12);
  EXPECT_TRUE(r[0].spills());
  EXPECT_EQ(r[1].registers, 32);
  EXPECT_EQ(r[1].smem_static, 0);
  EXPECT_FALSE(r[1].spills());
}

TEST(CacheKey, ChangesWithEveryInput) {
  CompileRequest r;
  r.source = kSource;
  r.name_expressions = {"demo::scale<64>"};
  std::string base = compile_cache_key(r);
  CompileRequest a = r;
  a.arch = "sm_80";
  CompileRequest b = r;
  b.options = {"-DX"};
  CompileRequest c = r;
  c.name_expressions = {"demo::scale<128>"};
  CompileRequest d = r;
  d.source += " ";
  for (const auto& x : {a, b, c, d}) EXPECT_NE(compile_cache_key(x), base);
  EXPECT_EQ(compile_cache_key(r), base);
  CompileRequest e = d;
  e.headers = {{"common.cuh", "// common"}};
  EXPECT_NE(compile_cache_key(e), compile_cache_key(d));
}

// A request that carries the hash of its texts has the key of the same request without it.
TEST(CacheKey, IsTheSameWithTheSourcesHashGivenOrNot) {
  CompileRequest r;
  r.source = kSource;
  r.headers = {{"common.cuh", "// common"}};
  r.name_expressions = {"demo::scale<64>"};
  const std::string texts = compile_cache_key(r);
  r.sources_hash = compile_sources_hash(r.source, r.headers);
  EXPECT_EQ(compile_cache_key(r), texts);
  r.sources_hash = compile_sources_hash(r.source + " ", r.headers);
  EXPECT_NE(compile_cache_key(r), texts);
  // A family's requests carry it, for every built-in family.
  for (const Family* family : builtin_families()) {
    const Problem p = family->default_problems().front();
    const DeviceLimits limits = DeviceLimits::for_arch(9, 0);
    CompileRequest made = family->compile_request(family->default_config(p, limits), p, "sm_90");
    ASSERT_FALSE(made.sources_hash.empty()) << family->name();
    const std::string key = compile_cache_key(made);
    made.sources_hash.clear();
    EXPECT_EQ(compile_cache_key(made), key) << family->name();
  }
}

}  // namespace
}  // namespace ktune

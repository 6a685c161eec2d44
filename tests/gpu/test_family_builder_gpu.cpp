// GPU test: a family described in C++ (ktune::FamilyBuilder, source in memory) is tuned in this
// process, found by the runtime's lookup chain, launched through Runtime::launch, and computes
// right.
#include <gtest/gtest.h>

#include <cmath>

#include "../host/temp_dir.hpp"
#include "db/database.hpp"
#include "families/registry.hpp"
#include "gpu_util.hpp"
#include "ktune/family_builder.hpp"
#include "ktune/ktune.hpp"
#include "platform/device.hpp"
#include "tuner/tuner.hpp"

namespace ktune {
namespace {

constexpr const char* kSource = R"cuda(
template <int BLOCK, int PER_THREAD>
__global__ void axpy(float* y, const float* x, unsigned long long n, float a) {
  unsigned long long i = ((unsigned long long)blockIdx.x * BLOCK + threadIdx.x) * PER_THREAD;
#pragma unroll
  for (int j = 0; j < PER_THREAD; ++j)
    if (i + j < n) y[i + j] = a * x[i + j] + y[i + j];
}
__global__ void axpy_reference(float* y, const float* x, unsigned long long n, float a) {
  for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    y[i] = a * x[i] + y[i];
}
)cuda";

FamilyBuilder axpy_family() {
  FamilyBuilder b("axpy_in_code");
  b.description("y = a x + y, described in C++")
      .source_text("axpy.cuh", kSource)
      .kernel("axpy<{BLOCK}, {PER_THREAD}>")
      .axis("n", 1, 1LL << 30, 1 << 20, "elements")
      .parameter("BLOCK", {128, 256, 512}, "threads per block")
      .parameter("PER_THREAD", {1, 2, 4}, "elements per thread")
      .launch({"cdiv(n, BLOCK * PER_THREAD)"}, {"BLOCK"})
      .buffer("y", "f32", "n", Role::kInOut)
      .buffer("x", "f32", "n", Role::kIn)
      .scalar("n", "u64", "n")
      .scalar("a", "f32", "2.5")
      .reference("axpy_reference", {"min(cdiv(n, 256), 4096)"}, {"256"}, Tolerance::exact())
      .metric("12 * n", "GB/s")
      .default_config({{"BLOCK", 256}, {"PER_THREAD", 1}});
  return b;
}

TEST(FamilyBuilderGpu, AFamilyBuiltInCodeIsTunedLookedUpAndLaunched) {
  KTUNE_REQUIRE_GPU();
  add_family(axpy_family());
  const Family& family = find_family("axpy_in_code");
  testing::TempDir dir;
  const std::string path = dir.file("axpy.db");
  const std::uint64_t n = 1000003;
  {
    Database db(path);
    TuneOptions o;
    o.strategy = "exhaustive";
    o.max_evals = 0;
    o.progress = false;
    const TuneSummary s = tune(db, ktune_held_device, family, family.parse_problem("n=1000003"), o);
    EXPECT_EQ(s.evaluated, 9u);
    EXPECT_EQ(s.ok, 9u);
    ASSERT_TRUE(s.best.has_value());
  }
  Options options;
  options.database = path;
  Runtime rt(options);
  EXPECT_EQ(rt.explain("axpy_in_code", "n=1000003").step, LookupStep::kExact);

  const auto x = testing::random_vector<float>(n, 1), y0 = testing::random_vector<float>(n, 2);
  detail::DeviceBuffer dx(n * sizeof(float)), dy(n * sizeof(float));
  testing::upload(dx.get(), x);
  testing::upload(dy.get(), y0);
  const float a = -1.75f;
  rt.launch("axpy_in_code", ProblemSpec().set("n", static_cast<std::int64_t>(n)),
            {reinterpret_cast<const void*>(dy.get()), reinterpret_cast<const void*>(dx.get()), n,
             a});
  testing::synchronize();
  const auto y = testing::download<float>(dy.get(), n);
  std::size_t wrong = 0;
  for (std::uint64_t i = 0; i < n; ++i)
    if (y[i] != std::fma(a, x[i], y0[i]) && y[i] != a * x[i] + y0[i]) ++wrong;
  EXPECT_EQ(wrong, 0u);
}

}  // namespace
}  // namespace ktune

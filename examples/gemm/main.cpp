// Multiplies two matrices with ktune's tuned GEMM on memory from the CUDA runtime, and checks
// the result on the host. Exit 0 when correct; 1 on a wrong result; 2 without a usable GPU.
//   gemm_example [--tune-on-miss]   (tune the shape at its first call if the database lacks it)
#include <cuda_runtime.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <ktune/ktune.hpp>
#include <ktune/tune_on_miss.hpp>
#include <random>
#include <vector>

int main(int argc, char** argv) {
  const bool tune_on_miss = argc > 1 && std::strcmp(argv[1], "--tune-on-miss") == 0;
  const int m = 512, n = 384, k = 256;
  std::vector<float> a(std::size_t(m) * k), b(std::size_t(k) * n), c(std::size_t(m) * n);
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (auto& x : a) x = dist(rng);
  for (auto& x : b) x = dist(rng);

  float *da = nullptr, *db = nullptr, *dc = nullptr;
  if (cudaMalloc(&da, a.size() * 4) != cudaSuccess ||
      cudaMalloc(&db, b.size() * 4) != cudaSuccess ||
      cudaMalloc(&dc, c.size() * 4) != cudaSuccess) {
    std::fprintf(stderr, "gemm_example: no usable CUDA device (%s)\n",
                 cudaGetErrorString(cudaGetLastError()));
    return 2;
  }
  cudaMemcpy(da, a.data(), a.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), b.size() * 4, cudaMemcpyHostToDevice);
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  try {
    ktune::Options options;  // device 0, the default tuning database
    if (tune_on_miss)
      options.tune_on_miss = ktune::make_miss_tuner({.max_evals = 24, .max_seconds = 20});
    ktune::Runtime rt(options);
    // Column-major C (m x n) = A (m x k) * B (k x n).
    rt.gemm(ktune::Layout::kColMajor, ktune::Op::kN, ktune::Op::kN, m, n, k, 1.0f, da, m, db, k,
            0.0f, dc, m, stream);
    const ktune::Choice why =
        rt.explain("gemm", "align=4;dtype=f32;k=" + std::to_string(k) + ";m=" + std::to_string(m) +
                               ";n=" + std::to_string(n) + ";op=nn");
    std::printf("configuration from the '%s' step: %s\n",
                std::string(ktune::to_string(why.step)).c_str(), why.config.c_str());
  } catch (const ktune::Error& e) {
    std::fprintf(stderr, "gemm_example: %s\n", e.what());
    return e.code() == ktune::ErrorCode::kNoDriver || e.code() == ktune::ErrorCode::kNoDevice ? 2
                                                                                              : 1;
  }
  cudaStreamSynchronize(stream);
  cudaMemcpy(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost);
  double worst = 0;
  for (int j = 0; j < n; ++j)
    for (int i = 0; i < m; ++i) {
      double ref = 0, mag = 0;
      for (int p = 0; p < k; ++p) {
        ref += double(a[i + std::size_t(p) * m]) * b[p + std::size_t(j) * k];
        mag += std::fabs(double(a[i + std::size_t(p) * m]) * b[p + std::size_t(j) * k]);
      }
      worst = std::max(worst, std::fabs(c[i + std::size_t(j) * m] - ref) / (mag + 1e-30));
    }
  std::printf("%dx%dx%d sgemm: max error %.2e of the sum of magnitudes: %s\n", m, n, k, worst,
              worst < 1e-5 ? "correct" : "WRONG");
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  cudaStreamDestroy(stream);
  return worst < 1e-5 ? 0 : 1;
}

// Launches a kernel of our own, described by transpose.family.toml, through ktune's runtime: the
// configuration comes from the tuning database (ktune tune transpose ...), else the family's
// default. Transposes a rows x cols matrix and checks every element on the host, then times the
// host side of a repeated call. Exit 0 when correct; 1 on a wrong result; 2 without a usable GPU.
//   transpose_example FAMILY_FILE [ROWS COLS]
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ktune/ktune.hpp>
#include <random>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 2 && argc != 4) {
    std::fprintf(stderr, "usage: transpose_example FAMILY_FILE [ROWS COLS]\n");
    return 2;
  }
  const int rows = argc == 4 ? std::atoi(argv[2]) : 3000;
  const int cols = argc == 4 ? std::atoi(argv[3]) : 4099;
  const std::size_t n = std::size_t(rows) * cols;
  std::vector<float> in(n), out(n);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (auto& x : in) x = dist(rng);

  float *din = nullptr, *dout = nullptr;
  if (cudaMalloc(&din, n * 4) != cudaSuccess || cudaMalloc(&dout, n * 4) != cudaSuccess) {
    std::fprintf(stderr, "transpose_example: no usable CUDA device (%s)\n",
                 cudaGetErrorString(cudaGetLastError()));
    return 2;
  }
  cudaMemcpy(din, in.data(), n * 4, cudaMemcpyHostToDevice);
  cudaMemset(dout, 0xFF, n * 4);
  cudaStream_t stream;
  cudaStreamCreate(&stream);
  double host_us = 0;
  try {
    ktune::Options options;  // device 0, the default tuning database
    options.family_files = {argv[1]};
    ktune::Runtime rt(options);
    const auto problem =
        ktune::ProblemSpec().set("rows", rows).set("cols", cols).set("dtype", "f32");
    const ktune::Choice why = rt.explain(
        "transpose", "cols=" + std::to_string(cols) + ";dtype=f32;rows=" + std::to_string(rows));
    std::printf("configuration from the '%s' step: %s\n",
                std::string(ktune::to_string(why.step)).c_str(), why.config.c_str());
    // The arguments in the family file's order: out, in, rows, cols.
    rt.launch("transpose", problem, {dout, din, rows, cols}, stream);
    cudaStreamSynchronize(stream);
    // The host side of a repeated call (lookup of the cached entry, argument checks, launch), on
    // a 32 x 32 problem in batches of 64 calls so that the launch queue never fills: the median
    // batch, per call.
    const auto small = ktune::ProblemSpec().set("rows", 32).set("cols", 32).set("dtype", "f32");
    std::vector<double> batches;
    for (int b = 0; b < 200; ++b) {
      cudaStreamSynchronize(stream);
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < 64; ++i) rt.launch("transpose", small, {dout, din, 32, 32}, stream);
      batches.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
          64);
    }
    std::sort(batches.begin(), batches.end());
    host_us = batches[batches.size() / 2];
    // The large problem again, so that the check below reads its output.
    rt.launch("transpose", problem, {dout, din, rows, cols}, stream);
    // Wrong calls are refused before anything runs.
    try {
      rt.launch("transpose", problem, {dout, din, rows}, stream);
      std::fprintf(stderr, "transpose_example: a missing argument was accepted\n");
      return 1;
    } catch (const ktune::Error& e) {
      std::printf("refused as expected: %s\n", e.what());
    }
  } catch (const ktune::Error& e) {
    std::fprintf(stderr, "transpose_example: %s\n", e.what());
    return e.code() == ktune::ErrorCode::kNoDriver || e.code() == ktune::ErrorCode::kNoDevice ? 2
                                                                                              : 1;
  }
  cudaStreamSynchronize(stream);
  cudaMemcpy(out.data(), dout, n * 4, cudaMemcpyDeviceToHost);
  std::size_t wrong = 0;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      wrong += out[std::size_t(c) * rows + r] != in[std::size_t(r) * cols + c];
  std::printf(
      "%d x %d transpose through rt.launch: %zu wrong element(s): %s; %.2f us of host time "
      "per repeated call (32 x 32, median of 200 batches of 64)\n",
      rows, cols, wrong, wrong == 0 ? "correct" : "WRONG", host_us);
  cudaFree(din);
  cudaFree(dout);
  cudaStreamDestroy(stream);
  return wrong == 0 ? 0 : 1;
}

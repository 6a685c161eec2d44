// Anchor implementations: the CUDA runtime's memcpy, cuBLAS GEMM, CUB histogram.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "bench/anchors.hpp"

namespace ktune::anchors {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(e) + " (" +
                             cudaGetErrorString(e) + ")");
}

}  // namespace

void memcpy_d2d(void* dst, const void* src, std::size_t bytes, CUstream stream) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                        reinterpret_cast<cudaStream_t>(stream)),
        "cudaMemcpyAsync");
}

std::string versions() {
  int rt = 0;
  cudaRuntimeGetVersion(&rt);
  return "cudart " + std::to_string(rt);
}

}  // namespace ktune::anchors

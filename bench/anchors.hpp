// The anchors ktune is measured against, built by nvcc (cudart, cuBLAS, CUB): plain C++ interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

typedef struct CUstream_st* CUstream;

namespace ktune::anchors {

// cudaMemcpyAsync device-to-device. Throws std::runtime_error with the CUDA error.
void memcpy_d2d(void* dst, const void* src, std::size_t bytes, CUstream stream);

// CUB's DeviceHistogram::HistogramEven, with its temporary storage allocated on first use and
// kept (grown when a call needs more). Counts are overwritten (CUB zeroes them first).
class CubHistogram {
 public:
  CubHistogram() = default;
  ~CubHistogram();
  CubHistogram(const CubHistogram&) = delete;
  CubHistogram& operator=(const CubHistogram&) = delete;
  // 256 bins of bytes: levels 0..256.
  void bytes(const std::uint8_t* data, std::size_t n, std::uint32_t* counts, CUstream stream);
  // `bins` even bins over [lower, upper) of float samples.
  void floats(const float* samples, std::size_t n, int bins, float lower, float upper,
              std::uint32_t* counts, CUstream stream);

 private:
  void* temp_ = nullptr;
  std::size_t temp_bytes_ = 0;
  void reserve(std::size_t bytes);
};

// The seed's histograms of bytes (256 bins), zeroing the counts first: "naive" is one global
// atomicAdd per byte in a grid-stride loop; "two-phase" one __shared__ histogram per block, then
// one global atomicAdd per bin. Both launch 2 x SMs blocks of 256 threads, as the seed did.
void seed_histogram_naive(const std::uint8_t* data, std::size_t n, std::uint32_t* counts,
                          CUstream stream);
void seed_histogram_two_phase(const std::uint8_t* data, std::size_t n, std::uint32_t* counts,
                              CUstream stream);

// cuBLAS GEMM, column-major, at the handle's default math mode: SGEMM runs FP32 FFMA (TF32
// tensor ops only when CUBLAS_TF32_TENSOR_OP_MATH is asked for, which we never do).
class Cublas {
 public:
  Cublas();
  ~Cublas();
  Cublas(const Cublas&) = delete;
  Cublas& operator=(const Cublas&) = delete;
  void sgemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
             const float* b, int ldb, float beta, float* c, int ldc, CUstream stream);
  void dgemm(bool trans_a, bool trans_b, int m, int n, int k, double alpha, const double* a,
             int lda, const double* b, int ldb, double beta, double* c, int ldc, CUstream stream);
  // "CUBLAS_DEFAULT_MATH" etc., as the handle reports it; and the cuBLAS version.
  std::string math_mode() const;
  std::string version() const;

 private:
  void* handle_ = nullptr;
};

// cuBLASLt DGEMM held to the FP64 FMA units (only algorithms whose implementation flags say FMA,
// no tensor-core operation): the vendor's own FP64 kernels without the tensor cores, the
// like-for-like anchor for ktune's MMA=0 configurations (every cuBLAS DGEMM route takes the FP64
// tensor cores on sm_90, pedantic math included). Column-major, alpha and beta on the host, a
// 32 MiB workspace.
class CublasLtFmaDgemm {
 public:
  CublasLtFmaDgemm();
  ~CublasLtFmaDgemm();
  CublasLtFmaDgemm(const CublasLtFmaDgemm&) = delete;
  CublasLtFmaDgemm& operator=(const CublasLtFmaDgemm&) = delete;
  // Up to `max_algos` FMA-unit algorithms for this problem: the heuristic's first offers, then
  // every FMA-unit algorithm id with each tile and stage setting cublasLtMatmulAlgoCheck accepts.
  // Returns how many (0: none, nothing can run). Replaces the previous plan.
  int plan(bool trans_a, bool trans_b, int m, int n, int k, int lda, int ldb, int ldc,
           int max_algos);
  // What the heuristic offered for the last plan (statuses, counts, implementation flags).
  std::string plan_note() const;
  // Algorithm i of the plan: "algo 12 tile 18 stages 9 split 1" (cuBLASLt's own ids).
  std::string describe(int i) const;
  void run(int i, double alpha, const double* a, const double* b, double beta, double* c,
           CUstream stream);

 private:
  struct State;
  State* state_ = nullptr;
};

// cuBLASLt GEMM on the tensor cores with fp32 accumulation: 16-bit inputs (bf16 or fp16,
// CUBLAS_COMPUTE_32F) and C of the input type or f32, or float inputs and C multiplied as tf32
// (CUBLAS_COMPUTE_32F_FAST_TF32); column-major, alpha and beta (float) on the host, a 32 MiB
// workspace: the tensor-core anchor of `ktune bench gemm --dtype bf16|f16|tf32`. plan() keeps the
// heuristic's first `max_algos` offers; the caller times them and keeps the fastest.
class CublasLtGemm16 {
 public:
  CublasLtGemm16();
  ~CublasLtGemm16();
  CublasLtGemm16(const CublasLtGemm16&) = delete;
  CublasLtGemm16& operator=(const CublasLtGemm16&) = delete;
  // Returns how many algorithms the plan holds (0: none, nothing can run).
  // dtype "bf16", "f16" or "tf32"; batch > 1: a strided batch, matrices the strides apart.
  int plan(const std::string& dtype, bool out_f32, bool trans_a, bool trans_b, int m, int n, int k,
           int lda, int ldb, int ldc, int max_algos, int batch = 1, std::int64_t stride_a = 0,
           std::int64_t stride_b = 0, std::int64_t stride_c = 0);
  std::string describe(int i) const;
  void run(int i, float alpha, const void* a, const void* b, float beta, void* c, CUstream stream);

 private:
  struct State;
  State* state_ = nullptr;
};

// FMA throughput of the FMA units (TFLOPS, 2 flops per FMA) for float or double: independent
// register-only FMA chains on every SM, timed with events. seconds == 0: the median of 5
// launches (about 40 ms in all for f64, at the boost clock). seconds > 0: launches for that
// long, the median of the second half: the ceiling at the clock the card holds over seconds of
// this load (which may fall to the card's power limit; a GEMM running for seconds is held to it).
double fma_peak_tflops(bool f64, CUstream stream, double seconds = 0);

// Version strings for the record: "cudart 13000".
std::string versions();

}  // namespace ktune::anchors

// Anchor implementations: the CUDA runtime's memcpy, cuBLAS GEMM, CUB histogram.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "bench/cublas_dyn.hpp"  // cuBLAS through pointers loaded on first use

#include <cub/device/device_histogram.cuh>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <chrono>
#include <stdexcept>
#include <vector>
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

CubHistogram::~CubHistogram() {
  if (temp_) cudaFree(temp_);
}

void CubHistogram::reserve(std::size_t bytes) {
  if (bytes <= temp_bytes_ && temp_) return;
  if (temp_) check(cudaFree(temp_), "cudaFree (CUB temporary storage)");
  temp_ = nullptr;
  temp_bytes_ = 0;
  check(cudaMalloc(&temp_, bytes ? bytes : 1), "cudaMalloc (CUB temporary storage)");
  temp_bytes_ = bytes;
}

void CubHistogram::bytes(const std::uint8_t* data, std::size_t n, std::uint32_t* counts,
                         CUstream stream) {
  auto s = reinterpret_cast<cudaStream_t>(stream);
  const auto samples = static_cast<::cuda::std::int64_t>(n);
  std::size_t need = 0;
  check(cub::DeviceHistogram::HistogramEven(nullptr, need, data, counts, 257, 0, 256, samples, s),
        "cub::DeviceHistogram::HistogramEven (size query)");
  reserve(need);
  check(cub::DeviceHistogram::HistogramEven(temp_, need, data, counts, 257, 0, 256, samples, s),
        "cub::DeviceHistogram::HistogramEven");
}

void CubHistogram::floats(const float* data, std::size_t n, int bins, float lower, float upper,
                          std::uint32_t* counts, CUstream stream) {
  auto s = reinterpret_cast<cudaStream_t>(stream);
  const auto samples = static_cast<::cuda::std::int64_t>(n);
  std::size_t need = 0;
  check(cub::DeviceHistogram::HistogramEven(nullptr, need, data, counts, bins + 1, lower, upper,
                                            samples, s),
        "cub::DeviceHistogram::HistogramEven (size query)");
  reserve(need);
  check(cub::DeviceHistogram::HistogramEven(temp_, need, data, counts, bins + 1, lower, upper,
                                            samples, s),
        "cub::DeviceHistogram::HistogramEven");
}

namespace {

__global__ void seed_naive_kernel(const std::uint8_t* data, std::size_t n, unsigned* counts) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    atomicAdd(&counts[data[i]], 1u);
}

__global__ void seed_two_phase_kernel(const std::uint8_t* data, std::size_t n, unsigned* counts) {
  __shared__ unsigned temp[256];
  temp[threadIdx.x] = 0;
  __syncthreads();
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    atomicAdd(&temp[data[i]], 1u);
  __syncthreads();
  atomicAdd(&counts[threadIdx.x], temp[threadIdx.x]);
}

int seed_grid() {
  int device = 0, sms = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device),
        "cudaDeviceGetAttribute");
  return 2 * sms;
}

}  // namespace

void seed_histogram_naive(const std::uint8_t* data, std::size_t n, std::uint32_t* counts,
                          CUstream stream) {
  auto s = reinterpret_cast<cudaStream_t>(stream);
  check(cudaMemsetAsync(counts, 0, 256 * sizeof(unsigned), s), "cudaMemsetAsync");
  seed_naive_kernel<<<seed_grid(), 256, 0, s>>>(data, n, counts);
  check(cudaGetLastError(), "seed naive histogram launch");
}

void seed_histogram_two_phase(const std::uint8_t* data, std::size_t n, std::uint32_t* counts,
                              CUstream stream) {
  auto s = reinterpret_cast<cudaStream_t>(stream);
  check(cudaMemsetAsync(counts, 0, 256 * sizeof(unsigned), s), "cudaMemsetAsync");
  seed_two_phase_kernel<<<seed_grid(), 256, 0, s>>>(data, n, counts);
  check(cudaGetLastError(), "seed two-phase histogram launch");
}

Cublas::Cublas() {
  cublasHandle_t h = nullptr;
  const cublasStatus_t s = cublasCreate(&h);
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cublasCreate: ") + cublasGetStatusString(s));
  handle_ = h;
}

Cublas::~Cublas() {
  if (handle_) cublasDestroy(static_cast<cublasHandle_t>(handle_));
}

namespace {
void check_cublas(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(what) + ": " + cublasGetStatusString(s));
}
}  // namespace

void Cublas::sgemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
                   const float* b, int ldb, float beta, float* c, int ldc, CUstream stream) {
  auto h = static_cast<cublasHandle_t>(handle_);
  check_cublas(cublasSetStream(h, reinterpret_cast<cudaStream_t>(stream)), "cublasSetStream");
  check_cublas(cublasSgemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n,
                           k, &alpha, a, lda, b, ldb, &beta, c, ldc),
               "cublasSgemm");
}

void Cublas::dgemm(bool ta, bool tb, int m, int n, int k, double alpha, const double* a, int lda,
                   const double* b, int ldb, double beta, double* c, int ldc, CUstream stream) {
  auto h = static_cast<cublasHandle_t>(handle_);
  check_cublas(cublasSetStream(h, reinterpret_cast<cudaStream_t>(stream)), "cublasSetStream");
  check_cublas(cublasDgemm(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n,
                           k, &alpha, a, lda, b, ldb, &beta, c, ldc),
               "cublasDgemm");
}

std::string Cublas::math_mode() const {
  cublasMath_t mode{};
  check_cublas(cublasGetMathMode(static_cast<cublasHandle_t>(handle_), &mode), "cublasGetMathMode");
  switch (static_cast<int>(mode) & 0xf) {
    case CUBLAS_DEFAULT_MATH:
      return "CUBLAS_DEFAULT_MATH";
    case CUBLAS_TENSOR_OP_MATH:
      return "CUBLAS_TENSOR_OP_MATH";
    case CUBLAS_PEDANTIC_MATH:
      return "CUBLAS_PEDANTIC_MATH";
    case CUBLAS_TF32_TENSOR_OP_MATH:
      return "CUBLAS_TF32_TENSOR_OP_MATH";
    default:
      return "math mode " + std::to_string(static_cast<int>(mode));
  }
}

std::string Cublas::version() const {
  int v = 0;
  cublasGetVersion(static_cast<cublasHandle_t>(handle_), &v);
  return "cuBLAS " + std::to_string(v);
}

namespace {

// An algorithm's implementation flags (0 where cuBLASLt cannot tell), and whether they say FMA
// units with no tensor-core operation.
std::uint64_t impl_flags(const cublasLtMatmulAlgo_t& algo) {
  std::uint64_t impl = 0;
  std::size_t written = 0;
  if (cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS, &impl,
                                        sizeof(impl), &written) != CUBLAS_STATUS_SUCCESS)
    return 0;
  return impl;
}
bool on_fma_units(std::uint64_t impl) {
  return (impl & CUBLASLT_NUMERICAL_IMPL_FLAGS_OP_TYPE_MASK) == CUBLASLT_NUMERICAL_IMPL_FLAGS_FMA;
}

}  // namespace

namespace {

// What both cuBLASLt anchors hold: the handle and a 32 MiB workspace for their lifetime, and the
// descriptors and algorithms of the last plan.
struct LtState {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  std::vector<cublasLtMatmulHeuristicResult_t> algos;
  void* workspace = nullptr;
  std::size_t workspace_bytes = std::size_t(32) << 20;

  LtState() {
    check_cublas(cublasLtCreate(&handle), "cublasLtCreate");
    if (cudaError_t e = cudaMalloc(&workspace, workspace_bytes); e != cudaSuccess) {
      cublasLtDestroy(handle);
      check(e, "cudaMalloc (cuBLASLt workspace)");
    }
  }
  ~LtState() {
    release_plan();
    cudaFree(workspace);
    cublasLtDestroy(handle);
  }
  LtState(const LtState&) = delete;
  LtState& operator=(const LtState&) = delete;

  void release_plan() {
    if (op) cublasLtMatmulDescDestroy(op);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (c) cublasLtMatrixLayoutDestroy(c);
    op = nullptr, a = b = c = nullptr;
    algos.clear();
  }

  // A new plan's operation and layouts (column-major, as stored: op(A) is m x k, so A is k x m
  // when transposed); the previous plan is released first.
  void describe_problem(cublasComputeType_t compute, cudaDataType_t scale, cudaDataType_t in,
                        cudaDataType_t out, bool ta, bool tb, int m, int n, int k, int lda,
                        int ldb, int ldc) {
    release_plan();
    check_cublas(cublasLtMatmulDescCreate(&op, compute, scale), "cublasLtMatmulDescCreate");
    const cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N,
                            ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    check_cublas(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &oa, sizeof(oa)),
                 "cublasLtMatmulDescSetAttribute");
    check_cublas(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &ob, sizeof(ob)),
                 "cublasLtMatmulDescSetAttribute");
    check_cublas(cublasLtMatrixLayoutCreate(&a, in, ta ? k : m, ta ? m : k, lda),
                 "cublasLtMatrixLayoutCreate");
    check_cublas(cublasLtMatrixLayoutCreate(&b, in, tb ? n : k, tb ? k : n, ldb),
                 "cublasLtMatrixLayoutCreate");
    check_cublas(cublasLtMatrixLayoutCreate(&c, out, m, n, ldc), "cublasLtMatrixLayoutCreate");
  }

  // A strided batch of `batch` products, the matrices of A, B and C the strides (elements) apart.
  void describe_batch(int batch, std::int64_t stride_a, std::int64_t stride_b,
                      std::int64_t stride_c) {
    const std::int64_t strides[3] = {stride_a, stride_b, stride_c};
    cublasLtMatrixLayout_t layouts[3] = {a, b, c};
    for (int i = 0; i < 3; ++i) {
      check_cublas(cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                    &batch, sizeof(batch)),
                   "cublasLtMatrixLayoutSetAttribute (batch)");
      check_cublas(
          cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                           &strides[i], sizeof(strides[i])),
          "cublasLtMatrixLayoutSetAttribute (stride)");
    }
  }

  // Algorithm i of the plan: "algo 12 tile 18 stages 9 split 1" (cuBLASLt's own ids).
  std::string describe(int i) const {
    const cublasLtMatmulAlgo_t& algo = algos.at(static_cast<std::size_t>(i)).algo;
    auto get = [&](cublasLtMatmulAlgoConfigAttributes_t attr) {
      int v = 0;  // every attribute read here is 32 bits wide (int32 or uint32)
      std::size_t written = 0;
      cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof(v), &written);
      return std::to_string(v);
    };
    return "algo " + get(CUBLASLT_ALGO_CONFIG_ID) + " tile " + get(CUBLASLT_ALGO_CONFIG_TILE_ID) +
           " stages " + get(CUBLASLT_ALGO_CONFIG_STAGES_ID) + " split " +
           get(CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
  }

  // D = C: runs algorithm i of the plan with host scalars of the scale type.
  void run(int i, const void* alpha, const void* a_ptr, const void* b_ptr, const void* beta,
           void* c_ptr, CUstream stream, const char* what) {
    const cublasLtMatmulHeuristicResult_t& r = algos.at(static_cast<std::size_t>(i));
    check_cublas(cublasLtMatmul(handle, op, alpha, a_ptr, a, b_ptr, b, beta, c_ptr, c, c_ptr, c,
                                &r.algo, workspace, workspace_bytes,
                                reinterpret_cast<cudaStream_t>(stream)),
                 what);
  }
};

}  // namespace

struct CublasLtFmaDgemm::State : LtState {
  std::string note;  // what the heuristic offered for the last plan
};

CublasLtFmaDgemm::CublasLtFmaDgemm() : state_(new State) {}

CublasLtFmaDgemm::~CublasLtFmaDgemm() { delete state_; }

int CublasLtFmaDgemm::plan(bool ta, bool tb, int m, int n, int k, int lda, int ldb, int ldc,
                           int max_algos) {
  State& s = *state_;
  s.describe_problem(CUBLAS_COMPUTE_64F, CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, ta, tb, m, n, k, lda,
                     ldb, ldc);
  // The heuristic first, under a mask that admits an algorithm whose flags all lie in it: every
  // accumulator and input type, and of the operation types only FMA (no tensor-core operation).
  // What it offers is kept by its flags, not assumed from the mask, and noted.
  {
    const std::uint64_t mask = ~std::uint64_t(CUBLASLT_NUMERICAL_IMPL_FLAGS_TENSOR_OP_MASK);
    const int count = std::max(1, max_algos);
    cublasLtMatmulPreference_t pref = nullptr;
    check_cublas(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
    cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_IMPL_MASK, &mask, sizeof(mask));
    if (st == CUBLAS_STATUS_SUCCESS)
      st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &s.workspace_bytes, sizeof(s.workspace_bytes));
    std::vector<cublasLtMatmulHeuristicResult_t> found(static_cast<std::size_t>(count));
    int returned = 0;
    if (st == CUBLAS_STATUS_SUCCESS)
      st = cublasLtMatmulAlgoGetHeuristic(s.handle, s.op, s.a, s.b, s.c, s.c, pref, count,
                                          found.data(), &returned);
    cublasLtMatmulPreferenceDestroy(pref);
    s.note = std::string("heuristic: ") + cublasGetStatusName(st) + ", " +
             std::to_string(returned) + " offered, flags";
    for (int i = 0; i < returned; ++i) {
      if (found[i].state != CUBLAS_STATUS_SUCCESS) continue;
      const std::uint64_t impl = impl_flags(found[i].algo);
      char hex[24];
      std::snprintf(hex, sizeof hex, " %llx", static_cast<unsigned long long>(impl));
      s.note += hex;
      if (on_fma_units(impl) && static_cast<int>(s.algos.size()) < max_algos)
        s.algos.push_back(found[i]);
    }
  }
  // The heuristic's choice need not be cuBLASLt's best on these units: every FMA-unit
  // algorithm id with each of its tile and stage settings that cublasLtMatmulAlgoCheck accepts
  // for this problem joins the plan (the caller times them and keeps the fastest).
  std::vector<int> ids(256);
  int id_count = 0;
  if (cublasLtMatmulAlgoGetIds(s.handle, CUBLAS_COMPUTE_64F, CUDA_R_64F, CUDA_R_64F, CUDA_R_64F,
                               CUDA_R_64F, CUDA_R_64F, static_cast<int>(ids.size()), ids.data(),
                               &id_count) != CUBLAS_STATUS_SUCCESS)
    id_count = 0;
  int checked = 0;
  auto same = [](const cublasLtMatmulAlgo_t& x, const cublasLtMatmulAlgo_t& y) {
    return std::memcmp(&x, &y, sizeof x) == 0;
  };
  for (int i = 0; i < id_count && static_cast<int>(s.algos.size()) < max_algos; ++i) {
    cublasLtMatmulAlgo_t algo;
    if (cublasLtMatmulAlgoInit(s.handle, CUBLAS_COMPUTE_64F, CUDA_R_64F, CUDA_R_64F, CUDA_R_64F,
                               CUDA_R_64F, CUDA_R_64F, ids[i], &algo) != CUBLAS_STATUS_SUCCESS)
      continue;
    if (!on_fma_units(impl_flags(algo))) continue;
    auto list = [&](cublasLtMatmulAlgoCapAttributes_t attr) {
      std::size_t bytes = 0;
      std::vector<std::uint32_t> v;
      if (cublasLtMatmulAlgoCapGetAttribute(&algo, attr, nullptr, 0, &bytes) ==
              CUBLAS_STATUS_SUCCESS &&
          bytes >= sizeof(std::uint32_t)) {
        v.resize(bytes / sizeof(std::uint32_t));
        cublasLtMatmulAlgoCapGetAttribute(&algo, attr, v.data(), bytes, &bytes);
      }
      if (v.empty()) v.push_back(0);  // the algorithm takes no such setting (UNDEFINED)
      return v;
    };
    for (std::uint32_t tile : list(CUBLASLT_ALGO_CAP_TILE_IDS)) {
      for (std::uint32_t stages : list(CUBLASLT_ALGO_CAP_STAGES_IDS)) {
        if (static_cast<int>(s.algos.size()) >= max_algos) break;
        cublasLtMatmulAlgo_t a = algo;
        cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile));
        cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages,
                                             sizeof(stages));
        cublasLtMatmulHeuristicResult_t r{};
        ++checked;
        if (cublasLtMatmulAlgoCheck(s.handle, s.op, s.a, s.b, s.c, s.c, &a, &r) !=
                CUBLAS_STATUS_SUCCESS ||
            r.workspaceSize > s.workspace_bytes)
          continue;
        r.algo = a;
        bool known = false;
        for (const auto& k : s.algos) known = known || same(k.algo, a);
        if (!known) s.algos.push_back(r);
      }
    }
  }
  s.note += "; " + std::to_string(checked) + " FMA-unit settings checked, " +
            std::to_string(s.algos.size()) + " in the plan";
  return static_cast<int>(s.algos.size());
}

std::string CublasLtFmaDgemm::plan_note() const { return state_->note; }

std::string CublasLtFmaDgemm::describe(int i) const { return state_->describe(i); }

void CublasLtFmaDgemm::run(int i, double alpha, const double* a, const double* b, double beta,
                           double* c, CUstream stream) {
  state_->run(i, &alpha, a, b, &beta, c, stream, "cublasLtMatmul (FMA units)");
}

struct CublasLtGemm16::State : LtState {};

CublasLtGemm16::CublasLtGemm16() : state_(new State) {}

CublasLtGemm16::~CublasLtGemm16() { delete state_; }

int CublasLtGemm16::plan(const std::string& dtype, bool out_f32, bool ta, bool tb, int m, int n,
                         int k, int lda, int ldb, int ldc, int max_algos, int batch,
                         std::int64_t stride_a, std::int64_t stride_b, std::int64_t stride_c) {
  State& s = *state_;
  const bool tf32 = dtype == "tf32";
  const cudaDataType_t in = dtype == "bf16" ? CUDA_R_16BF : dtype == "f16" ? CUDA_R_16F : CUDA_R_32F;
  const cudaDataType_t out = out_f32 ? CUDA_R_32F : in;
  s.describe_problem(tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F, in, out,
                     ta, tb, m, n, k, lda, ldb, ldc);
  if (batch > 1) s.describe_batch(batch, stride_a, stride_b, stride_c);
  cublasLtMatmulPreference_t pref = nullptr;
  check_cublas(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  cublasStatus_t st =
      cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                           &s.workspace_bytes, sizeof(s.workspace_bytes));
  const int count = std::max(1, max_algos);
  std::vector<cublasLtMatmulHeuristicResult_t> found(static_cast<std::size_t>(count));
  int returned = 0;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = cublasLtMatmulAlgoGetHeuristic(s.handle, s.op, s.a, s.b, s.c, s.c, pref, count,
                                        found.data(), &returned);
  cublasLtMatmulPreferenceDestroy(pref);
  check_cublas(st, "cublasLtMatmulAlgoGetHeuristic");
  for (int i = 0; i < returned; ++i)
    if (found[i].state == CUBLAS_STATUS_SUCCESS) s.algos.push_back(found[i]);
  return static_cast<int>(s.algos.size());
}

std::string CublasLtGemm16::describe(int i) const {
  return "heuristic #" + std::to_string(i + 1) + ": " + state_->describe(i);
}

void CublasLtGemm16::run(int i, float alpha, const void* a, const void* b, float beta, void* c,
                         CUstream stream) {
  state_->run(i, &alpha, a, b, &beta, c, stream, "cublasLtMatmul (tensor cores)");
}

namespace {

// Eight independent accumulators per thread hide the FMA latency; the result is stored only
// under a condition the data never meets, so nothing is optimised away.
template <typename T>
__global__ void __launch_bounds__(256) fma_chains(T* sink, int iterations, T seed) {
  T a[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) a[i] = seed + static_cast<T>(threadIdx.x + i);
  const T x = static_cast<T>(0.999999), y = static_cast<T>(1e-7);
  for (int it = 0; it < iterations; ++it) {
#pragma unroll
    for (int r = 0; r < 16; ++r)
#pragma unroll
      for (int i = 0; i < 8; ++i) a[i] = fma(a[i], x, y);
  }
  T s = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) s += a[i];
  if (s == static_cast<T>(-12345.678)) sink[threadIdx.x] = s;
}

template <typename T>
double fma_peak(CUstream stream, double seconds) {
  int device = 0, sms = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  T* sink = nullptr;
  check(cudaMalloc(&sink, 256 * sizeof(T)), "cudaMalloc");
  const int blocks = sms * 8, iterations = 4096;
  auto s = reinterpret_cast<cudaStream_t>(stream);
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  fma_chains<T><<<blocks, 256, 0, s>>>(sink, iterations, T(1));  // warm-up, clocks up
  std::vector<float> ms;
  const auto began = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  };
  while (ms.size() < 5 || elapsed() < seconds) {
    check(cudaEventRecord(start, s), "cudaEventRecord");
    fma_chains<T><<<blocks, 256, 0, s>>>(sink, iterations, T(1));
    check(cudaEventRecord(stop, s), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float t = 0;
    check(cudaEventElapsedTime(&t, start, stop), "cudaEventElapsedTime");
    ms.push_back(t);
  }
  check(cudaGetLastError(), "fma_chains");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(sink);
  // Sustained: the second half of the launches only, once the clock has settled under the
  // card's power limit (the first launches run at the boost clock).
  if (seconds > 0) ms.erase(ms.begin(), ms.begin() + static_cast<std::ptrdiff_t>(ms.size() / 2));
  std::sort(ms.begin(), ms.end());
  const double fmas = static_cast<double>(blocks) * 256 * iterations * 16 * 8;
  return 2 * fmas / (ms[ms.size() / 2] * 1e-3) / 1e12;
}

}  // namespace

double fma_peak_tflops(bool f64, CUstream stream, double seconds) {
  return f64 ? fma_peak<double>(stream, seconds) : fma_peak<float>(stream, seconds);
}

std::string versions() {
  int rt = 0;
  cudaRuntimeGetVersion(&rt);
  return "cudart " + std::to_string(rt) + ", CUB " + std::to_string(CUB_VERSION);
}

}  // namespace ktune::anchors

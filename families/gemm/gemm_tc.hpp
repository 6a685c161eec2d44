// The tensor-core GEMM family (gemm_tc.cuh): bf16, fp16 or tf32 in (tf32: float arrays multiplied
// with 10 bits of mantissa), fp32 accumulation, fp32 or the 16-bit input type out, on sm_90
// (wgmma, TMA). Column-major BLAS calls, as the gemm family.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

#include "platform/device.hpp"
#include "platform/nvrtc.hpp"
#include "platform/problem.hpp"

namespace ktune {

class Family;
class Kernel;

// C(m x n) = alpha * op(A) * op(B) + beta * C, column-major, A and B of `dtype` ("bf16", "f16",
// or "tf32": float arrays), C of `out` ("f32", or the input's dtype for bf16 and f16).
struct TcCall {
  std::string dtype = "bf16", out = "f32";
  bool trans_a = true, trans_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  float alpha = 1, beta = 0;
  const void* a = nullptr;
  std::int64_t lda = 1;
  const void* b = nullptr;
  std::int64_t ldb = 1;
  void* c = nullptr;
  std::int64_t ldc = 1;
  // A strided batch: `batch` products, the matrices of A, B and C stride_a, stride_b and stride_c
  // elements apart (unused when batch is 1).
  std::int64_t batch = 1, stride_a = 0, stride_b = 0, stride_c = 0;
  // The split-K partial sums' scratch filled with 0xFF (NaN) before the kernel: a workload's
  // verifying run (GemmCall::poison_scratch). Never in the runtime.
  bool poison_scratch = false;
};

// The problem of a call: sizes m, n, k, batch (products of a strided batch) and align (elements:
// operand pointers, leading dimensions and batch strides are multiples of it; the kernels need 16
// bytes, for the TMA: 8 elements of 16 bits, 4 of tf32), attributes dtype, out and op.
Problem gemm_tc_problem(const std::string& dtype, const std::string& out, bool trans_a,
                        bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, int align,
                        std::int64_t batch = 1);

// The alignment the kernels read, in elements of `dtype`: 16 bytes (8 of bf16 / fp16, 4 of tf32).
int gemm_tc_kernel_align(const std::string& dtype);

// Largest of {8, 4, 2, 1} elements, at most 16 bytes, dividing the operand pointers' alignment,
// their leading dimensions and (batch > 1) their batch strides.
int gemm_tc_alignment(const TcCall& call);

// Whether gemm_tc with `config` (EPI = 1, no split k) stores this call's C through shared memory
// and the TMA: beta = 0, C's address, rows (ldc) and, for a batch, matrices 16-byte aligned, and
// its columns of the kernel's view (the call's m) a whole number of 16 bytes. Otherwise the kernel
// stores from the registers.
bool gemm_tc_tma_store(const Config& config, const TcCall& call);

// How far a computed element of C may be from the exact sum ref of its k products (values of a
// 16-bit type, or of tf32, multiply exactly) whose magnitudes add up to absref, for C of type
// `out`: |c - ref| <= rel |ref| + acc absref. rel is the output's rounding (2^-8 for bf16, 2^-11
// for fp16, 0 for f32); acc covers the fp32 accumulation, whose rounding errors of random signs
// grow like sqrt(k): 16 u_f32 sqrt(k) (times 1 + rel). One product lost or counted twice (|a b|
// about 1/4 of absref / k for uniform inputs) exceeds it, on average, for k up to about 10^4.
// Float inputs that tf32 does not represent lose up to 2^-10 of each factor (the tensor cores
// read 10 bits of mantissa): add `input` absref (2^-9 (1 + 2^-11) for tf32, 0 for 16-bit types,
// whose arrays hold what is multiplied).
struct TcTolerance {
  double rel = 0, acc = 0, input = 0;
};
TcTolerance gemm_tc_tolerance(const std::string& dtype, const std::string& out, std::int64_t k);

// The wgmma wrappers the kernels include (gemm_tc_wgmma.cuh), generated for every BN.
std::string gemm_tc_wgmma_header();

// Runs the candidate compiled by `family` (gemm_tc or gemm_tc80) on a call with m, n, k > 0
// whose problem the family accepts (the kernel compiled for that problem: a strided batch,
// batch > 1, takes the batched kernels). Throws Error(kInternal) for another family.
void gemm_tc_launch(const Family& family, const Kernel& kernel, const Config& config,
                    const TcCall& call, CUstream stream);

// gemm_tc: wgmma and the TMA, sm_90 only. gemm_tc80: mma.sync and cp.async, sm_80 and later (the
// fallback for A100- and L40-class GPUs). Both take the same problems (gemm_tc_problem, with the
// family's name set) and calls.
const Family& gemm_tc_family();
const Family& gemm_tc80_family();
// The one a GPU runs: gemm_tc on sm_90, gemm_tc80 on sm_80, sm_86, sm_89 and later ones; throws
// Error(kUnsupported) below sm_80.
const Family& gemm_tc_family_for(const DeviceLimits& limits);

// gemm_tc_skinny (gemm_tc_skinny.cuh): calls of these types with m or n at most 16 and one
// product (matrix-vector included), on the FMA units with fp32 sums, any layout (tf32 too) and
// any alignment; its problems are gemm_tc_problem's with the family's name set and align 1, 2, 4
// or 8 (at most 16 bytes). gemm_tc_is_skinny: the calls the runtime sends there instead of to
// gemm_tc / gemm_tc80: one product with m or n at most 4 (docs/GEMM_TC.md, "Skinny calls").
const Family& gemm_tc_skinny_family();
bool gemm_tc_is_skinny(const std::string& dtype, std::int64_t m, std::int64_t n,
                       std::int64_t batch);

// C = beta * C (k == 0 or alpha == 0 in BLAS) for C of type `out`, with `kernel` compiled from
// gemm_tc_scale_name(out) in the family's source.
std::string gemm_tc_scale_name(const std::string& out);
void gemm_tc_scale_launch(const Kernel& kernel, const TcCall& call, CUstream stream);

// dst = src^T for `batch` matrices of 32-bit words (src rows x cols column-major, leading
// dimension lds; dst cols x rows, leading dimension ldd >= cols; matrices src_stride and
// dst_stride elements apart), on `stream`: gemm_ex's tf32 operands that are not k-contiguous.
// The kernel (tc_transpose.cuh) is its own source, outside the families' hashed ones.
CompileRequest gemm_tc_transpose_request(const std::string& arch);
void gemm_tc_transpose_launch(const Kernel& kernel, const void* src, std::int64_t lds,
                              std::int64_t src_stride, void* dst, std::int64_t ldd,
                              std::int64_t dst_stride, std::int64_t rows, std::int64_t cols,
                              std::int64_t batch, CUstream stream);

// The shapes `ktune tune gemm_tc --suite` and `ktune bench gemm --dtype bf16|f16|tf32` use.
struct TcShape {
  std::int64_t m, n, k;
};
std::vector<TcShape> gemm_tc_suite();

// The call of a gemm_tc workload (its verified buffers), for running cuBLAS on the same data;
// throws Error(kInternal) for another family's workload.
class Workload;
TcCall gemm_tc_workload_call(const Workload& workload);
// Scales the tolerance the workload's verify() checks against (1 unless set): the bench checks
// its anchor, cuBLASLt, against a wider bound than ktune's kernels (docs/GEMM_TC.md,
// "Verification"). Throws Error(kInternal) for another family's workload or a scale below 1.
void gemm_tc_workload_scale_tolerance(Workload& workload, double scale);
// How many times a gemm_tc or gemm_tc_skinny workload made its reference (KeptReference in
// gemm.hpp); throws Error(kInternal) for another family's workload.
std::size_t gemm_tc_workload_references(const Workload& workload);

}  // namespace ktune

// cuBLAS and cuBLASLt for the anchors, loaded when the first anchor call needs them rather than
// linked: the two libraries take about 0.35 s to load (540 MB of cuBLASLt), which every ktune
// command and every tuning worker paid at start while only `ktune bench gemm` calls them.
//
// Include after <cublas_v2.h> and <cublasLt.h>: each cuBLAS function the anchors call becomes a
// call through a pointer resolved once per call site. A function called without an entry below
// fails to link (the libraries are not linked), so nothing reaches cuBLAS another way.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>

#include <string>
#include <vector>

namespace ktune::cublas_dyn {

enum class Library { kCublas, kCublasLt };

// The library's handle, loaded on first use (its soname for this toolkit's major version, found
// like a linked library, then beside libnvrtc); throws std::runtime_error saying which library
// could not be loaded and why.
void* library(Library lib);
// The function `name` of `lib`; throws std::runtime_error naming it where it is missing.
void* symbol(Library lib, const char* name);

// Every function the anchors call: X(library, symbol as exported).
#define KTUNE_CUBLAS_FUNCTIONS(X)                    \
  X(kCublas, cublasCreate_v2)                        \
  X(kCublas, cublasDestroy_v2)                       \
  X(kCublas, cublasSetStream_v2)                     \
  X(kCublas, cublasSgemm_v2)                         \
  X(kCublas, cublasDgemm_v2)                         \
  X(kCublas, cublasGetVersion_v2)                    \
  X(kCublas, cublasGetMathMode)                      \
  X(kCublas, cublasGetStatusName)                    \
  X(kCublas, cublasGetStatusString)                  \
  X(kCublasLt, cublasLtCreate)                       \
  X(kCublasLt, cublasLtDestroy)                      \
  X(kCublasLt, cublasLtMatmul)                       \
  X(kCublasLt, cublasLtMatmulAlgoCapGetAttribute)    \
  X(kCublasLt, cublasLtMatmulAlgoCheck)              \
  X(kCublasLt, cublasLtMatmulAlgoConfigGetAttribute) \
  X(kCublasLt, cublasLtMatmulAlgoConfigSetAttribute) \
  X(kCublasLt, cublasLtMatmulAlgoGetHeuristic)       \
  X(kCublasLt, cublasLtMatmulAlgoGetIds)             \
  X(kCublasLt, cublasLtMatmulAlgoInit)               \
  X(kCublasLt, cublasLtMatmulDescCreate)             \
  X(kCublasLt, cublasLtMatmulDescDestroy)            \
  X(kCublasLt, cublasLtMatmulDescSetAttribute)       \
  X(kCublasLt, cublasLtMatmulPreferenceCreate)       \
  X(kCublasLt, cublasLtMatmulPreferenceDestroy)      \
  X(kCublasLt, cublasLtMatmulPreferenceSetAttribute) \
  X(kCublasLt, cublasLtMatrixLayoutCreate)           \
  X(kCublasLt, cublasLtMatrixLayoutDestroy)          \
  X(kCublasLt, cublasLtMatrixLayoutSetAttribute)

// Which library each listed function is in: KTUNE_CUBLAS_CALL of a function not listed does not
// compile.
namespace in {
#define KTUNE_CUBLAS_LIBRARY_OF(lib, fn) inline constexpr Library fn = Library::lib;
KTUNE_CUBLAS_FUNCTIONS(KTUNE_CUBLAS_LIBRARY_OF)
#undef KTUNE_CUBLAS_LIBRARY_OF
}  // namespace in

// Every listed function, for the check that this toolkit's libraries have them all.
struct Function {
  Library lib;
  const char* name;
};
std::vector<Function> functions();

}  // namespace ktune::cublas_dyn

// The function `fn` (as exported), with its declared type, resolved once where it is used.
#define KTUNE_CUBLAS_CALL(fn)                                           \
  ([] {                                                                 \
    static const auto resolved = reinterpret_cast<decltype(&fn)>(       \
        ::ktune::cublas_dyn::symbol(::ktune::cublas_dyn::in::fn, #fn)); \
    return resolved;                                                    \
  }())

#ifndef KTUNE_CUBLAS_DYN_NO_NAMES
#undef cublasCreate
#undef cublasDestroy
#undef cublasSetStream
#undef cublasSgemm
#undef cublasDgemm
#undef cublasGetVersion
#define cublasCreate KTUNE_CUBLAS_CALL(cublasCreate_v2)
#define cublasDestroy KTUNE_CUBLAS_CALL(cublasDestroy_v2)
#define cublasSetStream KTUNE_CUBLAS_CALL(cublasSetStream_v2)
#define cublasSgemm KTUNE_CUBLAS_CALL(cublasSgemm_v2)
#define cublasDgemm KTUNE_CUBLAS_CALL(cublasDgemm_v2)
#define cublasGetVersion KTUNE_CUBLAS_CALL(cublasGetVersion_v2)
#define cublasGetMathMode KTUNE_CUBLAS_CALL(cublasGetMathMode)
#define cublasGetStatusName KTUNE_CUBLAS_CALL(cublasGetStatusName)
#define cublasGetStatusString KTUNE_CUBLAS_CALL(cublasGetStatusString)
#define cublasLtCreate KTUNE_CUBLAS_CALL(cublasLtCreate)
#define cublasLtDestroy KTUNE_CUBLAS_CALL(cublasLtDestroy)
#define cublasLtMatmul KTUNE_CUBLAS_CALL(cublasLtMatmul)
#define cublasLtMatmulAlgoCapGetAttribute KTUNE_CUBLAS_CALL(cublasLtMatmulAlgoCapGetAttribute)
#define cublasLtMatmulAlgoCheck KTUNE_CUBLAS_CALL(cublasLtMatmulAlgoCheck)
#define cublasLtMatmulAlgoConfigGetAttribute KTUNE_CUBLAS_CALL(cublasLtMatmulAlgoConfigGetAttribute)
#define cublasLtMatmulAlgoConfigSetAttribute KTUNE_CUBLAS_CALL(cublasLtMatmulAlgoConfigSetAttribute)
#define cublasLtMatmulAlgoGetHeuristic KTUNE_CUBLAS_CALL(cublasLtMatmulAlgoGetHeuristic)
#define cublasLtMatmulAlgoGetIds KTUNE_CUBLAS_CALL(cublasLtMatmulAlgoGetIds)
#define cublasLtMatmulAlgoInit KTUNE_CUBLAS_CALL(cublasLtMatmulAlgoInit)
#define cublasLtMatmulDescCreate KTUNE_CUBLAS_CALL(cublasLtMatmulDescCreate)
#define cublasLtMatmulDescDestroy KTUNE_CUBLAS_CALL(cublasLtMatmulDescDestroy)
#define cublasLtMatmulDescSetAttribute KTUNE_CUBLAS_CALL(cublasLtMatmulDescSetAttribute)
#define cublasLtMatmulPreferenceCreate KTUNE_CUBLAS_CALL(cublasLtMatmulPreferenceCreate)
#define cublasLtMatmulPreferenceDestroy KTUNE_CUBLAS_CALL(cublasLtMatmulPreferenceDestroy)
#define cublasLtMatmulPreferenceSetAttribute KTUNE_CUBLAS_CALL(cublasLtMatmulPreferenceSetAttribute)
#define cublasLtMatrixLayoutCreate KTUNE_CUBLAS_CALL(cublasLtMatrixLayoutCreate)
#define cublasLtMatrixLayoutDestroy KTUNE_CUBLAS_CALL(cublasLtMatrixLayoutDestroy)
#define cublasLtMatrixLayoutSetAttribute KTUNE_CUBLAS_CALL(cublasLtMatrixLayoutSetAttribute)
#endif

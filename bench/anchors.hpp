// The anchors ktune is measured against, built by nvcc (cudart, cuBLAS, CUB): plain C++ interface.
#pragma once

#include <cstddef>
#include <string>

typedef struct CUstream_st* CUstream;

namespace ktune::anchors {

// cudaMemcpyAsync device-to-device. Throws std::runtime_error with the CUDA error.
void memcpy_d2d(void* dst, const void* src, std::size_t bytes, CUstream stream);

// Version strings for the record: "cudart 13000".
std::string versions();

}  // namespace ktune::anchors

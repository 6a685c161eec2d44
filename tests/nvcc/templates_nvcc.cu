// Builds every template with nvcc (not NVRTC), instantiating representative variants, so that the
// .cuh files stay valid CUDA for editors, linters and nvcc users.
#include "elementwise.cuh"

namespace ktune {
template __global__ void elementwise_kernel<kElementwiseCopy, float, 4, 4, 1, 0>(
    ElementwiseArgs<float>, u64, int);
template __global__ void elementwise_kernel<kElementwiseAdd, double, 2, 2, 0, 1>(
    ElementwiseArgs<double>, u64, int);
template __global__ void elementwise_kernel<kElementwiseComplexCopy, float, 1, 8, 1, 1>(
    ElementwiseArgs<float>, u64, int);
template __global__ void elementwise_check<kElementwiseAdd, float>(ElementwiseArgs<float>, u64, u64,
                                                                   u64*);
template __global__ void fill_random<double>(double*, u64, u64);
}  // namespace ktune

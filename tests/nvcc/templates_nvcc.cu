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

#include "histogram.cuh"

namespace ktune {
// Every privatisation and layout, bytes and wider samples, scalar and vector loads.
template __global__ void histogram_kernel<unsigned char, 512, 16, 4, kHistLanes, kHistInterleaved,
                                          1>(const unsigned char*, u64, u32*, HistogramArgs, int);
template __global__ void histogram_kernel<unsigned char, 256, 1, 8, kHistGlobal, kHistReplicaMajor,
                                          0>(const unsigned char*, u64, u32*, HistogramArgs, int);
template __global__ void histogram_kernel<unsigned short, 1024, 8, 2, kHistBlock, kHistReplicaMajor,
                                          1>(const unsigned short*, u64, u32*, HistogramArgs, int);
template __global__ void histogram_kernel<int, 128, 4, 4, kHistWarps, kHistReplicaMajor, 0>(
    const int*, u64, u32*, HistogramArgs, int);
template __global__ void histogram_kernel<float, 256, 16, 2, kHistLanes, kHistPadded, 1>(
    const float*, u64, u32*, HistogramArgs, int);
template __global__ void histogram_fill<float>(u64*, u64, HistogramData);
template __global__ void histogram_fill<unsigned char>(u64*, u64, HistogramData);
}  // namespace ktune

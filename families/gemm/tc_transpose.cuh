// The transpose the runtime runs before a tf32 GEMM whose operand is not k-contiguous: the
// tensor cores read tf32 operands k-major only (wgmma has no transposed tf32 form, and the
// mma.sync kernels keep the same layout), so gemm_ex copies such an operand, transposed, into
// scratch memory and multiplies that. Its own source, outside the tuned families' hashed ones:
// the tuned kernels and their results do not depend on it.
namespace ktune {
namespace tc {

// dst = src^T for `batch` matrices of 32-bit words: src is rows x cols column-major (element (r,
// c) at src[c * lds + r]), dst cols x rows column-major (element (c, r) at dst[r * ldd + c]),
// matrices src_stride and dst_stride words apart. Tiles of 32 x 32 through shared memory (a padded
// row keeps the columns' reads free of bank conflicts), both sides read and written along their
// contiguous dimension; blocks of 32 x 8 threads; grid x covers the rows, y and z walk the
// column tiles and the batch.
__global__ void tc_transpose32(const unsigned* __restrict__ src, long long lds, long long src_stride,
                               unsigned* __restrict__ dst, long long ldd, long long dst_stride,
                               int rows, int cols, long long batch) {
  __shared__ unsigned tile[32][33];
  const long long r0 = static_cast<long long>(blockIdx.x) * 32;
  const long long col_tiles = (cols + 31) / 32;
  for (long long b = blockIdx.z; b < batch; b += gridDim.z) {
    const unsigned* s = src + b * src_stride;
    unsigned* d = dst + b * dst_stride;
    for (long long ct = blockIdx.y; ct < col_tiles; ct += gridDim.y) {
      const long long c0 = ct * 32;
      for (int j = threadIdx.y; j < 32; j += 8) {
        const long long r = r0 + threadIdx.x, c = c0 + j;
        if (r < rows && c < cols) tile[j][threadIdx.x] = s[c * lds + r];
      }
      __syncthreads();
      for (int j = threadIdx.y; j < 32; j += 8) {
        const long long c = c0 + threadIdx.x, r = r0 + j;
        if (r < rows && c < cols) d[r * ldd + c] = tile[threadIdx.x][j];
      }
      __syncthreads();
    }
  }
}

}  // namespace tc
}  // namespace ktune

// A tiled out-of-place matrix transpose, as GPU courses and Kernel Tuner's examples teach it:
// a block reads a TILE x TILE tile of `in` with coalesced loads into shared memory, and writes it
// transposed to `out` with coalesced stores. out (cols x rows) = transpose(in (rows x cols)),
// both row-major.
//   TILE  side of the tile
//   ROWS  rows of the tile each thread moves (the block is TILE x TILE / ROWS threads)
//   PAD   1: one extra column in the shared tile, so that the column reads hit 32 banks
#pragma once

template <typename T, int TILE, int ROWS, int PAD>
__global__ void transpose(T* out, const T* in, int rows, int cols) {
  static_assert(TILE % ROWS == 0, "ROWS must divide TILE");
  constexpr int STEP = TILE / ROWS;  // rows of threads in the block
  __shared__ T tile[TILE][TILE + PAD];
  const int x = blockIdx.x * TILE + threadIdx.x;   // column of `in`
  const int y0 = blockIdx.y * TILE + threadIdx.y;  // first row of `in`
#pragma unroll
  for (int j = 0; j < TILE; j += STEP) {
    const int y = y0 + j;
    if (x < cols && y < rows) tile[threadIdx.y + j][threadIdx.x] = in[(long long)y * cols + x];
  }
  __syncthreads();
  const int ox = blockIdx.y * TILE + threadIdx.x;   // column of `out` (a row of `in`)
  const int oy0 = blockIdx.x * TILE + threadIdx.y;  // first row of `out`
#pragma unroll
  for (int j = 0; j < TILE; j += STEP) {
    const int oy = oy0 + j;
    if (ox < rows && oy < cols) out[(long long)oy * rows + ox] = tile[threadIdx.x][threadIdx.y + j];
  }
}

// The reference: one thread per element, obviously right.
template <typename T>
__global__ void transpose_reference(T* out, const T* in, int rows, int cols) {
  const int x = blockIdx.x * blockDim.x + threadIdx.x;
  const int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < cols && y < rows) out[(long long)x * rows + y] = in[(long long)y * cols + x];
}

// Sums over the cells of a launch, for the residual norms of the finite-volume kernels
// (kernels/residual.cu, the mean flow; kernels/turbulence.cu, the turbulence models).
#pragma once

// squares[v] += the sum of k2[v] over the thread block (one atomic per block and
// variable); every thread of the block must call it.
template <int NV>
__device__ __forceinline__ void add_block_sums(double k2[NV], double* squares) {
#ifdef __CUDA_ARCH__
    __shared__ double partial[32][NV];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        for (int offset = 16; offset > 0; offset >>= 1)
            k2[v] += __shfl_down_sync(0xffffffffu, k2[v], offset);
        if (lane == 0) partial[warp][v] = k2[v];
    }
    __syncthreads();
    if (threadIdx.x < NV) {
        double total = 0;
        for (int w = 0; w < int(blockDim.x >> 5); ++w) total += partial[w][threadIdx.x];
        atomicAdd(&squares[threadIdx.x], total);
    }
#else
    for (int v = 0; v < NV; ++v) squares[v] += k2[v];
#endif
}

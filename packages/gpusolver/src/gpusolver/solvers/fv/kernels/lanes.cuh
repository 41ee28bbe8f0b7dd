// LANES threads sharing one sum (kernels/level_lu.cu: a row of a block; kernels/lusgs.cu:
// a cell's upstream slots): a warp on the GPU, its lanes' partial sums added by shuffles
// into lane 0; one thread on the CPU, whose shim runs threads one after another.
#pragma once

// The sum of `sum` over the LANES lanes (a divisor of 32, every lane of the warp taking
// part), in lane 0.
template <typename real, int LANES>
__device__ __forceinline__ real lanes_sum(real sum) {
    if constexpr (LANES > 1) {
        for (int offset = LANES / 2; offset > 0; offset >>= 1) {
            sum += __shfl_down_sync(0xffffffffu, sum, offset);
        }
    }
    return sum;
}

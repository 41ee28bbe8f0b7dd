// Lets a CUDA source compile as C++ for the CPU (gpusolver/backends/host.py): every
// kernel launch becomes a loop over blocks and threads, atomics plain updates.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <type_traits>
#include <utility>

#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(x)
#define __restrict__

struct HostIndex {
    int x = 0, y = 0, z = 0;
};
static HostIndex blockIdx, blockDim, threadIdx;

using std::fabs;
using std::fmax;
using std::fmin;
using std::isfinite;
using std::isnan;
using std::max;
using std::min;
using std::sqrt;

template <typename T>
inline T atomicAdd(T* address, T value) {
    const T old = *address;
    *address += value;
    return old;
}

template <typename T>
inline T atomicMin(T* address, T value) {
    const T old = *address;
    *address = std::min(old, value);
    return old;
}

// kernel(*args[0], *args[1], ...) for every thread of the grid, in order
template <typename... A, std::size_t... I>
inline void host_call(void (*kernel)(A...), void** args, std::index_sequence<I...>) {
    kernel(*static_cast<std::remove_reference_t<A>*>(args[I])...);
}

template <typename... A>
inline void host_launch(void (*kernel)(A...), int grid, int block, void** args) {
    blockDim.x = block;
    for (int b = 0; b < grid; ++b) {
        blockIdx.x = b;
        for (int t = 0; t < block; ++t) {
            threadIdx.x = t;
            host_call(kernel, args, std::index_sequence_for<A...>{});
        }
    }
}

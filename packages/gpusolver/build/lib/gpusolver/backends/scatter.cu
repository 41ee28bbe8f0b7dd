// Scatter with duplicate indices: out[r, index[k]] (op)= values[r, k] for every row r and
// item k, one thread per (r, k), with atomics. The operations:
//   scatter_add_*  atomicAdd;
//   scatter_min_*, scatter_max_*  compare-and-swap loops on the value's bits, exact in
//   both precisions (CuPy's minimum.at / maximum.at on float64 are not: measured on an
//   H100 they round to about 6e-8, float32 precision).
// out is (rows, n_out) contiguous; values is (rows, m) with row stride row_stride.

__device__ __forceinline__ unsigned long long to_bits(double x) {
    return static_cast<unsigned long long>(__double_as_longlong(x));
}
__device__ __forceinline__ double from_bits(unsigned long long b) {
    return __longlong_as_double(static_cast<long long>(b));
}
__device__ __forceinline__ unsigned int to_bits(float x) { return __float_as_uint(x); }
__device__ __forceinline__ float from_bits(unsigned int b) { return __uint_as_float(b); }

template <typename real, bool is_min>
__device__ __forceinline__ void atomic_extremum(real* address, real value) {
    using bits = decltype(to_bits(value));
    bits* word = reinterpret_cast<bits*>(address);
    bits old = *word;
    while (is_min ? value < from_bits(old) : value > from_bits(old)) {
        const bits assumed = old;
        old = atomicCAS(word, assumed, to_bits(value));
        if (old == assumed) break;
    }
}

enum Operation { ADD, MIN, MAX };

template <typename real, Operation op>
__device__ void scatter(real* out, const long long* __restrict__ index,
                        const real* __restrict__ values, long long m, long long rows,
                        long long n_out, long long row_stride) {
    const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (t >= m * rows) return;
    const long long row = t / m;
    const long long k = t - row * m;
    const real value = values[row * row_stride + k];
    real* target = out + row * n_out + index[k];
    if (op == ADD) {
        atomicAdd(target, value);
    } else {
        atomic_extremum<real, op == MIN>(target, value);
    }
}

#define SCATTER_KERNEL(name, real, suffix, op)                                                  \
    extern "C" __global__ void name##_##suffix(real* out, const long long* index,              \
                                               const real* values, long long m, long long rows, \
                                               long long n_out, long long row_stride) {         \
        scatter<real, op>(out, index, values, m, rows, n_out, row_stride);                     \
    }

SCATTER_KERNEL(scatter_add, double, f64, ADD)
SCATTER_KERNEL(scatter_min, double, f64, MIN)
SCATTER_KERNEL(scatter_max, double, f64, MAX)
SCATTER_KERNEL(scatter_add, float, f32, ADD)
SCATTER_KERNEL(scatter_min, float, f32, MIN)
SCATTER_KERNEL(scatter_max, float, f32, MAX)

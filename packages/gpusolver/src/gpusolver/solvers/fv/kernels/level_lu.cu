// The solve of block cyclic reduction (gpusolver/solvers/fv/level_lu.py) in a few
// kernels a stage: products of a stage's dense blocks with rows of a vector, and the
// moves between a (n_vars, n_cells) array and the levels' rows. Every array is a
// contiguous buffer addressed by element offsets.
//
// LANES threads share one row of a block (a warp on the GPU, its partial sums added by
// shuffles; one thread on the CPU, whose shim runs threads one after another).

template <typename real, int LANES>
__device__ __forceinline__ real lanes_sum(real sum) {
    if constexpr (LANES > 1) {
        for (int offset = LANES / 2; offset > 0; offset >>= 1) {
            sum += __shfl_down_sync(0xffffffffu, sum, offset);
        }
    }
    return sum;
}

// For every block k < count and row i < rows:
//   y[y_offset + k * y_stride + i] = c[c_offset + k * c_stride + i]
//                                    - sum_j blocks[k, i, j] v_k[j]
// with v_k[j] = x[k * x_stride + j], j < cols; without c (has_c 0) the product
// sum_j blocks[k, i, j] v_k[j] itself. A block's right-hand vector is cols consecutive
// entries of x: with x_stride = rows and cols = 2 rows, the two
// neighbouring rows (x_k, x_(k+1)) of a (levels, rows) array, read as one.
template <typename real, int LANES>
__global__ void block_products(const real* __restrict__ blocks, int rows, int cols,
                               const real* __restrict__ x, long long x_stride,
                               const real* __restrict__ c, long long c_offset,
                               long long c_stride, int has_c,
                               real* __restrict__ y, long long y_offset, long long y_stride,
                               long long count) {
    const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    const long long row = t / LANES;  // k * rows + i, the same for a warp's lanes
    if (row >= count * rows) return;
    const int lane = static_cast<int>(t - row * LANES);
    const long long k = row / rows;
    const long long i = row - k * rows;
    const real* entries = blocks + row * cols;
    const real* vector = x + k * x_stride;
    real sum = 0;
    for (int j = lane; j < cols; j += LANES) sum += entries[j] * vector[j];
    sum = lanes_sum<real, LANES>(sum);
    if (lane != 0) return;
    y[y_offset + k * y_stride + i] = has_c ? c[c_offset + k * c_stride + i] - sum : sum;
}

// rows[offset + slots[u]] = values[u] (place: to_rows 1) or values[u] = rows[offset +
// slots[u]] (take: to_rows 0), u < n.
template <typename real>
__global__ void move_slots(real* rows, long long offset, const long long* __restrict__ slots,
                           real* values, long long n, int to_rows) {
    const long long u = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (u >= n) return;
    if (to_rows) {
        rows[offset + slots[u]] = values[u];
    } else {
        values[u] = rows[offset + slots[u]];
    }
}

// dst[dst_offset + k * dst_stride + i] = src[src_offset + k * src_stride + i],
// k < count, i < width.
template <typename real>
__global__ void copy_rows(const real* __restrict__ src, long long src_offset,
                          long long src_stride, real* __restrict__ dst, long long dst_offset,
                          long long dst_stride, long long width, long long count) {
    const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    if (t >= width * count) return;
    const long long k = t / width;
    const long long i = t - k * width;
    dst[dst_offset + k * dst_stride + i] = src[src_offset + k * src_stride + i];
}

// The solve of block cyclic reduction (gpusolver/solvers/fv/level_lu.py) in a few
// kernels a stage: products of a stage's dense blocks with rows of a vector, and the
// moves between a (n_vars, n_cells) array and the levels' rows. Every array is a
// contiguous buffer addressed by element offsets.
//
// LANES threads share one row of a block (lanes.cuh).

#include "lanes.cuh"

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

// The factorisation's dense block products, a list of jobs in one launch (a stage's
// products that do not wait for one another): job q writes one n x n block
//   C = D + s1 A1 B1 + s2 A2 B2
// into the workspace w, each term optional. jobs[q * JOB_FIELDS + f] holds, for C, D, A1,
// B1, A2, B2 in turn, the block's offset in w and its row stride (offset -1: no such
// term), then s1 and s2 (+1 or -1). A thread computes a TILE x TILE corner of one job's
// block (its A rows and B columns held in registers: TILE^2 products for 2 TILE loads);
// a warp's threads share their rows of A and read consecutive columns of B. The blocks
// of one launch's outputs never overlap its inputs.
constexpr int JOB_FIELDS = 14;
constexpr int TILE = 4;

template <typename real>
__global__ void block_jobs(real* w, const long long* __restrict__ jobs, int n,
                           long long n_jobs) {
    const long long t = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
    const int tiles = (n + TILE - 1) / TILE;  // a block's tiles along a row or column
    const long long per_job = static_cast<long long>(tiles) * tiles;
    if (t >= n_jobs * per_job) return;
    const long long q = t / per_job;
    const int tile = static_cast<int>(t - q * per_job);
    const int i0 = (tile / tiles) * TILE;
    const int j0 = (tile - (tile / tiles) * tiles) * TILE;
    const long long* job = jobs + q * JOB_FIELDS;
    real value[TILE][TILE];
    for (int r = 0; r < TILE; ++r) {
        for (int c = 0; c < TILE; ++c) {
            const bool inside = i0 + r < n && j0 + c < n;
            value[r][c] = job[2] >= 0 && inside ? w[job[2] + (i0 + r) * job[3] + j0 + c]
                                                : real(0);
        }
    }
    for (int term = 0; term < 2; ++term) {
        const long long a = job[4 + 4 * term];
        if (a < 0) continue;
        const long long a_stride = job[5 + 4 * term];
        const long long b = job[6 + 4 * term];
        const long long b_stride = job[7 + 4 * term];
        const real sign = static_cast<real>(job[12 + term]);
        real sum[TILE][TILE] = {};
        for (int l = 0; l < n; ++l) {
            real left[TILE], right[TILE];
            for (int r = 0; r < TILE; ++r) {
                left[r] = i0 + r < n ? w[a + (i0 + r) * a_stride + l] : real(0);
                right[r] = j0 + r < n ? w[b + l * b_stride + j0 + r] : real(0);
            }
            for (int r = 0; r < TILE; ++r) {
                for (int c = 0; c < TILE; ++c) sum[r][c] += left[r] * right[c];
            }
        }
        for (int r = 0; r < TILE; ++r) {
            for (int c = 0; c < TILE; ++c) value[r][c] += sign * sum[r][c];
        }
    }
    for (int r = 0; r < TILE && i0 + r < n; ++r) {
        for (int c = 0; c < TILE && j0 + c < n; ++c) {
            w[job[0] + (i0 + r) * job[1] + j0 + c] = value[r][c];
        }
    }
}

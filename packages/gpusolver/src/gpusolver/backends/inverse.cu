// Inverses of a batch of small dense matrices, one thread block a matrix held in shared
// memory: Gauss-Jordan elimination in place with partial pivoting (row interchanges,
// undone as column interchanges of the inverse at the end; Golub & Van Loan, sec. 3.4),
// the pivoting of LAPACK's getrf. A singular matrix gives non-finite entries.
// Matrix m of blocks starts at m * in_stride, its inverse at m * out_stride (n * n for a
// (count, n, n) stack; 2 n * n for every other matrix of one), each row-major; shared
// memory holds n * n reals and n pivot rows. GPU only: the elimination's steps
// synchronise the block's threads.

// Entries first + m * stride and second + m * stride of a interchanged, m < n, by the
// block's threads: two rows (stride 1) or two columns (stride n).
template <typename real>
__device__ void interchange(real* a, int first, int second, int stride, int n) {
    for (int m = threadIdx.x; m < n; m += blockDim.x) {
        const real t = a[first + m * stride];
        a[first + m * stride] = a[second + m * stride];
        a[second + m * stride] = t;
    }
}

template <typename real>
__global__ void invert_blocks(const real* __restrict__ blocks, real* __restrict__ inverses,
                              int n, long long in_stride, long long out_stride) {
    extern __shared__ unsigned char shared_bytes[];
    real* a = reinterpret_cast<real*>(shared_bytes);
    int* pivots = reinterpret_cast<int*>(a + n * n);
    __shared__ int pivot_row;
    const long long start = static_cast<long long>(blockIdx.x) * in_stride;
    for (int e = threadIdx.x; e < n * n; e += blockDim.x) a[e] = blocks[start + e];
    __syncthreads();
    for (int k = 0; k < n; ++k) {
        if (threadIdx.x < 32) {  // the first warp finds the pivot: largest |a[i][k]|, i >= k
            real best = -1;
            int row = k;
            for (int i = k + threadIdx.x; i < n; i += 32) {
                const real size = fabs(a[i * n + k]);
                if (size > best) {
                    best = size;
                    row = i;
                }
            }
            for (int offset = 16; offset > 0; offset >>= 1) {
                const real other = __shfl_down_sync(0xffffffffu, best, offset);
                const int other_row = __shfl_down_sync(0xffffffffu, row, offset);
                if (other > best || (other == best && other_row < row)) {
                    best = other;
                    row = other_row;
                }
            }
            if (threadIdx.x == 0) {
                pivot_row = row;
                pivots[k] = row;
            }
        }
        __syncthreads();
        const int p = pivot_row;
        if (p != k) {  // p is the block's: every thread takes this branch or none
            interchange(a, k * n, p * n, 1, n);
            __syncthreads();
        }
        const real inverse_pivot = real(1) / a[k * n + k];
        __syncthreads();  // every thread has read the pivot before row k changes
        for (int j = threadIdx.x; j < n; j += blockDim.x) {
            a[k * n + j] = (j == k ? real(1) : a[k * n + j]) * inverse_pivot;
        }
        __syncthreads();
        // every other row i: a[i][j] -= a[i][k] a[k][j], and a[i][k] = -a[i][k] / pivot
        for (int e = threadIdx.x; e < n * n; e += blockDim.x) {
            const int i = e / n;
            const int j = e - i * n;
            if (i == k || j == k) continue;
            a[e] -= a[i * n + k] * a[k * n + j];
        }
        __syncthreads();
        for (int i = threadIdx.x; i < n; i += blockDim.x) {
            if (i != k) a[i * n + k] = -a[i * n + k] * a[k * n + k];
        }
        __syncthreads();
    }
    // the rows interchanged at step k become columns k and pivots[k] interchanged
    for (int k = n - 1; k >= 0; --k) {
        if (pivots[k] != k) interchange(a, k, pivots[k], n, n);
        __syncthreads();
    }
    const long long end = static_cast<long long>(blockIdx.x) * out_stride;
    for (int e = threadIdx.x; e < n * n; e += blockDim.x) inverses[end + e] = a[e];
}

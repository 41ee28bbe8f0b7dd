// The transfers of the multigrid cycle: the device twin of the array code of
// gpusolver/solvers/fv/multigrid.py (Multigrid._restrict, _prolong, _smooth).
//
// States and residuals are (DIM + 2, n) arrays of conserved variables, variable-major;
// coarse[i] is the coarse cell of fine cell i.

#include "../../../integrators/kernels/relaxation.cuh"

// Sums over each coarse cell of u * V and of r (u_sum, r_sum zeroed by the caller).
template <typename real, int DIM>
__global__ void __launch_bounds__(256) restrict_kernel(
    int n_fine, int n_coarse, const int* __restrict__ coarse, const real* __restrict__ volume,
    const real* __restrict__ u, const real* __restrict__ r, real* u_sum, real* r_sum) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_fine) return;
    const int c = coarse[i];
#pragma unroll
    for (int v = 0; v < DIM + 2; ++v) {
        atomicAdd(&u_sum[v * n_coarse + c], u[v * n_fine + i] * volume[i]);
        atomicAdd(&r_sum[v * n_coarse + c], r[v * n_fine + i]);
    }
}

// out = u + alpha weight (state - start) of each cell's coarse cell, alpha relaxed as an
// LU-SGS update is (density and total energy change by at most `limit` of their values,
// halved while not positive: relaxation.cuh); u where the result is not finite. out may
// be u. weight: Multigrid.weight on the fine level, 1 between coarse levels.
template <typename real, int DIM>
__global__ void __launch_bounds__(256) prolong_kernel(
    int n_fine, int n_coarse, const int* __restrict__ coarse, const real* u,
    const real* __restrict__ state, const real* __restrict__ start, real* out, real gamma,
    real limit, real weight) {
    constexpr int NV = DIM + 2;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_fine) return;
    const int c = coarse[i];
    real w[NV], change[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        w[v] = u[v * n_fine + i];
        change[v] = weight * (state[v * n_coarse + c] - start[v * n_coarse + c]);
    }
    bool bad;
    const real alpha = positive_fraction<real, DIM>(
        w, change, bounded_fraction<real, NV>(w, change, limit), gamma, bad);
#pragma unroll
    for (int v = 0; v < NV; ++v) out[v * n_fine + i] = bad ? w[v] : w[v] + alpha * change[v];
}

// out = new unless a cell of the step went bad (bad_cell[0] != no_bad), else old.
template <typename real>
__global__ void __launch_bounds__(256) select_kernel(
    int n, const int* __restrict__ bad_cell, int no_bad, const real* __restrict__ new_state,
    const real* __restrict__ old_state, real* __restrict__ out) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    out[i] = bad_cell[0] == no_bad ? new_state[i] : old_state[i];
}

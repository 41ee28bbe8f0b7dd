// The transfers of the multigrid cycle: the device twin of the array code of
// gpusolver/solvers/fv/multigrid.py (Multigrid._restrict, _prolong, _smooth).
//
// States and residuals are (DIM + 2, n) arrays of conserved variables, variable-major;
// coarse[i] is the coarse cell of fine cell i.

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

// out = u + (state - start) of each cell's coarse cell, where that is a valid state
// (finite, positive density and pressure); u elsewhere. out may be u.
template <typename real, int DIM>
__global__ void __launch_bounds__(256) prolong_kernel(
    int n_fine, int n_coarse, const int* __restrict__ coarse, const real* u,
    const real* __restrict__ state, const real* __restrict__ start, real* out, real gamma) {
    constexpr int NV = DIM + 2;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_fine) return;
    const int c = coarse[i];
    real w[NV];
    bool finite = true;
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        w[v] = u[v * n_fine + i] + (state[v * n_coarse + c] - start[v * n_coarse + c]);
        finite = finite && isfinite(w[v]);
    }
    real kinetic = 0;
#pragma unroll
    for (int d = 0; d < DIM; ++d) kinetic += (w[1 + d] / w[0]) * (w[1 + d] / w[0]);
    const real p = (gamma - real(1)) * (w[NV - 1] - real(0.5) * w[0] * kinetic);
    if (finite && w[0] > 0 && p > 0) {
#pragma unroll
        for (int v = 0; v < NV; ++v) out[v * n_fine + i] = w[v];
    } else if (out != u) {
#pragma unroll
        for (int v = 0; v < NV; ++v) out[v * n_fine + i] = u[v * n_fine + i];
    }
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

// LU-SGS sweeps, one launch per wavefront level (hyperplane): the device twin of
// gpusolver/solvers/fv/lusgs.py (LUSGSOperator, the NumPy reference).
//
// One thread per cell of the level. A cell's upstream neighbours (lower plan index in
// the forward sweep, higher in the backward one) lie in earlier levels, so one
// launch per level reproduces the sequential sweep exactly:
//   forward:  out_i = (rhs_i - S_i) / D_i
//   backward: out_i = base_i - S_i / D_i
//   S_i = 1/2 sum_upstream A_f ((dF/dU)(W_j) . n  out_j - lambda_f out_j)
// Slot tables are [c * width + k] (normals [(d * n_cells + c) * width + k]); an unused
// slot names the cell itself, so the strict upstream test skips it.

template <typename real, int DIM>
__device__ __forceinline__ void flux_jvp(const real* __restrict__ w, int n_cells, int j,
                                         const real* du, const real n[DIM], real gamma,
                                         real out[DIM + 2]) {
    constexpr int P = DIM + 1;
    const real rho = w[j], p = w[P * n_cells + j];
    real velocity[DIM], q2 = 0, un = 0, v_dm = 0, dm_n = 0;
#pragma unroll
    for (int d = 0; d < DIM; ++d) {
        velocity[d] = w[(1 + d) * n_cells + j];
        q2 += velocity[d] * velocity[d];
        un += velocity[d] * n[d];
        v_dm += velocity[d] * du[1 + d];
        dm_n += du[1 + d] * n[d];
    }
    const real d_p = (gamma - real(1)) * (du[P] - v_dm + real(0.5) * q2 * du[0]);
    const real d_un = (dm_n - un * du[0]) / rho;
    const real energy = p / (gamma - real(1)) + real(0.5) * rho * q2;
    out[0] = rho * d_un + un * du[0];
#pragma unroll
    for (int d = 0; d < DIM; ++d) out[1 + d] = du[1 + d] * un + rho * velocity[d] * d_un + d_p * n[d];
    out[P] = (du[P] + d_p) * un + (energy + p) * d_un;
}

template <typename real, int DIM, bool BACKWARD>
__global__ void __launch_bounds__(256) sweep_kernel(
    const int* __restrict__ cells, int n_level, int n_cells, int width,
    const int* __restrict__ neighbour, const real* __restrict__ normal,
    const real* __restrict__ area, const real* __restrict__ lambda,
    const real* __restrict__ w, const real* __restrict__ diagonal,
    const real* __restrict__ base, real* out, real gamma) {
    constexpr int NV = DIM + 2;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_level) return;
    const int c = cells[i];
    real sum[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v) sum[v] = 0;
    for (int k = 0; k < width; ++k) {
        const int s = c * width + k;
        const int j = neighbour[s];
        if (BACKWARD ? j <= c : j >= c) continue;
        real n[DIM], du[NV], change[NV];
#pragma unroll
        for (int d = 0; d < DIM; ++d) n[d] = normal[(d * n_cells + c) * width + k];
#pragma unroll
        for (int v = 0; v < NV; ++v) du[v] = out[v * n_cells + j];
        flux_jvp<real, DIM>(w, n_cells, j, du, n, gamma, change);
        const real a = area[s], l = lambda[s];
#pragma unroll
        for (int v = 0; v < NV; ++v) sum[v] += (change[v] - l * du[v]) * a;
    }
    const real d = diagonal[c];
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        const real off = real(0.5) * sum[v];
        out[v * n_cells + c] = BACKWARD ? base[v * n_cells + c] - off / d
                                        : (base[v * n_cells + c] - off) / d;
    }
}

// LU-SGS sweeps, one launch per wavefront level (hyperplane): the device twin of
// gpusolver/solvers/fv/lusgs.py (LUSGSOperator, the NumPy reference).
//
// One thread per cell of the level. A cell's upstream neighbours (lower plan index in
// the forward sweep, higher in the backward one) lie in earlier levels, so one
// launch per level reproduces the sequential sweep exactly:
//   forward:  out_i = (base_i - S_i) / D_i             (base: the right-hand side)
//   backward: out_i = base_i - S_i / D_i               (base: the forward result; may
//                                                       be out itself, swept in place)
//   S_i = 1/2 sum_upstream ((dF/dU)(U_j) . n A_f - lambda_f A_f) out_j
//   lambda_f A_f = omega s_c + viscous_factor s_v,
// with s_c, s_v the face's convective and viscous wave speeds times area, as the
// residual's face kernel stores them (speed[f], speed[n_faces + f]). Boundary faces
// enter the diagonal only. The backward sweep can also write the update u_new = u +
// alpha out, relaxed per cell as gpusolver/integrators/relaxation.py does (alpha < 1
// where density or total energy would change by more than the fraction `limit`, halved
// while the new density or pressure is not positive, and 0 after RELAX_HALVINGS halvings;
// such cells counted into relaxed[0]), and report the first cell whose new state is not
// finite (atomicMin into bad_cell).
//
// The sweep's tables are packed in sweep order (position i of all levels in turn):
// cells[i], and per slot k < WIDTH (at [k * n_rows + i]; n_rows cells are swept, a mesh
// part's own cells: fewer than n_cells) the upstream neighbour (-1: none), its face and
// the normal times area out of the cell ([(d * WIDTH + k) * n_rows + i]; the flux
// Jacobian product is linear in it). A level is latency-bound (few cells, each a chain
// of dependent loads), so every load a thread needs is one step from its position.

#include "../../../integrators/kernels/relaxation.cuh"

template <typename real, int DIM>
__device__ __forceinline__ void flux_jvp(const real* __restrict__ u, int n_cells, int j,
                                         const real* du, const real n[DIM], real gamma,
                                         real out[DIM + 2]) {
    constexpr int P = DIM + 1;
    const real rho = u[j], energy = u[P * n_cells + j];
    real velocity[DIM], q2 = 0, un = 0, v_dm = 0, dm_n = 0;
#pragma unroll
    for (int d = 0; d < DIM; ++d) {
        velocity[d] = u[(1 + d) * n_cells + j] / rho;
        q2 += velocity[d] * velocity[d];
        un += velocity[d] * n[d];
        v_dm += velocity[d] * du[1 + d];
        dm_n += du[1 + d] * n[d];
    }
    const real p = (gamma - real(1)) * (energy - real(0.5) * rho * q2);
    const real d_p = (gamma - real(1)) * (du[P] - v_dm + real(0.5) * q2 * du[0]);
    const real d_un = (dm_n - un * du[0]) / rho;
    out[0] = rho * d_un + un * du[0];
#pragma unroll
    for (int d = 0; d < DIM; ++d) out[1 + d] = du[1 + d] * un + rho * velocity[d] * d_un + d_p * n[d];
    out[P] = (du[P] + d_p) * un + (energy + p) * d_un;
}

template <typename real, int DIM, int WIDTH, bool BACKWARD, bool VISCOUS>
__global__ void __launch_bounds__(256) sweep_kernel(
    int first, int last, int n_cells, int n_faces, int n_rows, const int* __restrict__ cells,
    const int* __restrict__ upstream, const int* __restrict__ face,
    const real* __restrict__ normal_area, const real* __restrict__ speed, real omega,
    real viscous_factor, const real* __restrict__ u, const real* __restrict__ diagonal,
    const real* base, real* out, real* __restrict__ u_new, int* __restrict__ bad_cell,
    int* __restrict__ relaxed, real limit, real gamma) {
    constexpr int NV = DIM + 2;
    const int i = first + blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= last) return;
    const int c = cells[i];
    real sum[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v) sum[v] = 0;
#pragma unroll
    for (int k = 0; k < WIDTH; ++k) {
        const int j = upstream[k * n_rows + i];
        if (j < 0) continue;
        const int f = face[k * n_rows + i];
        real na[DIM], du[NV], change[NV];
#pragma unroll
        for (int d = 0; d < DIM; ++d) na[d] = normal_area[(d * WIDTH + k) * n_rows + i];
#pragma unroll
        for (int v = 0; v < NV; ++v) du[v] = out[v * n_cells + j];
        flux_jvp<real, DIM>(u, n_cells, j, du, na, gamma, change);  // linear in the normal
        const real lambda = omega * speed[f] + (VISCOUS ? viscous_factor * speed[n_faces + f] : real(0));
#pragma unroll
        for (int v = 0; v < NV; ++v) sum[v] += change[v] - lambda * du[v];
    }
    const real d = diagonal[c];
    real value[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        const real off = real(0.5) * sum[v];
        value[v] = BACKWARD ? base[v * n_cells + c] - off / d : (base[v * n_cells + c] - off) / d;
        out[v * n_cells + c] = value[v];
    }
    if (!BACKWARD || u_new == nullptr) return;
    real start[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v) start[v] = u[v * n_cells + c];
    bool bad;
    const real alpha = positive_fraction<real, DIM>(
        start, value, bounded_fraction<real, NV>(start, value, limit), gamma, bad);
#pragma unroll
    for (int v = 0; v < NV; ++v) u_new[v * n_cells + c] = start[v] + alpha * value[v];
    if (bad) atomicMin(bad_cell, c);
    else if (alpha < real(1)) atomicAdd(relaxed, 1);
}

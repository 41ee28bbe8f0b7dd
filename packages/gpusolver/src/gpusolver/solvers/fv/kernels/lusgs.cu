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
// of dependent loads), so every load a thread needs is one step from its position; on
// the agglomerated cells of multigrid's coarse levels (17-30 slots) LANES threads share
// a cell (lanes.cuh: a warp or a part of one on the GPU), each taking every LANES-th
// slot, so that a level waits for a few slots' loads instead of the widest cell's chain
// of them.
//
// Line-implicit sweeps (levels of whole lines, gpusolver/solvers/fv/lusgs.py): a line's
// cells share a level and the coupling between them is the block tridiagonal T (the
// diagonal D, and between neighbours along the line their off-diagonal blocks
// 1/2 ((dF/dU)(U_j) . n A_f - lambda_f A_f)) solved exactly:
//   forward:  T out = base - S                 backward:  out = base - T^-1 S.
// line_factor_kernel factorises every line's T once a step (block LU, a thread a line,
// all levels in one launch). Per level, sweep_kernel<LINE> writes each cell's base - S
// (forward) or S (backward) into `line_rhs` (a scratch array), then line_kernel
// substitutes forward and back along each line (a thread a line) and writes the change
// (and the update).

#include "../../../integrators/kernels/relaxation.cuh"
#include "lanes.cuh"

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

// u_new = u + alpha change at cell c, relaxed; a non-finite state reported, relaxed cells
// counted.
template <typename real, int DIM>
__device__ __forceinline__ void relaxed_store(const real* __restrict__ u, int n_cells, int c,
                                              const real change[DIM + 2], real* __restrict__ u_new,
                                              int* __restrict__ bad_cell, int* __restrict__ relaxed,
                                              real limit, real gamma) {
    constexpr int NV = DIM + 2;
    real start[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v) start[v] = u[v * n_cells + c];
    bool bad;
    const real alpha = positive_fraction<real, DIM>(
        start, change, bounded_fraction<real, NV>(start, change, limit), gamma, bad);
#pragma unroll
    for (int v = 0; v < NV; ++v) u_new[v * n_cells + c] = start[v] + alpha * change[v];
    if (bad) atomicMin(bad_cell, c);
    else if (alpha < real(1)) atomicAdd(relaxed, 1);
}

template <typename real, int DIM, int WIDTH, bool BACKWARD, bool VISCOUS, bool LINE = false,
          int LANES = 1>
__global__ void __launch_bounds__(256) sweep_kernel(
    int first, int last, int n_cells, int n_faces, int n_rows, const int* __restrict__ cells,
    const int* __restrict__ upstream, const int* __restrict__ face,
    const real* __restrict__ normal_area, const real* __restrict__ speed, real omega,
    real viscous_factor, const real* __restrict__ u, const real* __restrict__ diagonal,
    const real* base, real* out, real* __restrict__ u_new, int* __restrict__ bad_cell,
    int* __restrict__ relaxed, real limit, real gamma, real* __restrict__ line_rhs) {
    constexpr int NV = DIM + 2;
    const int thread = blockIdx.x * blockDim.x + threadIdx.x;
    const int i = first + thread / LANES, lane = thread % LANES;
    const bool active = i < last;
    if (LANES == 1 && !active) return;  // with lanes every lane of the warp adds its sums
    const int c = active ? cells[i] : 0;
    real sum[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v) sum[v] = 0;
#pragma unroll
    for (int k = lane; active && k < WIDTH; k += LANES) {
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
    if constexpr (LANES > 1) {
#pragma unroll
        for (int v = 0; v < NV; ++v) sum[v] = lanes_sum<real, LANES>(sum[v]);
        if (lane != 0 || !active) return;
    }
    if (LINE) {  // the line's solve divides
#pragma unroll
        for (int v = 0; v < NV; ++v) {
            const real off = real(0.5) * sum[v];
            line_rhs[v * n_cells + c] = BACKWARD ? off : base[v * n_cells + c] - off;
        }
        return;
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
    relaxed_store<real, DIM>(u, n_cells, c, value, u_new, bad_cell, relaxed, limit, gamma);
}

// The block coupling a line's cell to its neighbour j across face f (normal times area
// `na` out of the cell): 1/2 ((dF/dU)(U_j) . na - lambda_f A_f), column by column.
template <typename real, int DIM, bool VISCOUS>
__device__ __forceinline__ void line_block(const real* __restrict__ u, int n_cells, int j,
                                           const real na[DIM], int f,
                                           const real* __restrict__ speed, int n_faces,
                                           real omega, real viscous_factor, real gamma,
                                           real block[DIM + 2][DIM + 2]) {
    constexpr int NV = DIM + 2;
    const real lambda = omega * speed[f] + (VISCOUS ? viscous_factor * speed[n_faces + f] : real(0));
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        real unit[NV], column[NV];
#pragma unroll
        for (int a = 0; a < NV; ++a) unit[a] = a == v ? real(1) : real(0);
        flux_jvp<real, DIM>(u, n_cells, j, unit, na, gamma, column);
#pragma unroll
        for (int a = 0; a < NV; ++a) block[a][v] = real(0.5) * (column[a] - lambda * unit[a]);
    }
}

// Solve m x = b in place (Gaussian elimination, partial pivoting): b becomes m^-1 b.
template <typename real, int NV, int NC>
__device__ __forceinline__ void block_solve(real m[NV][NV], real b[NV][NC]) {
#pragma unroll
    for (int k = 0; k < NV; ++k) {
        int best = k;
#pragma unroll
        for (int i = k + 1; i < NV; ++i)
            if (fabs(m[i][k]) > fabs(m[best][k])) best = i;
#pragma unroll
        for (int i = k + 1; i < NV; ++i) {  // swap rows k and best (unrolled: registers)
            if (i != best) continue;
#pragma unroll
            for (int c = 0; c < NV; ++c) {
                const real t = m[k][c]; m[k][c] = m[i][c]; m[i][c] = t;
            }
#pragma unroll
            for (int c = 0; c < NC; ++c) {
                const real t = b[k][c]; b[k][c] = b[i][c]; b[i][c] = t;
            }
        }
        const real inverse = real(1) / m[k][k];
#pragma unroll
        for (int i = 0; i < NV; ++i) {
            if (i == k) continue;
            const real factor = m[i][k] * inverse;
#pragma unroll
            for (int c = 0; c < NV; ++c) m[i][c] -= factor * m[k][c];
#pragma unroll
            for (int c = 0; c < NC; ++c) b[i][c] -= factor * b[k][c];
        }
    }
#pragma unroll
    for (int i = 0; i < NV; ++i) {
        const real inverse = real(1) / m[i][i];
#pragma unroll
        for (int c = 0; c < NC; ++c) b[i][c] *= inverse;
    }
}

// The lines' block LU, once a step for both sweeps: every line of the forward sweep's
// table (a thread a line, all levels in one launch; lines of one cell need none and
// have no factors). The k-th cell of a longer line has three row-major NV x NV blocks
// in `blocks` from [3 (origin[line] + k) NV NV] (origin: where the line's factors start
// among those of the lines longer than one cell): L (the coupling to the cell before
// it along the line; unused at a line's start), M^-1 = (D - L R_before)^-1 and R =
// M^-1 U (U: the coupling to the cell after it, 0 at a line's end). line_na holds each
// position's normal times area towards the cell before it (0 at a line's start).
template <typename real, int DIM, bool VISCOUS>
__global__ void __launch_bounds__(128) line_factor_kernel(
    int n_lines, int n_cells, int n_faces, int n_rows, const int* __restrict__ line_start,
    const int* __restrict__ origin, const int* __restrict__ cells,
    const int* __restrict__ line_face,
    const real* __restrict__ line_na, const real* __restrict__ speed, real omega,
    real viscous_factor, const real* __restrict__ u, const real* __restrict__ diagonal,
    real* __restrict__ blocks, real gamma) {
    constexpr int NV = DIM + 2, NN = NV * NV;
    const int line = blockIdx.x * blockDim.x + threadIdx.x;
    if (line >= n_lines) return;
    const int begin = line_start[line], end = line_start[line + 1];
    if (end - begin < 2) return;
    real ratio[NV][NV];  // the previous position's R
    for (int p = begin; p < end; ++p) {
        const int c = cells[p];
        real* __restrict__ factors = blocks + size_t(3) * NN * (origin[line] + (p - begin));
        real m[NV][NV];
#pragma unroll
        for (int a = 0; a < NV; ++a)
#pragma unroll
            for (int b = 0; b < NV; ++b) m[a][b] = a == b ? diagonal[c] : real(0);
        if (p > begin) {  // m -= L R_before
            real na[DIM], coupling[NV][NV];
#pragma unroll
            for (int d = 0; d < DIM; ++d) na[d] = line_na[d * n_rows + p];
            line_block<real, DIM, VISCOUS>(u, n_cells, cells[p - 1], na, line_face[p], speed,
                                           n_faces, omega, viscous_factor, gamma, coupling);
#pragma unroll
            for (int a = 0; a < NV; ++a)
#pragma unroll
                for (int k = 0; k < NV; ++k) {
                    factors[a * NV + k] = coupling[a][k];
#pragma unroll
                    for (int b = 0; b < NV; ++b) m[a][b] -= coupling[a][k] * ratio[k][b];
                }
        }
        real solved[NV][2 * NV];  // [U | I], solved in place into [R | M^-1]
        if (p + 1 < end) {  // U: towards the next cell, against its normal
            real na[DIM], coupling[NV][NV];
#pragma unroll
            for (int d = 0; d < DIM; ++d) na[d] = -line_na[d * n_rows + p + 1];
            line_block<real, DIM, VISCOUS>(u, n_cells, cells[p + 1], na, line_face[p + 1],
                                           speed, n_faces, omega, viscous_factor, gamma,
                                           coupling);
#pragma unroll
            for (int a = 0; a < NV; ++a)
#pragma unroll
                for (int b = 0; b < NV; ++b) solved[a][b] = coupling[a][b];
        } else {
#pragma unroll
            for (int a = 0; a < NV; ++a)
#pragma unroll
                for (int b = 0; b < NV; ++b) solved[a][b] = 0;
        }
#pragma unroll
        for (int a = 0; a < NV; ++a)
#pragma unroll
            for (int b = 0; b < NV; ++b) solved[a][NV + b] = a == b ? real(1) : real(0);
        block_solve<real, NV, 2 * NV>(m, solved);
#pragma unroll
        for (int a = 0; a < NV; ++a)
#pragma unroll
            for (int b = 0; b < NV; ++b) {
                ratio[a][b] = solved[a][b];
                factors[NN + a * NV + b] = solved[a][NV + b];
                factors[2 * NN + a * NV + b] = solved[a][b];
            }
    }
}

// Lines first_line..last_line of a level: T y = rhs with the factors of
// line_factor_kernel (rhs from sweep_kernel<LINE>, overwritten by the forward
// substitution's values), then out = y (forward) or base - y (backward, with the update).
// A line's factors start at `origin[line]` (line_factor_kernel's; the backward sweep's
// lines are the forward's, in another order of lines). A line of one cell divides by
// its diagonal. Each position's loads are issued a position ahead: a
// thread's chain is a line's length long.
template <typename real, int DIM, bool BACKWARD>
__global__ void __launch_bounds__(128) line_kernel(
    int first_line, int last_line, int n_cells, const int* __restrict__ line_start,
    const int* __restrict__ origin, const int* __restrict__ cells, const real* __restrict__ u,
    const real* __restrict__ diagonal, const real* __restrict__ blocks,
    real* __restrict__ rhs, const real* base, real* out, real* __restrict__ u_new,
    int* __restrict__ bad_cell, int* __restrict__ relaxed, real limit, real gamma) {
    constexpr int NV = DIM + 2, NN = NV * NV;
    const int line = first_line + blockIdx.x * blockDim.x + threadIdx.x;
    if (line >= last_line) return;
    const int begin = line_start[line], end = line_start[line + 1];
    if (end - begin == 1) {
        const int c = cells[begin];
        const real d = diagonal[c];
        real change[NV];
#pragma unroll
        for (int v = 0; v < NV; ++v) {
            const real y = rhs[v * n_cells + c] / d;
            change[v] = BACKWARD ? base[v * n_cells + c] - y : y;
            out[v * n_cells + c] = change[v];
        }
        if (BACKWARD && u_new != nullptr)
            relaxed_store<real, DIM>(u, n_cells, c, change, u_new, bad_cell, relaxed, limit, gamma);
        return;
    }
    const real* __restrict__ factors = blocks + size_t(3) * NN * origin[line];
    // forward substitution, y_p = M_p^-1 (rhs_p - L_p y_before)
    real before[NV], r[NV], lower[NN], inverse[NN];
    int c = cells[begin];
#pragma unroll
    for (int a = 0; a < NV; ++a) { before[a] = 0; r[a] = rhs[a * n_cells + c]; }
#pragma unroll
    for (int k = 0; k < NN; ++k) { lower[k] = 0; inverse[k] = factors[NN + k]; }
    for (int p = begin; p < end; ++p) {
        const int here = c;
        real r_next[NV], lower_next[NN], inverse_next[NN];
        if (p + 1 < end) {  // the next position's loads, before this one's arithmetic
            c = cells[p + 1];
            const real* next = factors + size_t(3) * NN * (p + 1 - begin);
#pragma unroll
            for (int a = 0; a < NV; ++a) r_next[a] = rhs[a * n_cells + c];
#pragma unroll
            for (int k = 0; k < NN; ++k) { lower_next[k] = next[k]; inverse_next[k] = next[NN + k]; }
        }
#pragma unroll
        for (int a = 0; a < NV; ++a)
#pragma unroll
            for (int k = 0; k < NV; ++k) r[a] -= lower[a * NV + k] * before[k];
#pragma unroll
        for (int a = 0; a < NV; ++a) {
            real y = 0;
#pragma unroll
            for (int k = 0; k < NV; ++k) y += inverse[a * NV + k] * r[k];
            before[a] = y;
            rhs[a * n_cells + here] = y;
        }
#pragma unroll
        for (int a = 0; a < NV; ++a) r[a] = r_next[a];
#pragma unroll
        for (int k = 0; k < NN; ++k) { lower[k] = lower_next[k]; inverse[k] = inverse_next[k]; }
    }
    // back substitution, x_p = y_p - R_p x_after
    real after[NV], y[NV], ratio[NN], start[NV];
    c = cells[end - 1];
#pragma unroll
    for (int a = 0; a < NV; ++a) {
        after[a] = 0;
        y[a] = rhs[a * n_cells + c];
        start[a] = BACKWARD ? base[a * n_cells + c] : real(0);
    }
#pragma unroll
    for (int k = 0; k < NN; ++k) ratio[k] = 0;
    for (int p = end - 1; p >= begin; --p) {
        const int here = c;
        real y_next[NV], ratio_next[NN], start_next[NV];
        if (p > begin) {
            c = cells[p - 1];
            const real* next = factors + size_t(3) * NN * (p - 1 - begin) + 2 * NN;
#pragma unroll
            for (int a = 0; a < NV; ++a) {
                y_next[a] = rhs[a * n_cells + c];
                start_next[a] = BACKWARD ? base[a * n_cells + c] : real(0);
            }
#pragma unroll
            for (int k = 0; k < NN; ++k) ratio_next[k] = next[k];
        }
        real change[NV];
#pragma unroll
        for (int a = 0; a < NV; ++a) {
            real x = y[a];
#pragma unroll
            for (int b = 0; b < NV; ++b) x -= ratio[a * NV + b] * after[b];
            change[a] = BACKWARD ? start[a] - x : x;
            out[a * n_cells + here] = change[a];
            y[a] = x;
        }
#pragma unroll
        for (int a = 0; a < NV; ++a) { after[a] = y[a]; y[a] = y_next[a]; start[a] = start_next[a]; }
#pragma unroll
        for (int k = 0; k < NN; ++k) ratio[k] = ratio_next[k];
        if (BACKWARD && u_new != nullptr)
            relaxed_store<real, DIM>(u, n_cells, here, change, u_new, bad_cell, relaxed, limit, gamma);
    }
}

// The cell-centred finite-volume residual of the Euler equations as three kernels (and
// the first-order flux's Jacobians),
// the device twin of gpusolver/solvers/fv/discretisation.py (the NumPy reference):
//
//   cell_gradients  one thread per cell of a range [first, last): primitive state,
//                   least-squares or Green-Gauss gradient over the cell's face
//                   slots, neighbour minimum and maximum, Venkatakrishnan's limiter;
//                   writes the limited gradient (and the limiter values); or, for
//                   the JST scheme (solvers/fv/jst.py), the undivided Laplacian, the
//                   pressure sensor and the neighbour count;
//   face_flux       one thread per face: reconstruction from both cells (ghost
//                   state on the boundary, by condition code), positivity
//                   fall-back, Riemann flux (Roe, Rusanov or AUSMPW+: a template
//                   argument; JST: its central flux between cells) minus the laminar viscous flux (template flag), times area; stores it per face (gather), or adds it
//                   into the cells with atomics, or with plain updates (faces of one
//                   colour); optionally the face's wave speeds times area
//                   (convective |u.n| + c, then the viscous lambda_v);
//   face_jacobian   one thread per face: the first-order flux's Jacobians in both
//                   cells' states by one-sided differences (the Newton-Krylov
//                   preconditioner's blocks, solvers/fv/jacobian.py);
//   cell_update     one thread per cell of [0, n_active) (a mesh part's own cells:
//                   its halo is not updated): sums its face slots (gather), and writes
//                   the residual, the RMS sums of the rate, the local time step and
//                   the LU-SGS diagonal, or performs one Runge-Kutta stage with the
//                   divergence check fused in (and, for steady steps, the stage's
//                   change from the step's start scaled back where it would leave a
//                   non-positive density or pressure, such cells counted).
//
// Layout: Structure-of-Arrays in the plan's order, variable-major (W[v * n + i]);
// gradients [(v * DIM + d) * n_cells + c]; the slot table is [k * n_cells + c],
// slot s < n_faces the cell is the left of face s, n_faces <= s < 2 n_faces the
// right of face s - n_faces, 2 n_faces unused. fp32 and fp64 from one source.

#include "../../../physics/kernels/euler.cuh"
#include "../../../physics/kernels/boundary.cuh"
#include "../../../physics/kernels/viscous.cuh"
#include "../../../integrators/kernels/relaxation.cuh"
#include "block_sums.cuh"
#include "faces.cuh"

// enum Gradient (JST_DIFFERENCES: the JST scheme's cell pass instead of gradients),
// enum Limiter and enum Accumulation (of face fluxes) come from ids.cuh.

// Everything the kernels read of a mesh's faces and boundaries.
template <typename real>
struct Faces {
    const int* left;
    const int* right;
    const real* normal;        // [d * n_faces + f]
    const real* area;
    const real* offset_left;   // face centre minus left centroid [d * n_faces + f]
    const real* offset_right;  // face centre minus right centroid (interior faces)
    const int* bc_code;        // per boundary face b = f - n_interior
    const real* bc_value;      // [v * n_boundary + b]: outside state or wall values
    const int* bc_partner;     // periodic: partner face (global index)
    int n_faces;
    int n_interior;
};

// Ghost state of boundary face b from the interior state w (not for PERIODIC).
template <typename real, int DIM>
__device__ __forceinline__ void ghost_state(const Faces<real>& F, int b,
                                            const real w[Vars<DIM>::N], const real n[DIM],
                                            real gamma, real g[Vars<DIM>::N]) {
    const int nb = F.n_faces - F.n_interior;
    real value[Vars<DIM>::N];
#pragma unroll
    for (int v = 0; v < Vars<DIM>::N; ++v) value[v] = F.bc_value[v * nb + b];
    boundary_ghost<real, DIM>(F.bc_code[b], value, w, n, gamma, g);
}

template <typename real, int DIM>
__device__ __forceinline__ void load_normal(const Faces<real>& F, int f, real n[DIM]) {
#pragma unroll
    for (int d = 0; d < DIM; ++d) n[d] = F.normal[d * F.n_faces + f];
}

// ---------------------------------------------------------------- gradients and limiter
// The primitive state across face f from cell c (face value on the boundary: the mean
// of the cell and its ghost, as the NumPy gradients use).
template <typename real, int DIM>
__device__ void neighbour_state(const real* __restrict__ U, int n_cells, const Faces<real>& F,
                                int f, bool is_right, const real w[Vars<DIM>::N], real gamma,
                                real out[Vars<DIM>::N]) {
    constexpr int NV = Vars<DIM>::N;
    if (f < F.n_interior) {
        primitive<real, DIM>(U, n_cells, is_right ? F.left[f] : F.right[f], gamma, out);
        return;
    }
    const int b = f - F.n_interior;
    real ghost[NV];
    if (F.bc_code[b] == PERIODIC) {
        primitive<real, DIM>(U, n_cells, F.left[F.bc_partner[b]], gamma, ghost);
    } else {
        real n[DIM];
        load_normal<real, DIM>(F, f, n);
        ghost_state<real, DIM>(F, b, w, n, gamma, ghost);
    }
#pragma unroll
    for (int v = 0; v < NV; ++v) out[v] = real(0.5) * (w[v] + ghost[v]);
}

// ---------------------------------------------------------------- JST
// The cell across face f from its cell on side is_right: the other cell of an interior
// face, the partner face's cell across a periodic boundary, -1 elsewhere.
template <typename real>
__device__ __forceinline__ int cell_across(const Faces<real>& F, int f, bool is_right) {
    if (f < F.n_interior) return is_right ? F.left[f] : F.right[f];
    const int b = f - F.n_interior;
    return F.bc_code[b] == PERIODIC ? F.left[F.bc_partner[b]] : -1;
}

// Conserved state of the primitive state w.
template <typename real, int DIM>
__device__ __forceinline__ void conserved(const real w[Vars<DIM>::N], real gamma,
                                          real u[Vars<DIM>::N]) {
    real kinetic = 0;
    u[0] = w[0];
#pragma unroll
    for (int d = 0; d < DIM; ++d) {
        u[1 + d] = w[0] * w[1 + d];
        kinetic += w[1 + d] * w[1 + d];
    }
    u[DIM + 1] = w[DIM + 1] / (gamma - real(1)) + real(0.5) * w[0] * kinetic;
}

// jst.differences per cell, across every face (to the ghost state of the cell on
// boundary faces that are not periodic): out[v * n + c] the undivided Laplacian
// sum (U_nb - U_c) of the conserved variables, out[NV * n + c] the pressure sensor
// |sum (p_nb - p_c)| / sum (p_nb + p_c), out[(NV + 1) * n + c] the number of faces,
// out[(NV + 2) * n + c] the sum of (|u . n| + c) A of the faces' mean states.
template <typename real, int DIM>
__device__ void jst_differences(const real* __restrict__ U, int n_cells, const Faces<real>& F,
                                const int* __restrict__ slots, int width,
                                real* __restrict__ out, real gamma, int first, int last) {
    constexpr int NV = Vars<DIM>::N;
    const int c = first + blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= last) return;
    real u[NV], laplacian[NV], w[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        u[v] = U[v * n_cells + c];
        laplacian[v] = 0;
    }
    primitive<real, DIM>(U, n_cells, c, gamma, w);
    const real p = w[DIM + 1];
    real change = 0, total = 0, radius = 0;
    int count = 0;
    for_each_face(slots, width, n_cells, F.n_faces, c, [&](int f, bool is_right) {
        const int nb = cell_across(F, f, is_right);
        real other[NV], w_other[NV], n[DIM], mean[NV];
        load_normal<real, DIM>(F, f, n);
        if (nb >= 0) {
#pragma unroll
            for (int v = 0; v < NV; ++v) other[v] = U[v * n_cells + nb];
            primitive<real, DIM>(U, n_cells, nb, gamma, w_other);
        } else {
            ghost_state<real, DIM>(F, f - F.n_interior, w, n, gamma, w_other);
            conserved<real, DIM>(w_other, gamma, other);
        }
#pragma unroll
        for (int v = 0; v < NV; ++v) {
            laplacian[v] += other[v] - u[v];
            mean[v] = real(0.5) * (w[v] + w_other[v]);
        }
        change += w_other[DIM + 1] - p;
        total += w_other[DIM + 1] + p;
        radius += (fabs(normal_velocity<real, DIM>(mean, n))
                   + sound_speed(mean[0], mean[DIM + 1], gamma)) * F.area[f];
        ++count;
    });
#pragma unroll
    for (int v = 0; v < NV; ++v) out[v * n_cells + c] = laplacian[v];
    out[NV * n_cells + c] = fabs(change) / total;
    out[(NV + 1) * n_cells + c] = real(count);
    out[(NV + 2) * n_cells + c] = radius;
}

// x to the power p, the exponent of JST's stretching factor (a square root at the
// shipped 0.5).
template <typename real>
__device__ __forceinline__ real stretching_power(real x, real p) {
    return p == real(0.5) ? sqrt(x) : pow(x, p);
}

// jst.central_flux per unit area between cells l and r with primitive states wl, wr
// across a face of area a; cells holds the JST cell pass (jst_differences); stretching:
// the exponent of the stretching factor (jst.stretching), 0 for none.
template <typename real, int DIM>
__device__ void jst_flux(const real* __restrict__ U, const real* __restrict__ cells,
                         int n_cells, int l, int r, const real wl[Vars<DIM>::N],
                         const real wr[Vars<DIM>::N], const real n[DIM], real a, real gamma,
                         real k2, real k4, real stretching, real flux[Vars<DIM>::N]) {
    constexpr int NV = Vars<DIM>::N;
    real fl[NV], fr[NV], mean[NV];
    euler_flux<real, DIM>(wl, n, gamma, fl);
    euler_flux<real, DIM>(wr, n, gamma, fr);
#pragma unroll
    for (int v = 0; v < NV; ++v) mean[v] = real(0.5) * (wl[v] + wr[v]);
    const real radius = fabs(normal_velocity<real, DIM>(mean, n))
                        + sound_speed(mean[0], mean[DIM + 1], gamma);
    real speed = radius;
    if (stretching > real(0)) {
        const real face = real(4) * radius * a;
        const real phi_l = stretching_power(cells[(NV + 2) * n_cells + l] / face, stretching);
        const real phi_r = stretching_power(cells[(NV + 2) * n_cells + r] / face, stretching);
        speed *= real(4) * phi_l * phi_r / (phi_l + phi_r);
    }
    const real count_l = cells[(NV + 1) * n_cells + l], count_r = cells[(NV + 1) * n_cells + r];
    const real s2 = real(3) * (count_l + count_r) / (count_l * count_r);
    const real eps2 = k2 * real(0.5) * (cells[NV * n_cells + l] + cells[NV * n_cells + r]) * s2;
    const real eps4 = fmax(real(0), k4 - eps2) * (real(0.25) * s2 * s2);
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        const real dissipation = eps2 * (U[v * n_cells + r] - U[v * n_cells + l])
                                 - eps4 * (cells[v * n_cells + r] - cells[v * n_cells + l]);
        flux[v] = real(0.5) * (fl[v] + fr[v]) - speed * dissipation;
    }
}

template <typename real, int DIM, int GRADIENT, int LIMITER>
__device__ void cell_gradients(const real* __restrict__ U, int n_cells, Faces<real> F,
                               const int* __restrict__ slots, int width,
                               const real* __restrict__ coef_left,
                               const real* __restrict__ coef_right,
                               const real* __restrict__ volume,
                               const real* __restrict__ epsilon2, real* __restrict__ phi_io,
                               real* __restrict__ gradient, real* __restrict__ raw,
                               real gamma, int first, int last) {
    constexpr int NV = Vars<DIM>::N;
    if (GRADIENT == JST_DIFFERENCES) {
        jst_differences<real, DIM>(U, n_cells, F, slots, width, gradient, gamma, first, last);
        return;
    }
    const int c = first + blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= last) return;
    real w[NV], grad[NV][DIM], w_max[NV], w_min[NV];
    primitive<real, DIM>(U, n_cells, c, gamma, w);
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        w_max[v] = w_min[v] = w[v];
#pragma unroll
        for (int d = 0; d < DIM; ++d) grad[v][d] = 0;
    }
    // plain slot loops here and in the limiter below: for_each_face (faces.cuh) changes
    // the sm_90 code of four of this kernel's instantiations, which no GPU has timed
    const int unused = 2 * F.n_faces;
    for (int k = 0; k < width; ++k) {
        const int s = slots[k * n_cells + c];
        if (s == unused) break;
        bool is_right;
        const int f = slot_face(s, F.n_faces, &is_right);
        real wn[NV];
        neighbour_state<real, DIM>(U, n_cells, F, f, is_right, w, gamma, wn);
        if (GRADIENT == LEAST_SQUARES) {
            const real* coef = is_right ? coef_right : coef_left;
            real weight[DIM];
#pragma unroll
            for (int d = 0; d < DIM; ++d) weight[d] = coef[d * F.n_faces + f];
#pragma unroll
            for (int v = 0; v < NV; ++v) {
                const real jump = is_right ? w[v] - wn[v] : wn[v] - w[v];
#pragma unroll
                for (int d = 0; d < DIM; ++d) grad[v][d] += jump * weight[d];
            }
        } else {
            const real a = is_right ? -F.area[f] : F.area[f];
            real n[DIM];
            load_normal<real, DIM>(F, f, n);
#pragma unroll
            for (int v = 0; v < NV; ++v) {
                const real face = f < F.n_interior ? real(0.5) * (w[v] + wn[v]) : wn[v];
#pragma unroll
                for (int d = 0; d < DIM; ++d) grad[v][d] += face * (n[d] * a);
            }
        }
#pragma unroll
        for (int v = 0; v < NV; ++v) {
            w_max[v] = fmax(w_max[v], wn[v]);
            w_min[v] = fmin(w_min[v], wn[v]);
        }
    }
    if (GRADIENT == GREEN_GAUSS) {
        const real vol = volume[c];
#pragma unroll
        for (int v = 0; v < NV; ++v)
#pragma unroll
            for (int d = 0; d < DIM; ++d) grad[v][d] /= vol;
    }
    real phi[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v)
        phi[v] = LIMITER == FROZEN || LIMITER == RATCHET ? phi_io[v * n_cells + c] : real(1);
    if (LIMITER == VENKATAKRISHNAN || LIMITER == RATCHET) {
        real eps[NV];
#pragma unroll
        for (int v = 0; v < NV; ++v) eps[v] = epsilon2[v * n_cells + c];
        for (int k = 0; k < width; ++k) {
            const int s = slots[k * n_cells + c];
            if (s == unused) break;
            bool is_right;
            const int f = slot_face(s, F.n_faces, &is_right);
            const real* offsets = is_right ? F.offset_right : F.offset_left;
            real offset[DIM];
#pragma unroll
            for (int d = 0; d < DIM; ++d) offset[d] = offsets[d * F.n_faces + f];
#pragma unroll
            for (int v = 0; v < NV; ++v) {
                real d2 = 0;
#pragma unroll
                for (int d = 0; d < DIM; ++d) d2 += grad[v][d] * offset[d];
                if (d2 == 0) continue;
                const real d1 = (d2 > 0 ? w_max[v] : w_min[v]) - w[v];
                const real ratio = (d1 * d1 + eps[v] + real(2) * d1 * d2)
                                   / (d1 * d1 + real(2) * d2 * d2 + d1 * d2 + eps[v]);
                phi[v] = fmin(phi[v], ratio);
            }
        }
#pragma unroll
        for (int v = 0; v < NV; ++v) phi_io[v * n_cells + c] = phi[v];
    }
#pragma unroll
    for (int v = 0; v < NV; ++v)
#pragma unroll
        for (int d = 0; d < DIM; ++d) {
            gradient[(v * DIM + d) * n_cells + c] = grad[v][d] * phi[v];
            if (raw != nullptr) raw[(v * DIM + d) * n_cells + c] = grad[v][d];
        }
}

// ---------------------------------------------------------------- viscous flux
// Viscous flux (discretisation.viscous_flux): face gradients are the mean of the two
// cells' (unlimited) gradients with the jump along the centroid-to-centroid direction
// corrected; Sutherland's law at the mean face temperature, plus each face's eddy
// viscosity where a turbulence model gives one (Gas.viscous_flux's mu_t: the stress takes
// mu + mu_t, the heat flux mu / Pr + mu_t / Pr_t).
template <typename real>
struct Viscosity {
    const real* gradient;        // unlimited cell gradients (as the limited ones)
    const real* tangent;         // [d * n_faces + f] unit centroid-to-centroid direction
    const real* inverse_length;  // 1 / centroid distance (twice the wall distance on walls)
    const real* eddy;            // [f] eddy viscosity (null: laminar)
    real mu_ref, sutherland, prandtl, prandtl_turbulent;
};

// Viscous flux per unit area (0, tau . n, u . tau . n + k grad T . n) between the cell
// states wl, wr with gradients gl, gr.
template <typename real, int DIM>
__device__ void viscous_flux(const real wl[Vars<DIM>::N], const real wr[Vars<DIM>::N],
                             const real gl[Vars<DIM>::N][DIM], const real gr[Vars<DIM>::N][DIM],
                             const real n[DIM], const real t[DIM], real inv_len, int f,
                             const Viscosity<real>& V, real gamma, real out[Vars<DIM>::N]) {
    constexpr int P = DIM + 1;
    real grad_u[DIM][DIM], tl[DIM], tr[DIM], grad_t[DIM];
#pragma unroll
    for (int i = 0; i < DIM; ++i)
        corrected_gradient<real, DIM>(gl[1 + i], gr[1 + i], wl[1 + i], wr[1 + i], t, inv_len,
                                      grad_u[i]);
#pragma unroll
    for (int d = 0; d < DIM; ++d) {
        tl[d] = gamma * (gl[P][d] / wl[0] - wl[P] * gl[0][d] / (wl[0] * wl[0]));
        tr[d] = gamma * (gr[P][d] / wr[0] - wr[P] * gr[0][d] / (wr[0] * wr[0]));
    }
    const real temperature_l = gamma * wl[P] / wl[0], temperature_r = gamma * wr[P] / wr[0];
    corrected_gradient<real, DIM>(tl, tr, temperature_l, temperature_r, t, inv_len, grad_t);
    real mu = sutherland_viscosity(real(0.5) * (temperature_l + temperature_r), V.mu_ref,
                                   V.sutherland);
    real heat_mu = mu;
    if (V.eddy != nullptr) {
        const real mu_t = V.eddy[f];
        heat_mu = mu + mu_t * V.prandtl / V.prandtl_turbulent;
        mu = mu + mu_t;
    }
    real divergence = 0;
#pragma unroll
    for (int i = 0; i < DIM; ++i) divergence += grad_u[i][i];
    real energy = 0, heat = 0;
    out[0] = 0;
#pragma unroll
    for (int i = 0; i < DIM; ++i) {
        real own = 0, transposed = 0;
#pragma unroll
        for (int d = 0; d < DIM; ++d) {
            own += grad_u[i][d] * n[d];
            transposed += grad_u[d][i] * n[d];
        }
        out[1 + i] = mu * (own + transposed - real(2.0 / 3.0) * divergence * n[i]);
        energy += real(0.5) * (wl[1 + i] + wr[1 + i]) * out[1 + i];
        heat += grad_t[i] * n[i];
    }
    out[P] = energy + heat_mu / ((gamma - real(1)) * V.prandtl) * heat;
}

template <typename real, int DIM>
__device__ __forceinline__ void load_gradient(const real* __restrict__ gradient, int n_cells,
                                              int c, real g[Vars<DIM>::N][DIM]) {
#pragma unroll
    for (int v = 0; v < Vars<DIM>::N; ++v)
#pragma unroll
        for (int d = 0; d < DIM; ++d) g[v][d] = gradient[(v * DIM + d) * n_cells + c];
}

// ---------------------------------------------------------------- faces
// Van Albada's limited change to the face (gradients.van_albada): the upwind change
// a = 2 change - b and the central change b = s (other cell - this cell).
template <typename real>
__device__ __forceinline__ real van_albada(real change, real central, real eps2) {
    const real upwind = real(2) * change - central;
    return (upwind + central) * (upwind * central + eps2)
           / (upwind * upwind + central * central + real(2) * eps2);
}

// Cell state reconstructed to face f from the primitive state ``cell`` (second order;
// the cell value where rho or p would not stay positive). FACE_LIMITER: van Albada's
// limiter against the state ``other`` across the face, s the central fraction.
template <typename real, int DIM, int ORDER, bool FACE_LIMITER>
__device__ __forceinline__ void reconstruct(const real* __restrict__ gradient, int n_cells,
                                            int c, const real* __restrict__ offsets,
                                            int n_faces, int f, const real cell[Vars<DIM>::N],
                                            const real other[Vars<DIM>::N], real s,
                                            const real* __restrict__ epsilon2,
                                            real out[Vars<DIM>::N]) {
    constexpr int NV = Vars<DIM>::N;
#pragma unroll
    for (int v = 0; v < NV; ++v) out[v] = cell[v];
    if (ORDER == 1) return;
    real offset[DIM];
#pragma unroll
    for (int d = 0; d < DIM; ++d) offset[d] = offsets[d * n_faces + f];
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        real change = 0;
#pragma unroll
        for (int d = 0; d < DIM; ++d) change += gradient[(v * DIM + d) * n_cells + c] * offset[d];
        if (FACE_LIMITER)
            change = van_albada(change, s * (other[v] - cell[v]), epsilon2[v * n_cells + c]);
        out[v] += change;
    }
    if (out[0] <= 0 || out[DIM + 1] <= 0) {
#pragma unroll
        for (int v = 0; v < NV; ++v) out[v] = cell[v];
    }
}

// Central fractions (gradients.central_fractions) of the two cells of a face whose
// centre lies at offset ``to_face`` from the left cell and ``across`` from the right.
template <typename real, int DIM>
__device__ __forceinline__ void central_fractions(const real* to_face, const real* across,
                                                  real* s_left, real* s_right) {
    real d[DIM], length2 = 0, left = 0, right = 0;
#pragma unroll
    for (int k = 0; k < DIM; ++k) {
        d[k] = to_face[k] - across[k];
        length2 += d[k] * d[k];
        left += to_face[k] * d[k];
        right -= across[k] * d[k];
    }
    *s_left = left / length2;
    *s_right = right / length2;
}

template <typename real, int DIM, int FLUX, int ORDER, int ACC, bool VISCOUS, bool FACE_LIMITER>
__device__ void face_flux(const real* __restrict__ U, const real* __restrict__ gradient,
                          const real* __restrict__ epsilon2, int n_cells, Faces<real> F,
                          Viscosity<real> V, int first, int last, real* __restrict__ out,
                          real* __restrict__ boundary_flux, real* __restrict__ mass_flux,
                          real* __restrict__ speed, real gamma, real k2, real k4,
                          real stretching) {
    constexpr int NV = Vars<DIM>::N;
    const int f = first + blockIdx.x * blockDim.x + threadIdx.x;
    if (f >= last) return;
    const int l = F.left[f];
    real n[DIM];
    load_normal<real, DIM>(F, f, n);
    real cell_l[NV], cell_r[NV], wl[NV], wr[NV];
    primitive<real, DIM>(U, n_cells, l, gamma, cell_l);
    const bool interior = f < F.n_interior;
    const int b = f - F.n_interior;
    // the cell across the face (periodic: the partner face's cell) and its face
    int across = interior ? F.right[f] : -1, across_face = f;
    if (!interior && F.bc_code[b] == PERIODIC) {
        across_face = F.bc_partner[b];
        across = F.left[across_face];
    }
    const real* across_offsets = interior ? F.offset_right : F.offset_left;
    if (across >= 0)
        primitive<real, DIM>(U, n_cells, across, gamma, cell_r);
    else if (VISCOUS || FACE_LIMITER)
        ghost_state<real, DIM>(F, b, cell_l, n, gamma, cell_r);
    real s_left = real(0.5), s_right = real(0.5);
    if (FACE_LIMITER && ORDER == 2 && across >= 0) {
        real to_face[DIM], back[DIM];
#pragma unroll
        for (int d = 0; d < DIM; ++d) {
            to_face[d] = F.offset_left[d * F.n_faces + f];
            back[d] = across_offsets[d * F.n_faces + across_face];
        }
        central_fractions<real, DIM>(to_face, back, &s_left, &s_right);
    }
    reconstruct<real, DIM, ORDER, FACE_LIMITER>(gradient, n_cells, l, F.offset_left,
                                                F.n_faces, f, cell_l, cell_r, s_left,
                                                epsilon2, wl);
    if (across >= 0)
        reconstruct<real, DIM, ORDER, FACE_LIMITER>(gradient, n_cells, across, across_offsets,
                                                    F.n_faces, across_face, cell_r, cell_l,
                                                    s_right, epsilon2, wr);
    else
        ghost_state<real, DIM>(F, b, wl, n, gamma, wr);
    real flux[NV];
    if (FLUX == JST && across >= 0)  // gradient: the JST cell pass
        jst_flux<real, DIM>(U, gradient, n_cells, l, across, wl, wr, n, F.area[f], gamma, k2,
                            k4, stretching, flux);
    else
        riemann<real, DIM, FLUX == JST ? ROE : FLUX>(wl, wr, n, gamma, flux);
    real t[DIM], inv_len = 0;
    if (VISCOUS) {
        real gl[NV][DIM], gr[NV][DIM], viscous[NV];
        load_gradient<real, DIM>(V.gradient, n_cells, l, gl);
        load_gradient<real, DIM>(V.gradient, n_cells, across >= 0 ? across : l, gr);
#pragma unroll
        for (int d = 0; d < DIM; ++d) t[d] = V.tangent[d * F.n_faces + f];
        inv_len = V.inverse_length[f];
        viscous_flux<real, DIM>(cell_l, cell_r, gl, gr, n, t, inv_len, f, V, gamma, viscous);
#pragma unroll
        for (int v = 0; v < NV; ++v) flux[v] -= viscous[v];
    }
    const real a = F.area[f];
#pragma unroll
    for (int v = 0; v < NV; ++v) flux[v] *= a;
    if (mass_flux != nullptr) mass_flux[f] = flux[0];
    if (speed != nullptr) {  // wave speeds of the mean cell state (the cell's own on the boundary)
        real mean[NV];
#pragma unroll
        for (int v = 0; v < NV; ++v) mean[v] = interior ? real(0.5) * (cell_l[v] + cell_r[v]) : cell_l[v];
        speed[f] = (fabs(normal_velocity<real, DIM>(mean, n))
                    + sound_speed(mean[0], mean[DIM + 1], gamma)) * a;
        if (VISCOUS) {
            real mu = sutherland_viscosity(gamma * mean[DIM + 1] / mean[0], V.mu_ref,
                                           V.sutherland);
            if (V.eddy != nullptr) mu = mu + V.eddy[f];
            const real diffusivity = fmax(real(4.0 / 3.0), gamma / V.prandtl) * mu / mean[0];
            speed[F.n_faces + f] = diffusivity * inv_len * a;
        }
    }
    if (!interior && boundary_flux != nullptr) {
        const int nb = F.n_faces - F.n_interior;
#pragma unroll
        for (int v = 0; v < NV; ++v) boundary_flux[v * nb + b] = flux[v];
    }
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        if (ACC == STORE) {
            out[v * F.n_faces + f] = flux[v];
        } else if (ACC == ATOMIC) {
            atomicAdd(&out[v * n_cells + l], -flux[v]);
            if (interior) atomicAdd(&out[v * n_cells + across], flux[v]);
        } else {
            out[v * n_cells + l] -= flux[v];
            if (interior) out[v * n_cells + across] += flux[v];
        }
    }
}

// ---------------------------------------------------------------- cells
// One Runge-Kutta stage (gpusolver.integrators.explicit.Stage) per cell:
//   k = R / V, sum = (first ? 0 : sum) + sum_weight k,
//   u_out = base u0 + current u + rate dt k + from_sum dt sum;
// local_dt: dt = cfl V / sum_f (s_c + viscous_factor s_v)_f, stored in dt (s_c, s_v the
// face's convective and viscous speeds times area); otherwise dt is read (dt_stride 1:
// one per cell, 0: one for all). The CFL number is read from the device (cfl[0]), so
// that a recorded step replays at any CFL number.
struct Stage {
    double base, current, rate, sum_weight, from_sum;
    int first, local_dt, dt_stride;
};

// Implicit steps: the LU-SGS diagonal V / dt + 1/2 sum_f (omega s_c + viscous_factor s_v)_f
// (gpusolver/solvers/fv/lusgs.py) into diagonal (null: none).
template <typename real>
struct Implicit {
    real* diagonal;
    real omega, viscous_factor;
};

template <typename real, int DIM, int SOURCE>
__device__ void cell_update(int n_cells, int n_faces, const int* __restrict__ slots, int width,
                            const real* __restrict__ source, const real* __restrict__ volume,
                            real* __restrict__ residual_out, Stage stage,
                            const double* __restrict__ cfl, const real* __restrict__ speed,
                            real viscous_factor, Implicit<real> implicit, real* __restrict__ dt,
                            const real* __restrict__ u0, const real* __restrict__ u,
                            real* __restrict__ sum, real* __restrict__ u_out,
                            double* __restrict__ squares, int* __restrict__ bad_cell,
                            int* __restrict__ relaxed, real gamma, int n_active) {
    constexpr int NV = Vars<DIM>::N;
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    const bool active = c < n_active;
    real r[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v) r[v] = 0;
    if (active && SOURCE == STORE) {
        for_each_face(slots, width, n_cells, n_faces, c, [&](int f, bool is_right) {
#pragma unroll
            for (int v = 0; v < NV; ++v) {
                const real value = source[v * n_faces + f];
                r[v] += is_right ? value : -value;
            }
        });
    } else if (active) {
#pragma unroll
        for (int v = 0; v < NV; ++v) r[v] = source[v * n_cells + c];
    }
    if (active && residual_out != nullptr) {
#pragma unroll
        for (int v = 0; v < NV; ++v) residual_out[v * n_cells + c] = r[v];
    }
    const real vol = active ? volume[c] : real(1);
    real k[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v) k[v] = r[v] / vol;
    if (squares != nullptr) {  // the same for every thread
        double k2[NV];
#pragma unroll
        for (int v = 0; v < NV; ++v) k2[v] = double(k[v]) * double(k[v]);
        add_block_sums<NV>(k2, squares);
    }
    if (!active || (u_out == nullptr && implicit.diagonal == nullptr)) return;
    real step;
    if (stage.local_dt || implicit.diagonal != nullptr) {
        real radius = 0, lambda = 0;
        for_each_face(slots, width, n_cells, n_faces, c, [&](int f, bool) {
            const real convective = speed[f];
            const real viscous = viscous_factor != 0 ? speed[n_faces + f] : real(0);
            radius += convective + viscous_factor * viscous;
            lambda += implicit.omega * convective + implicit.viscous_factor * viscous;
        });
        if (stage.local_dt) {
            step = real(cfl[0]) * vol / radius;
            dt[c] = step;
        } else {
            step = dt[stage.dt_stride * c];
        }
        if (implicit.diagonal != nullptr) implicit.diagonal[c] = vol / step + real(0.5) * lambda;
    } else {
        step = dt[stage.dt_stride * c];
    }
    if (u_out == nullptr) return;
    bool bad = false;
    real out[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        real total = 0;
        if (stage.sum_weight != 0 || stage.from_sum != 0) {
            total = stage.first ? real(stage.sum_weight) * k[v]
                                : sum[v * n_cells + c] + real(stage.sum_weight) * k[v];
            sum[v * n_cells + c] = total;
        }
        real value = real(stage.base) * u0[v * n_cells + c] + real(stage.rate) * step * k[v];
        if (stage.current != 0) value += real(stage.current) * u[v * n_cells + c];
        if (stage.from_sum != 0) value += real(stage.from_sum) * step * total;
        out[v] = value;
        bad |= !isfinite(value);
    }
    if (relaxed != nullptr && !bad) {  // steady steps: the change from u0 kept physical
        real start[NV], change[NV];
#pragma unroll
        for (int v = 0; v < NV; ++v) {
            start[v] = u0[v * n_cells + c];
            change[v] = out[v] - start[v];
        }
        const real alpha = positive_fraction<real, DIM>(start, change, real(1), gamma, bad);
        if (alpha < real(1)) {
#pragma unroll
            for (int v = 0; v < NV; ++v) out[v] = start[v] + alpha * change[v];
            atomicAdd(relaxed, 1);
        }
    }
    if (bad_cell != nullptr) {
        real kinetic = 0;
#pragma unroll
        for (int d = 0; d < DIM; ++d) kinetic += out[1 + d] * out[1 + d];
        const real p = (gamma - real(1)) * (out[DIM + 1] - real(0.5) * kinetic / out[0]);
        if (bad || !(out[0] > 0) || !(p > 0)) atomicMin(bad_cell, c);
    }
#pragma unroll
    for (int v = 0; v < NV; ++v) u_out[v * n_cells + c] = out[v];
}

// ---------------------------------------------------------------- entry points
// Instantiated by name expression from Python (gpusolver/solvers/fv/fused.py).
template <typename real, int DIM, int GRADIENT, int LIMITER>
__global__ void __launch_bounds__(256) gradients_kernel(
    const real* U, int n_cells, const int* left, const int* right, const real* normal,
    const real* area, const real* offset_left, const real* offset_right, const int* bc_code,
    const real* bc_value, const int* bc_partner, int n_faces, int n_interior, const int* slots,
    int width, const real* coef_left, const real* coef_right, const real* volume,
    const real* epsilon2, real* phi, real* gradient, real* raw, real gamma, int first,
    int last) {
    const Faces<real> F{left, right, normal, area, offset_left, offset_right, bc_code,
                        bc_value, bc_partner, n_faces, n_interior};
    cell_gradients<real, DIM, GRADIENT, LIMITER>(U, n_cells, F, slots, width, coef_left,
                                                  coef_right, volume, epsilon2, phi, gradient,
                                                  raw, gamma, first, last);
}

template <typename real, int DIM, int FLUX, int ORDER, int ACC, bool VISCOUS, bool FACE_LIMITER>
__global__ void __launch_bounds__(256) flux_kernel(
    const real* U, const real* gradient, const real* epsilon2, int n_cells, const int* left, const int* right,
    const real* normal, const real* area, const real* offset_left, const real* offset_right,
    const int* bc_code, const real* bc_value, const int* bc_partner, int n_faces,
    int n_interior, const real* raw_gradient, const real* tangent,
    const real* inverse_length, const real* eddy, real mu_ref, real sutherland, real prandtl,
    real prandtl_turbulent, int first, int last, real* out, real* boundary_flux,
    real* mass_flux, real* speed, real gamma, real k2, real k4, real stretching) {
    const Faces<real> F{left, right, normal, area, offset_left, offset_right, bc_code,
                        bc_value, bc_partner, n_faces, n_interior};
    const Viscosity<real> V{raw_gradient, tangent, inverse_length, eddy, mu_ref, sutherland,
                            prandtl, prandtl_turbulent};
    face_flux<real, DIM, FLUX, ORDER, ACC, VISCOUS, FACE_LIMITER>(
        U, gradient, epsilon2, n_cells, F, V, first, last, out, boundary_flux, mass_flux,
        speed, gamma, k2, k4, stretching);
}

// The first-order flux's Jacobians (solvers/fv/jacobian.py's face_jacobians, the
// Newton-Krylov preconditioner's blocks): one thread per face, one-sided differences of
// the face's Riemann flux times area in each conserved variable k of its left and right
// cell, steps epsilon (1 + |u_k|). jac_left and jac_right [(v * NV + k) * n_faces + f];
// on the boundary the ghost follows the perturbed left state (periodic: the partner
// face's cell, perturbed alike, as the array code's face states are) and jac_right is
// not written.
template <typename real, int DIM, int FLUX>
__global__ void __launch_bounds__(256) face_jacobian_kernel(
    const real* U, int n_cells, const int* left, const int* right, const real* normal,
    const real* area, const real* offset_left, const real* offset_right, const int* bc_code,
    const real* bc_value, const int* bc_partner, int n_faces, int n_interior, real gamma,
    real epsilon, real* __restrict__ jac_left, real* __restrict__ jac_right) {
    constexpr int NV = Vars<DIM>::N;
    const int f = blockIdx.x * blockDim.x + threadIdx.x;
    if (f >= n_faces) return;
    const Faces<real> F{left, right, normal, area, offset_left, offset_right, bc_code,
                        bc_value, bc_partner, n_faces, n_interior};
    real n[DIM];
    load_normal<real, DIM>(F, f, n);
    const bool interior = f < n_interior;
    const int b = f - n_interior;
    const int across = interior ? right[f]
                       : bc_code[b] == PERIODIC ? left[bc_partner[b]] : -1;
    real ul[NV], ur[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        ul[v] = U[v * n_cells + left[f]];
        ur[v] = across >= 0 ? U[v * n_cells + across] : real(0);
    }
    const real a = area[f];
    // the flux times area of conserved states cl and cr (cr unused on non-periodic
    // boundaries: the ghost of cl)
    auto flux_of = [&](const real cl[NV], const real cr[NV], real out[NV]) {
        real wl[NV], wr[NV];
        primitive<real, DIM>(cl, 1, 0, gamma, wl);
        if (across >= 0)
            primitive<real, DIM>(cr, 1, 0, gamma, wr);
        else
            ghost_state<real, DIM>(F, b, wl, n, gamma, wr);
        riemann<real, DIM, FLUX == JST ? ROE : FLUX>(wl, wr, n, gamma, out);
#pragma unroll
        for (int v = 0; v < NV; ++v) out[v] *= a;
    };
    real base[NV], shifted[NV], flux[NV];
    flux_of(ul, ur, base);
    for (int k = 0; k < NV; ++k) {
        const real h = epsilon * (real(1) + fabs(ul[k]));
#pragma unroll
        for (int v = 0; v < NV; ++v) shifted[v] = ul[v];
        shifted[k] += h;
        if (interior) {
            flux_of(shifted, ur, flux);
        } else {  // a periodic ghost's cell moves with the left cells
            real other[NV];
#pragma unroll
            for (int v = 0; v < NV; ++v) other[v] = ur[v];
            other[k] += epsilon * (real(1) + fabs(ur[k]));
            flux_of(shifted, other, flux);
        }
#pragma unroll
        for (int v = 0; v < NV; ++v) jac_left[(v * NV + k) * n_faces + f] = (flux[v] - base[v]) / h;
        if (!interior) continue;
        const real g = epsilon * (real(1) + fabs(ur[k]));
#pragma unroll
        for (int v = 0; v < NV; ++v) shifted[v] = ur[v];
        shifted[k] += g;
        flux_of(ul, shifted, flux);
#pragma unroll
        for (int v = 0; v < NV; ++v) jac_right[(v * NV + k) * n_faces + f] = (flux[v] - base[v]) / g;
    }
}

template <typename real, int DIM, int SOURCE>
__global__ void __launch_bounds__(256) update_kernel(
    int n_cells, int n_faces, const int* slots, int width, const real* source,
    const real* volume, real* residual_out, double base, double current, double rate,
    double sum_weight, double from_sum, int first, int local_dt, int dt_stride,
    const double* cfl, const real* speed, real viscous_factor, real* diagonal, real omega,
    real implicit_viscous_factor, real* dt, const real* u0, const real* u, real* sum,
    real* u_out, double* squares, int* bad_cell, int* relaxed, real gamma, int n_active) {
    const Stage stage{base, current, rate, sum_weight, from_sum, first, local_dt, dt_stride};
    const Implicit<real> implicit{diagonal, omega, implicit_viscous_factor};
    cell_update<real, DIM, SOURCE>(n_cells, n_faces, slots, width, source, volume,
                                   residual_out, stage, cfl, speed, viscous_factor, implicit,
                                   dt, u0, u, sum, u_out, squares, bad_cell, relaxed,
                                   gamma, n_active);
}

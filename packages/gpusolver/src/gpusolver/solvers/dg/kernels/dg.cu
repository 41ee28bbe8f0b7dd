// The right-hand side of modal DG for the 2-D Euler and Navier-Stokes equations, the
// device twin of gpusolver/solvers/dg/solver.py (DGSolver.rate, the NumPy reference) and,
// for the viscous terms (template flag VISCOUS), of solvers/dg/viscous.py (BR2):
//
//   lifting_kernel one thread per face of [first, end) (Navier-Stokes only, before the
//                  volume and face kernels of the faces' elements): the BR2
//                  lifting of the face's jump (ghost state on the boundary) in each of
//                  its elements; adds it into the element's sum of liftings (atomics)
//                  and stores its values at the face's Gauss points times the element's
//                  penalty;
//   volume_kernel  one thread per element of one shape: the state at each volume Gauss
//                  point, the physical flux mapped to the reference element by the
//                  Jacobian's cofactors (computed from the nodes there), and the sum
//                  over points of the reference gradients times it; writes the element's
//                  rows of the right-hand side times its scale; with VISCOUS, the
//                  viscous flux of the state and its gradient plus the sum of liftings
//                  is subtracted from the physical flux;
//   face_kernel    one thread per face of [first, end), after the volume kernel of the
//                  face's elements: both traces at each face Gauss point (the ghost
//                  state, given, on the boundary) and the Riemann flux (template argument)
//                  there, or on a no-slip wall the wall's flux (with VISCOUS, less the
//                  mean of the two sides' viscous fluxes, each side's gradient corrected
//                  by its penalised lifting; the ghost state takes the inside's); then per
//                  variable and mode the sum over the points, subtracted
//                  from the left element's row and added to the right one's with one
//                  atomic each, times the side's scale; boundary faces also write the
//                  flux summed over their Gauss points to boundary_flux (wall forces);
//   time_step_kernel  one thread per element: its local time step (steady runs);
//   mass_kernel    one thread per element whose mass matrix is not its Jacobian times the
//                  identity (non-parallelogram quadrilaterals): its inverse mass matrix
//                  times its rows, in place.
//
// The scale of an element is the inverse of its constant Jacobian where the mass matrix is
// that Jacobian times the identity (orthonormal modes on an affine element), so that the
// rows are the rate itself; it is 1 on the others, which mass_kernel finishes. The face's
// side scales are its elements' scales. A group's elements are mapped by K nodes: their
// corners (straight sides) or their corners and mid-edge points (curved, K = 6 or 8;
// gpusolver/solvers/dg/layout.py's shape_functions). A straight face has one normal and
// its length; a curved one (curved_index >= 0) has a normal and a length element at each
// Gauss point, in a table of the curved faces (face_geometry).
//
// Layout: modal coefficients variable-major then mode, [(v * M + m) * n + e] in the plan's
// element order; reference tables [m * NQ + q] (values), [(a * M + m) * NQ + q]
// (gradients along the reference axis a); nodes of a group's element i at
// [(2 * k + d) * n_group + i]; sums of liftings [((v * 2 + d) * M + m) * n + e]; the
// modes' physical gradients at the face points [((d * M + m) * NQF + q) * n_side + f] (left:
// every face, right: the interior ones); penalised liftings at the face points
// [(((s * NV + v) * 2 + d) * NQF + q) * n_faces + f], side s = 0 left, 1 right; curved
// faces' normals and length elements [(c * NQF + q) * n_curved + i], c = 0, 1 the normal,
// 2 the length element. fp32 and fp64 from one source.

#include "../../../physics/kernels/euler.cuh"
#include "../../../physics/kernels/boundary.cuh"
#include "../../../physics/kernels/viscous.cuh"

constexpr int NV = 4;  // rho, rho u, rho v, E

template <typename real>
__device__ __forceinline__ void to_primitive(const real U[NV], real gamma, real w[NV]) {
    w[0] = U[0];
    w[1] = U[1] / U[0];
    w[2] = U[2] / U[0];
    w[3] = (gamma - real(1)) * (U[3] - real(0.5) * U[0] * (w[1] * w[1] + w[2] * w[2]));
}

template <typename real>
__device__ __forceinline__ void to_conserved(const real w[NV], real gamma, real U[NV]) {
    U[0] = w[0];
    U[1] = w[0] * w[1];
    U[2] = w[0] * w[2];
    U[3] = w[3] / (gamma - real(1)) + real(0.5) * w[0] * (w[1] * w[1] + w[2] * w[2]);
}

// The conserved state of element e at point q of a table of mode values [m * NQ + q].
template <typename real, int M, int NQ>
__device__ __forceinline__ void modal_conserved(const real* __restrict__ table,
                                                const real* __restrict__ u, int n_elements,
                                                int e, int q, real U[NV]) {
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        U[v] = 0;
#pragma unroll
        for (int m = 0; m < M; ++m) U[v] += table[m * NQ + q] * u[(v * M + m) * n_elements + e];
    }
}

// The same, primitive.
template <typename real, int M, int NQ>
__device__ __forceinline__ void modal_state(const real* __restrict__ table,
                                            const real* __restrict__ u, int n_elements, int e,
                                            int q, real gamma, real w[NV]) {
    real U[NV];
    modal_conserved<real, M, NQ>(table, u, n_elements, e, q, U);
    to_primitive(U, gamma, w);
}

// The unit normal n[q] out of the left element and the length element ds[q] (length per
// unit of the face's parameter, times which the Gauss weights integrate) at each Gauss
// point of face f: its chord's on a straight face, its row of the curved faces' table on
// a curved one.
template <typename real, int NQF>
struct FaceGeometry {
    real n[NQF][2];
    real ds[NQF];
};

template <typename real, int NQF>
__device__ __forceinline__ FaceGeometry<real, NQF> face_geometry(
    int f, int n_faces, const real* __restrict__ normal, const real* __restrict__ area,
    const int* __restrict__ curved_index, const real* __restrict__ curved, int n_curved) {
    FaceGeometry<real, NQF> g;
    const int c = curved_index[f];
#pragma unroll
    for (int q = 0; q < NQF; ++q) {
        if (c < 0) {
            g.n[q][0] = normal[f];
            g.n[q][1] = normal[n_faces + f];
            g.ds[q] = area[f];
        } else {
            g.n[q][0] = curved[q * n_curved + c];
            g.n[q][1] = curved[(NQF + q) * n_curved + c];
            g.ds[q] = curved[(2 * NQF + q) * n_curved + c];
        }
    }
    return g;
}

// The BR2 lifting of each face's jump (U_hat - U_K) n_K in its left and right elements:
// r_d = M^-1 sum_q w ds phi_m(q) (U_right - U_left) / 2 n_d(q), n the left normal (the
// same for both sides), M^-1 the element's scale where its mass matrix is scalar
// (mass_index < 0), else its listed inverse mass matrix [(m * M + k) * n_listed + i].
template <typename real, int M, int NQF>
__global__ void __launch_bounds__(128) lifting_kernel(
    int first, int end, int n_faces, int n_interior, int n_elements,
    const int* __restrict__ left,
    const int* __restrict__ right, const int* __restrict__ trace_left,
    const int* __restrict__ trace_right, const real* __restrict__ tables,
    const real* __restrict__ normal, const real* __restrict__ area,
    const int* __restrict__ curved_index, const real* __restrict__ curved, int n_curved,
    const real* __restrict__ weights, const real* __restrict__ penalty,
    const int* __restrict__ mass_index, const real* __restrict__ scale, int n_listed,
    const real* __restrict__ inverse_mass, const real* __restrict__ u,
    const real* __restrict__ ghost, real* lifting, real* __restrict__ face_lifting,
    real gamma) {
    const int f = first + blockIdx.x * blockDim.x + threadIdx.x;
    if (f >= end) return;
    const bool interior = f < n_interior;
    const int n_boundary = n_faces - n_interior;
    const int element[2] = {left[f], interior ? right[f] : -1};
    const real* trace[2] = {tables + trace_left[f] * M * NQF,
                            interior ? tables + trace_right[f] * M * NQF : nullptr};
    const FaceGeometry<real, NQF> g = face_geometry<real, NQF>(f, n_faces, normal, area,
                                                                curved_index, curved, n_curved);
    real jump[NV][NQF];  // (U_right - U_left) / 2 times the Gauss weight and length element
#pragma unroll
    for (int q = 0; q < NQF; ++q) {
        real ul[NV], ur[NV];
        modal_conserved<real, M, NQF>(trace[0], u, n_elements, element[0], q, ul);
        if (interior) {
            modal_conserved<real, M, NQF>(trace[1], u, n_elements, element[1], q, ur);
        } else {
            real w[NV];
#pragma unroll
            for (int v = 0; v < NV; ++v) w[v] = ghost[(v * NQF + q) * n_boundary + f - n_interior];
            to_conserved(w, gamma, ur);
        }
#pragma unroll
        for (int v = 0; v < NV; ++v)
            jump[v][q] = real(0.5) * weights[q] * g.ds[q] * (ur[v] - ul[v]);
    }
    for (int s = 0; s < (interior ? 2 : 1); ++s) {
        const int e = element[s], listed = mass_index[e];
        const real* t = trace[s];
#pragma unroll
        for (int v = 0; v < NV; ++v)
#pragma unroll
            for (int d = 0; d < 2; ++d) {
                real moment[M], r[M];
#pragma unroll
                for (int m = 0; m < M; ++m) {
                    moment[m] = 0;
#pragma unroll
                    for (int q = 0; q < NQF; ++q)
                        moment[m] += t[m * NQF + q] * jump[v][q] * g.n[q][d];
                }
#pragma unroll
                for (int m = 0; m < M; ++m) {
                    if (listed < 0) {
                        r[m] = scale[e] * moment[m];
                    } else {
                        r[m] = 0;
#pragma unroll
                        for (int k = 0; k < M; ++k)
                            r[m] += inverse_mass[(m * M + k) * n_listed + listed] * moment[k];
                    }
                    atomicAdd(&lifting[((v * 2 + d) * M + m) * n_elements + e], r[m]);
                }
                const real eta = penalty[s * n_faces + f];
#pragma unroll
                for (int q = 0; q < NQF; ++q) {
                    real value = 0;
#pragma unroll
                    for (int m = 0; m < M; ++m) value += t[m * NQF + q] * r[m];
                    face_lifting[(((s * NV + v) * 2 + d) * NQF + q) * n_faces + f] = eta * value;
                }
            }
    }
}

// The conserved gradient G[v][d] at face point q of a side's element e: its modes'
// physical gradients there [((d * M + m) * NQF + q) * n_side + i] times its coefficients,
// plus its penalised lifting [((v * 2 + d) * NQF + q) * n_faces + f].
template <typename real, int M, int NQF>
__device__ __forceinline__ void face_gradient(const real* __restrict__ mode_gradients,
                                              int n_side, int i,
                                              const real* __restrict__ face_lifting,
                                              int n_faces, int f, const real* __restrict__ u,
                                              int n_elements, int e, int q, real G[NV][2]) {
#pragma unroll
    for (int v = 0; v < NV; ++v) {
#pragma unroll
        for (int d = 0; d < 2; ++d) {
            real sum = face_lifting[((v * 2 + d) * NQF + q) * n_faces + f];
#pragma unroll
            for (int m = 0; m < M; ++m)
                sum += mode_gradients[((d * M + m) * NQF + q) * n_side + i]
                       * u[(v * M + m) * n_elements + e];
            G[v][d] = sum;
        }
    }
}

template <typename real, int K, int M, int NQ, bool VISCOUS>
__global__ void __launch_bounds__(128) volume_kernel(
    int n_group, int n_elements, const int* __restrict__ elements,
    const real* __restrict__ nodes, const real* __restrict__ values,
    const real* __restrict__ gradients, const real* __restrict__ weights,
    const real* __restrict__ shape_gradients, const real* __restrict__ scale,
    const real* __restrict__ u, real* rhs, real gamma, const real* __restrict__ lifting,
    real mu_ref, real sutherland, real prandtl, int constant_law) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_group) return;
    const int e = elements[i];
    real c[NV][M], acc[NV][M];
#pragma unroll
    for (int v = 0; v < NV; ++v)
#pragma unroll
        for (int m = 0; m < M; ++m) {
            c[v][m] = u[(v * M + m) * n_elements + e];
            acc[v][m] = 0;
        }
    real x[K][2];
#pragma unroll
    for (int k = 0; k < K; ++k)
#pragma unroll
        for (int d = 0; d < 2; ++d) x[k][d] = nodes[(2 * k + d) * n_group + i];
    for (int q = 0; q < NQ; ++q) {
        real U[NV], w[NV];
#pragma unroll
        for (int v = 0; v < NV; ++v) {
            U[v] = 0;
#pragma unroll
            for (int m = 0; m < M; ++m) U[v] += values[m * NQ + q] * c[v][m];
        }
        to_primitive(U, gamma, w);
        // J[d][a] = d x_d / d xi_a; the cofactors B[a][d] = det(J) d xi_a / d x_d
        real J[2][2] = {{0, 0}, {0, 0}};
#pragma unroll
        for (int k = 0; k < K; ++k)
#pragma unroll
            for (int a = 0; a < 2; ++a) {
                const real dn = shape_gradients[(a * K + k) * NQ + q];
                J[0][a] += dn * x[k][0];
                J[1][a] += dn * x[k][1];
            }
        const real B[2][2] = {{J[1][1], -J[0][1]}, {-J[1][0], J[0][0]}};
        real F[2][NV];
        const real ex[2] = {1, 0}, ey[2] = {0, 1};
        euler_flux<real, 2>(w, ex, gamma, F[0]);
        euler_flux<real, 2>(w, ey, gamma, F[1]);
        if (VISCOUS) {  // the conserved gradient: of the modes, plus the liftings' sum
            const real inverse_det = real(1) / (J[0][0] * J[1][1] - J[0][1] * J[1][0]);
            real G[NV][2], Fv[2][NV];
#pragma unroll
            for (int v = 0; v < NV; ++v) {
                real reference[2] = {0, 0};
#pragma unroll
                for (int m = 0; m < M; ++m) {
                    reference[0] += gradients[m * NQ + q] * c[v][m];
                    reference[1] += gradients[(M + m) * NQ + q] * c[v][m];
                }
#pragma unroll
                for (int d = 0; d < 2; ++d) {
                    real lifted = 0;
#pragma unroll
                    for (int m = 0; m < M; ++m)
                        lifted += values[m * NQ + q]
                                  * lifting[((v * 2 + d) * M + m) * n_elements + e];
                    G[v][d] = (B[0][d] * reference[0] + B[1][d] * reference[1]) * inverse_det
                              + lifted;
                }
            }
            const Transport<real> transport{mu_ref, sutherland, prandtl, constant_law};
            viscous_flux_tensor(U, G, transport, gamma, real(1), Fv);
#pragma unroll
            for (int d = 0; d < 2; ++d)
#pragma unroll
                for (int v = 0; v < NV; ++v) F[d][v] -= Fv[d][v];
        }
#pragma unroll
        for (int v = 0; v < NV; ++v) {
            const real g0 = weights[q] * (B[0][0] * F[0][v] + B[0][1] * F[1][v]);
            const real g1 = weights[q] * (B[1][0] * F[0][v] + B[1][1] * F[1][v]);
#pragma unroll
            for (int m = 0; m < M; ++m)
                acc[v][m] += gradients[m * NQ + q] * g0 + gradients[(M + m) * NQ + q] * g1;
        }
    }
    const real s = scale[e];
#pragma unroll
    for (int v = 0; v < NV; ++v)
#pragma unroll
        for (int m = 0; m < M; ++m) rhs[(v * M + m) * n_elements + e] = s * acc[v][m];
}

template <typename real, int M, int NQF, int FLUX, bool VISCOUS>
__global__ void __launch_bounds__(128) face_kernel(
    int first, int end, int n_faces, int n_interior, int n_elements,
    const int* __restrict__ left,
    const int* __restrict__ right, const int* __restrict__ trace_left,
    const int* __restrict__ trace_right, const real* __restrict__ tables,
    const real* __restrict__ normal, const real* __restrict__ area,
    const int* __restrict__ curved_index, const real* __restrict__ curved, int n_curved,
    const real* __restrict__ side_scale, const real* __restrict__ weights,
    const real* __restrict__ u, const real* __restrict__ ghost, real* rhs,
    real* __restrict__ boundary_flux, real gamma, const real* __restrict__ gradients_left,
    const real* __restrict__ gradients_right, const real* __restrict__ face_lifting,
    const int* __restrict__ bc_code, real mu_ref, real sutherland, real prandtl,
    int constant_law) {
    const int f = first + blockIdx.x * blockDim.x + threadIdx.x;
    if (f >= end) return;
    const bool interior = f < n_interior;
    const int l = left[f], r = interior ? right[f] : -1;
    const real* tl = tables + trace_left[f] * M * NQF;
    const real* tr = interior ? tables + trace_right[f] * M * NQF : nullptr;
    const FaceGeometry<real, NQF> g = face_geometry<real, NQF>(f, n_faces, normal, area,
                                                                curved_index, curved, n_curved);
    const int n_boundary = n_faces - n_interior;
    const int code = VISCOUS && !interior ? bc_code[f - n_interior] : -1;
    // a no-slip wall's convective flux is the wall's (DGSolver.flux_at_points)
    const bool no_slip = code == NO_SLIP_ADIABATIC || code == NO_SLIP_ISOTHERMAL;
    real flux[NQF][NV];  // times the Gauss weight and the length element
#pragma unroll
    for (int q = 0; q < NQF; ++q) {
        real wl[NV], wr[NV];
        modal_state<real, M, NQF>(tl, u, n_elements, l, q, gamma, wl);
        if (interior) {
            modal_state<real, M, NQF>(tr, u, n_elements, r, q, gamma, wr);
        } else {
#pragma unroll
            for (int v = 0; v < NV; ++v)
                wr[v] = ghost[(v * NQF + q) * n_boundary + (f - n_interior)];
        }
        const real* n = g.n[q];
        if (no_slip)
            wall_flux<real, 2>(wl, n, flux[q]);
        else
            riemann<real, 2, FLUX>(wl, wr, n, gamma, flux[q]);
        if (VISCOUS) {  // the mean of the sides' viscous fluxes; the ghost takes the
                        // inside's gradient; no conduction through an adiabatic wall
            const Transport<real> transport{mu_ref, sutherland, prandtl, constant_law};
            const real heat = code == NO_SLIP_ADIABATIC ? real(0) : real(1);
            real U[NV], G[NV][2], Fv[2][NV];
            face_gradient<real, M, NQF>(gradients_left, n_faces, f, face_lifting, n_faces, f,
                                        u, n_elements, l, q, G);
            to_conserved(wl, gamma, U);
            viscous_flux_tensor(U, G, transport, gamma, heat, Fv);
#pragma unroll
            for (int v = 0; v < NV; ++v)
                flux[q][v] -= real(0.5) * (Fv[0][v] * n[0] + Fv[1][v] * n[1]);
            if (interior)
                face_gradient<real, M, NQF>(gradients_right, n_interior, f,
                                            face_lifting + NV * 2 * NQF * n_faces, n_faces, f,
                                            u, n_elements, r, q, G);
            to_conserved(wr, gamma, U);
            viscous_flux_tensor(U, G, transport, gamma, heat, Fv);
#pragma unroll
            for (int v = 0; v < NV; ++v)
                flux[q][v] -= real(0.5) * (Fv[0][v] * n[0] + Fv[1][v] * n[1]);
        }
#pragma unroll
        for (int v = 0; v < NV; ++v) flux[q][v] *= weights[q] * g.ds[q];
    }
    if (!interior) {
#pragma unroll
        for (int v = 0; v < NV; ++v) {
            real total = 0;
#pragma unroll
            for (int q = 0; q < NQF; ++q) total += flux[q][v];
            boundary_flux[v * n_boundary + f - n_interior] = total;
        }
    }
    const real scale_left = side_scale[f], scale_right = interior ? side_scale[n_faces + f] : 0;
#pragma unroll
    for (int v = 0; v < NV; ++v)
#pragma unroll
        for (int m = 0; m < M; ++m) {
            real sum_left = 0, sum_right = 0;
#pragma unroll
            for (int q = 0; q < NQF; ++q) {
                sum_left += tl[m * NQF + q] * flux[q][v];
                if (interior) sum_right += tr[m * NQF + q] * flux[q][v];
            }
            atomicAdd(&rhs[(v * M + m) * n_elements + l], -scale_left * sum_left);
            if (interior) atomicAdd(&rhs[(v * M + m) * n_elements + r], scale_right * sum_right);
        }
}

// The inside primitive state at each boundary face Gauss point, [(v * NQF + q) * nb + b],
// and its ghost state by the face's condition (physics/kernels/boundary.cuh; codes below
// zero: left to the caller, for periodic and exact boundaries). Point normals are
// [(d * NQF + q) * nb + b], condition values [v * nb + b].
template <typename real, int M, int NQF>
__global__ void __launch_bounds__(128) boundary_trace_kernel(
    int n_faces, int n_interior, int n_elements, const int* __restrict__ left,
    const int* __restrict__ trace_left, const real* __restrict__ tables,
    const int* __restrict__ bc_code, const real* __restrict__ bc_value,
    const real* __restrict__ point_normal, const real* __restrict__ u,
    real* __restrict__ inside, real* __restrict__ ghost, real gamma) {
    const int b = blockIdx.x * blockDim.x + threadIdx.x;
    const int n_boundary = n_faces - n_interior;
    if (b >= n_boundary) return;
    const int f = n_interior + b, l = left[f], code = bc_code[b];
    const real* tl = tables + trace_left[f] * M * NQF;
    real value[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v) value[v] = bc_value[v * n_boundary + b];
    for (int q = 0; q < NQF; ++q) {
        real w[NV], g[NV];
        modal_state<real, M, NQF>(tl, u, n_elements, l, q, gamma, w);
#pragma unroll
        for (int v = 0; v < NV; ++v) inside[(v * NQF + q) * n_boundary + b] = w[v];
        if (code < 0) continue;
        const real n[2] = {point_normal[q * n_boundary + b],
                           point_normal[(NQF + q) * n_boundary + b]};
        boundary_ghost<real, 2>(code, value, w, n, gamma, g);
#pragma unroll
        for (int v = 0; v < NV; ++v) ghost[(v * NQF + q) * n_boundary + b] = g[v];
    }
}

// The inverse mass matrices of the listed elements, [(m * M + k) * n_listed + i].
template <typename real, int M>
__global__ void __launch_bounds__(128) mass_kernel(int n_listed, int n_elements,
                                                   const int* __restrict__ elements,
                                                   const real* __restrict__ inverse_mass,
                                                   real* rhs) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_listed) return;
    const int e = elements[i];
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        real row[M];
#pragma unroll
        for (int k = 0; k < M; ++k) row[k] = rhs[(v * M + k) * n_elements + e];
#pragma unroll
        for (int m = 0; m < M; ++m) {
            real sum = 0;
#pragma unroll
            for (int k = 0; k < M; ++k) sum += inverse_mass[(m * M + k) * n_listed + i] * row[k];
            rhs[(v * M + m) * n_elements + e] = sum;
        }
    }
}

// Each element's local time step at the CFL number from its mean state (the device twin
// of DGSolver.local_time_steps): the mean is mean_weights [m * n + e] times the
// coefficients; cfl over order (|u| + c) / size plus, with VISCOUS, diffusion (M^2
// max(4/3, gamma / Pr) already in `diffusion`) mu(T) / rho / diffusion_size^2.
template <typename real, int M, bool VISCOUS>
__global__ void __launch_bounds__(128) time_step_kernel(
    int n_elements, const real* __restrict__ mean_weights, const real* __restrict__ u,
    const real* __restrict__ size, const real* __restrict__ diffusion_size, real cfl,
    real order, real gamma, real diffusion, real mu_ref, real sutherland, real prandtl,
    int constant_law, real* __restrict__ dt) {
    const int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e >= n_elements) return;
    real U[NV], w[NV];
#pragma unroll
    for (int v = 0; v < NV; ++v) {
        U[v] = 0;
#pragma unroll
        for (int m = 0; m < M; ++m)
            U[v] += mean_weights[m * n_elements + e] * u[(v * M + m) * n_elements + e];
    }
    to_primitive(U, gamma, w);
    const real t = gamma * w[3] / w[0];
    real rate = order * (sqrt(w[1] * w[1] + w[2] * w[2]) + sqrt(t)) / size[e];
    if (VISCOUS) {
        const Transport<real> transport{mu_ref, sutherland, prandtl, constant_law};
        const real h = diffusion_size[e];
        rate += diffusion * transport.viscosity(t) / w[0] / (h * h);
    }
    dt[e] = cfl / rate;
}

// One Runge-Kutta stage (gpusolver.integrators.explicit.Stage) over every coefficient i,
// of element i % n_elements: with k the stage's rate and s the running sum,
// s = (first ? 0 : s) + sum_weight k where sum_weight is not 0, and
// out = base u0 + rate dt k + current u + from_sum dt s (u and out may be one buffer).
template <typename real>
__global__ void __launch_bounds__(128) stage_kernel(
    int size, int n_elements, const real* __restrict__ u0, const real* u,
    const real* __restrict__ k, real* __restrict__ total, real* out,
    const real* __restrict__ dt, real base, real current, real rate, real sum_weight,
    real from_sum, int first) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= size) return;
    const real d = dt[i % n_elements];
    real sum = 0;
    if (sum_weight != 0) {
        sum = first ? sum_weight * k[i] : total[i] + sum_weight * k[i];
        total[i] = sum;
    } else if (from_sum != 0) {
        sum = total[i];
    }
    real next = base * u0[i] + rate * d * k[i];
    if (current != 0) next += current * u[i];
    if (from_sum != 0) next += from_sum * d * sum;
    out[i] = next;
}

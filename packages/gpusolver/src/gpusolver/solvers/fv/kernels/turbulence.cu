// The turbulence models' implicit steps in kernels: the array code of
// gpusolver/solvers/fv/turbulence.py (SpalartAllmarasFV, MenterSSTFV; TurbulenceFV._sides,
// _flux, _matrix and _swept) and the models of gpusolver/physics/spalart_allmaras.py and
// menter_sst.py, run by gpusolver/solvers/fv/fused_turbulence.py. For the model's scalars
// phi at once (nu_tilde; k and omega: NS of them, the mesh's arrays read once for all):
//   sa_cell_kernel,         one thread per cell: grad phi (Green-Gauss or least squares
//   sst_cell_kernel         over the cell's face slots; a boundary neighbour is the mean
//                           of the cell and its ghost), then from it in registers the
//                           model's diffusivity, its sources times the volume and their
//                           damping derivative (the part the implicit step takes), and
//                           the density;
//   scalar_face_kernel      one thread per face: first-order upwind advection by the mean
//                           flow's mass flux minus the diffusion through the face
//                           (corrected normal gradient), the two-point coefficient and
//                           (for the sweeps) the implicit matrix's two entries of the face;
//   scalar_matrix_kernel    one thread per cell: the residual (face fluxes plus sources),
//                           the implicit matrix's diagonal and the sum of (R / V)^2;
//   sst_wall_omega_kernel   one thread per boundary face: SST's omega on a no-slip wall;
//   scalar_sweep_kernel     one thread per cell of one level of a Gauss-Seidel sweep of one
//                           scalar (the mean flow's LU-SGS sweep tables of
//                           kernels/lusgs.cu, each upstream slot's matrix entry by its
//                           index in the face kernel's entries);
//   scalar_update_kernel    one thread per cell: phi += dphi, its fall or size bounded,
//                           the own cells it leaves non-finite or past a ceiling counted.
// and each step's eddy viscosity for the mean flow:
//   sa_eddy_viscosity_kernel    one thread per cell: SA's mu_t = rho nt fv1;
//   sst_eddy_viscosity_kernel   one thread per cell: SST's mu_t (F2 and the vorticity);
//   face_eddy_viscosity_kernel  one thread per face: the mean of its cells' mu_t (0 on
//                               no-slip walls).
//
// Layout as kernels/residual.cu: slots [k * n_cells + c] (s < n_faces: the cell is the
// face's left, else its right of face s - n_faces, 2 n_faces unused), mean-flow gradients
// [(v * DIM + d) * n_cells + c] of the primitive state. Scalar s's arrays follow each
// other: its values, diffusivities, sources, residuals... [s * n_cells + c], face fluxes
// and coefficients [s * n_faces + f], gradients [(s * DIM + d) * n_cells + c], implicit
// matrix entries [s * 2 n_interior + ...], and its free stream and sigma at [s]. Boundary
// kinds (kind[b], b = f - n_interior) are enum ScalarBoundary of ids.cuh; `wall` (or
// null: 0) holds the scalars' values on no-slip walls, [s * n_boundary + b].

#include "../../../physics/kernels/euler.cuh"
#include "../../../physics/kernels/viscous.cuh"
#include "block_sums.cuh"
#include "faces.cuh"

// The model's constants, in the order of spalart_allmaras.KERNEL_CONSTANTS.
template <typename real>
struct SAConstants {
    real cb1, sigma, cb2, kappa, cw1, cw2, cw3, cv1, ct3, ct4, cv2, cv3, cn1, r_max;

    __device__ explicit SAConstants(const real* c)
        : cb1(c[0]), sigma(c[1]), cb2(c[2]), kappa(c[3]), cw1(c[4]), cw2(c[5]), cw3(c[6]),
          cv1(c[7]), ct3(c[8]), ct4(c[9]), cv2(c[10]), cv3(c[11]), cn1(c[12]), r_max(c[13]) {}
};

// Laminar kinematic viscosity and density of cell c (rho_out) from the conserved state,
// by the viscosity law of the kernels' arguments (mu_ref, sutherland, constant_law).
template <typename real, int DIM>
__device__ __forceinline__ real kinematic_viscosity(const real* __restrict__ U, int n, int c,
                                                    real mu_ref, real sutherland,
                                                    int constant_law, real gamma,
                                                    real* rho_out) {
    const Transport<real> law{mu_ref, sutherland, real(0), constant_law};
    real w[Vars<DIM>::N];
    primitive<real, DIM>(U, n, c, gamma, w);
    *rho_out = w[0];
    return law.viscosity(gamma * w[DIM + 1] / w[0]) / w[0];
}

// spalart_allmaras.diffusivity: nu + nt fn.
template <typename real>
__device__ __forceinline__ real sa_diffusivity(real nu, real nt, const SAConstants<real>& k) {
    const real chi = nt / nu, chi3 = chi * chi * chi;
    return nu + nt * (nt >= 0 ? real(1) : (k.cn1 + chi3) / (k.cn1 - chi3));
}

// spalart_allmaras.source: P - D per unit mass and all of its derivative in nt.
template <typename real>
__device__ void sa_source(real nt, real nu, real vorticity, real distance,
                          const SAConstants<real>& k, real* rate, real* derivative) {
    if (nt < 0) {
        const real ratio = nt / distance;
        *rate = k.cb1 * (real(1) - k.ct3) * vorticity * nt + k.cw1 * ratio * ratio;
        *derivative = k.cb1 * (real(1) - k.ct3) * vorticity + real(2) * k.cw1 * ratio / distance;
        return;
    }
    const real chi = nt / nu, chi3 = chi * chi * chi, cv1_3 = k.cv1 * k.cv1 * k.cv1;
    const real kd2 = (k.kappa * distance) * (k.kappa * distance);
    const real fv1 = chi3 / (chi3 + cv1_3);
    const real d_fv1 = real(3) * chi * chi * cv1_3 / ((chi3 + cv1_3) * (chi3 + cv1_3));
    const real fv2 = real(1) - chi / (real(1) + chi * fv1);
    const real d_fv2 = -(real(1) - chi * chi * d_fv1)
                       / ((real(1) + chi * fv1) * (real(1) + chi * fv1));
    const real s_bar = nt * fv2 / kd2;
    const real d_s_bar = (fv2 + chi * d_fv2) / kd2;
    real s_tilde, d_s_tilde;
    if (s_bar >= -k.cv2 * vorticity) {
        s_tilde = vorticity + s_bar;
        d_s_tilde = d_s_bar;
    } else {
        const real numerator = k.cv2 * k.cv2 * vorticity + k.cv3 * s_bar;
        const real denominator = fmax((k.cv3 - real(2) * k.cv2) * vorticity - s_bar,
                                      real(1e-300));
        s_tilde = vorticity + vorticity * numerator / denominator;
        d_s_tilde = vorticity * (k.cv3 * denominator + numerator)
                    / (denominator * denominator) * d_s_bar;
    }
    if (!(s_tilde > real(1e-16))) {
        s_tilde = real(1e-16);
        d_s_tilde = 0;
    }
    real r = nt / (s_tilde * kd2), d_r = 0;
    if (r < k.r_max) {
        d_r = real(1) / (s_tilde * kd2) - r * d_s_tilde / s_tilde;
    } else {
        r = k.r_max;
    }
    const real g = r + k.cw2 * (pow(r, real(6)) - r);
    const real d_g = (real(1) + k.cw2 * (real(6) * pow(r, real(5)) - real(1))) * d_r;
    const real cw3_6 = pow(k.cw3, real(6)), g6 = pow(g, real(6));
    const real root = pow((real(1) + cw3_6) / (g6 + cw3_6), real(1) / real(6));
    const real fw = g * root;
    const real d_fw = root * cw3_6 / (g6 + cw3_6) * d_g;
    const real ft2 = k.ct3 * exp(-k.ct4 * chi * chi);
    const real d_ft2 = real(-2) * k.ct4 * chi * ft2 / nu;
    const real ratio = nt / distance;
    const real destruction = k.cw1 * fw - k.cb1 / (k.kappa * k.kappa) * ft2;
    const real d_destruction = k.cw1 * d_fw - k.cb1 / (k.kappa * k.kappa) * d_ft2;
    *rate = k.cb1 * (real(1) - ft2) * s_tilde * nt - destruction * ratio * ratio;
    *derivative = k.cb1 * ((real(1) - ft2) * (s_tilde + nt * d_s_tilde) - d_ft2 * s_tilde * nt)
                  - d_destruction * ratio * ratio - real(2) * destruction * ratio / distance;
}

// Menter's SST constants, in the order of menter_sst.KERNEL_CONSTANTS.
template <typename real>
struct SSTConstants {
    real sigma_k1, sigma_w1, beta1, sigma_k2, sigma_w2, beta2, beta_star, a1, gamma1, gamma2,
        production_limit;

    __device__ explicit SSTConstants(const real* c)
        : sigma_k1(c[0]), sigma_w1(c[1]), beta1(c[2]), sigma_k2(c[3]), sigma_w2(c[4]),
          beta2(c[5]), beta_star(c[6]), a1(c[7]), gamma1(c[8]), gamma2(c[9]),
          production_limit(c[10]) {}
};

template <typename real>
__device__ __forceinline__ real blend(real f1, real inner, real outer) {
    return f1 * inner + (real(1) - f1) * outer;
}

// The distance terms of menter_sst.blending: sqrt(k) / (beta* omega d) (turbulent) and
// 500 nu / (d^2 omega) (viscous).
template <typename real>
__device__ __forceinline__ void sst_distance_terms(real k_plus, real omega, real nu, real dist,
                                                   const SSTConstants<real>& m,
                                                   real* turbulent, real* viscous) {
    *viscous = real(500) * nu / (dist * dist * omega);
    *turbulent = sqrt(k_plus) / (m.beta_star * omega * dist);
}

// menter_sst.eddy_viscosity with F2 = tanh(max(2 turbulent, viscous)^2): mu_t, and F2.
template <typename real>
__device__ __forceinline__ real sst_eddy_viscosity(real rho, real k_plus, real omega,
                                                   real vorticity, real turbulent, real viscous,
                                                   const SSTConstants<real>& m, real* f2) {
    const real arg2 = fmax(real(2) * turbulent, viscous);
    *f2 = tanh(arg2 * arg2);
    return rho * m.a1 * k_plus / fmax(m.a1 * omega, vorticity * *f2);
}

// The scalar's ghost value across boundary face b of a cell holding `inside`.
template <typename real>
__device__ __forceinline__ real scalar_ghost(int kind, const real* wall, int b, real inside,
                                             real mass_flux, real free_stream) {
    if (kind == WALL) return real(2) * (wall == nullptr ? real(0) : wall[b]) - inside;
    if (kind == FREE_STREAM && mass_flux < 0) return free_stream;
    return inside;
}

// The wall values of scalar s (or none: 0) in `wall`, those of all the scalars.
template <typename real>
__device__ __forceinline__ const real* scalar_wall(const real* wall, int s, int n_boundary) {
    return wall == nullptr ? nullptr : wall + s * n_boundary;
}

// The mesh's arrays of the scalars' cell gradients: faces, slots and least-squares
// coefficients (null under Green-Gauss), as the mean flow's gradient kernel reads them.
template <typename real>
struct ScalarStencil {
    const int* left;
    const int* right;
    const real* normal;
    const real* area;
    int n_faces, n_interior;
    const int* kind;
    const int* slots;
    int width;
    const real* coef_left;
    const real* coef_right;
    const real* volume;
};

// grad phi of cell c for the NS scalars phi (Green-Gauss or least squares over the cell's
// face slots; a boundary neighbour is the mean of the cell and its ghost), stored in
// gradient [(s * DIM + d) * n_cells + c] (the face kernel's) and returned in grad; value:
// the cell's scalars.
template <typename real, int DIM, int GRADIENT, int NS>
__device__ __forceinline__ void scalar_gradients(
    int c, const real* __restrict__ phi, const real* __restrict__ wall,
    const real* __restrict__ mass_flux, int n_cells, const ScalarStencil<real>& S,
    const real* __restrict__ free_stream, real* __restrict__ gradient, real value[NS],
    real grad[NS][DIM]) {
    const int n_boundary = S.n_faces - S.n_interior;
#pragma unroll
    for (int s = 0; s < NS; ++s) {
        value[s] = phi[s * n_cells + c];
#pragma unroll
        for (int d = 0; d < DIM; ++d) grad[s][d] = 0;
    }
    for_each_face(S.slots, S.width, n_cells, S.n_faces, c, [&](int f, bool is_right) {
        real neighbour[NS];
        if (f < S.n_interior) {
            const int m = is_right ? S.left[f] : S.right[f];
#pragma unroll
            for (int s = 0; s < NS; ++s) neighbour[s] = phi[s * n_cells + m];
        } else {
            const int b = f - S.n_interior;
#pragma unroll
            for (int s = 0; s < NS; ++s) {
                const real ghost = scalar_ghost(S.kind[b], scalar_wall(wall, s, n_boundary), b,
                                                value[s], mass_flux[f], free_stream[s]);
                neighbour[s] = real(0.5) * (value[s] + ghost);
            }
        }
        if (GRADIENT == LEAST_SQUARES) {
            const real* coef = is_right ? S.coef_right : S.coef_left;
#pragma unroll
            for (int s = 0; s < NS; ++s) {
                const real jump = is_right ? value[s] - neighbour[s] : neighbour[s] - value[s];
#pragma unroll
                for (int d = 0; d < DIM; ++d) grad[s][d] += jump * coef[d * S.n_faces + f];
            }
        } else {
            const real a = is_right ? -S.area[f] : S.area[f];
#pragma unroll
            for (int s = 0; s < NS; ++s) {
                const real face = f < S.n_interior ? real(0.5) * (value[s] + neighbour[s])
                                                   : neighbour[s];
#pragma unroll
                for (int d = 0; d < DIM; ++d)
                    grad[s][d] += face * (S.normal[d * S.n_faces + f] * a);
            }
        }
    });
#pragma unroll
    for (int s = 0; s < NS; ++s)
#pragma unroll
        for (int d = 0; d < DIM; ++d) {
            if (GRADIENT == GREEN_GAUSS) grad[s][d] /= S.volume[c];
            gradient[(s * DIM + d) * n_cells + c] = grad[s][d];
        }
}

// The vorticity magnitude of cell c from its velocity gradients du_i/dx_j =
// mean_gradient[((1 + i) * DIM + j) * n + c].
template <typename real, int DIM>
__device__ __forceinline__ real vorticity_of(const real* __restrict__ g, int n, int c) {
    auto du = [&](int i, int j) { return g[((1 + i) * DIM + j) * n + c]; };
    if (DIM == 2) return fabs(du(1, 0) - du(0, 1));
    const real x = du(2, 1) - du(1, 2), y = du(0, 2) - du(2, 0), z = du(1, 0) - du(0, 1);
    return sqrt(x * x + y * y + z * z);
}

// SA-neg per cell: grad nt (scalar_gradients; wall: null), the diffusivity rho (nu + nt
// fn), the sources times the volume (production - destruction, cb2 and the
// density-gradient term) and their damping derivative times the volume, and the density.
template <typename real, int DIM, int GRADIENT>
__global__ void __launch_bounds__(256) sa_cell_kernel(
    const real* __restrict__ nt, const real* __restrict__ wall,
    const real* __restrict__ mass_flux, int n_cells, const int* __restrict__ left,
    const int* __restrict__ right, const real* __restrict__ normal,
    const real* __restrict__ area, int n_faces, int n_interior, const int* __restrict__ kind,
    const int* __restrict__ slots, int width, const real* __restrict__ coef_left,
    const real* __restrict__ coef_right, const real* __restrict__ volume,
    const real* __restrict__ free_stream, real* __restrict__ gradient,
    const real* __restrict__ U, const real* __restrict__ mean_gradient,
    const real* __restrict__ distance, const real* __restrict__ constants, real mu_ref,
    real sutherland, int constant_law, real gamma, real* __restrict__ diffusivity,
    real* __restrict__ source, real* __restrict__ damping, real* __restrict__ density) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_cells) return;
    const ScalarStencil<real> S{left, right, normal, area, n_faces, n_interior, kind,
                                slots, width, coef_left, coef_right, volume};
    real value[1], grad[1][DIM];
    scalar_gradients<real, DIM, GRADIENT, 1>(c, nt, wall, mass_flux, n_cells, S, free_stream,
                                             gradient, value, grad);
    const SAConstants<real> k(constants);
    real rho;
    const real nu = kinematic_viscosity<real, DIM>(U, n_cells, c, mu_ref, sutherland,
                                                   constant_law, gamma, &rho);
    real rate, derivative;
    sa_source(value[0], nu, vorticity_of<real, DIM>(mean_gradient, n_cells, c), distance[c],
              k, &rate, &derivative);
    real squared = 0, cross = 0;
#pragma unroll
    for (int d = 0; d < DIM; ++d) {
        squared += grad[0][d] * grad[0][d];
        cross += mean_gradient[d * n_cells + c] * grad[0][d];  // grad rho . grad nt
    }
    const real vol = volume[c];
    diffusivity[c] = rho * sa_diffusivity(nu, value[0], k);
    source[c] = (rho * rate + k.cb2 / k.sigma * rho * squared
                 - (nu + value[0]) / k.sigma * cross) * vol;
    damping[c] = fabs(derivative) * rho * vol;  // either sign: see SpalartAllmarasFV.residual
    density[c] = rho;
}

// SST per cell (menter_sst.blending, eddy_viscosity, sources): grad k and grad omega
// (scalar_gradients, k and omega in turn in phi and wall), k's and omega's
// diffusivities mu + sigma mu_t (sigma blended by F1), their sources times the volume and
// damping derivatives times the volume, and the density.
template <typename real, int DIM, int GRADIENT>
__global__ void __launch_bounds__(256) sst_cell_kernel(
    const real* __restrict__ phi, const real* __restrict__ wall,
    const real* __restrict__ mass_flux, int n_cells, const int* __restrict__ left,
    const int* __restrict__ right, const real* __restrict__ normal,
    const real* __restrict__ area, int n_faces, int n_interior, const int* __restrict__ kind,
    const int* __restrict__ slots, int width, const real* __restrict__ coef_left,
    const real* __restrict__ coef_right, const real* __restrict__ volume,
    const real* __restrict__ free_stream, real* __restrict__ gradient,
    const real* __restrict__ U, const real* __restrict__ mean_gradient,
    const real* __restrict__ distance, const real* __restrict__ constants, real mu_ref,
    real sutherland, int constant_law, real gamma, real* __restrict__ diffusivity_k, real* __restrict__ diffusivity_omega,
    real* __restrict__ source_k, real* __restrict__ source_omega,
    real* __restrict__ damping_k, real* __restrict__ damping_omega,
    real* __restrict__ density) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_cells) return;
    const ScalarStencil<real> S{left, right, normal, area, n_faces, n_interior, kind,
                                slots, width, coef_left, coef_right, volume};
    real values[2], grad[2][DIM];
    scalar_gradients<real, DIM, GRADIENT, 2>(c, phi, wall, mass_flux, n_cells, S,
                                             free_stream, gradient, values, grad);
    const SSTConstants<real> m(constants);
    real rho;
    const real nu = kinematic_viscosity<real, DIM>(U, n_cells, c, mu_ref, sutherland,
                                                   constant_law, gamma, &rho);
    const real mu = nu * rho;
    const real vorticity = vorticity_of<real, DIM>(mean_gradient, n_cells, c);
    const real k = values[0], omega = values[1], k_plus = fmax(k, real(0));
    real cross = 0;
#pragma unroll
    for (int d = 0; d < DIM; ++d) cross += grad[0][d] * grad[1][d];
    // F1 and F2
    const real dist = distance[c], d2 = dist * dist;
    real turbulent, viscous, f2;
    sst_distance_terms(k_plus, omega, nu, dist, m, &turbulent, &viscous);
    const real cross_term = fmax(real(2) * rho * m.sigma_w2 / omega * cross, real(1e-20));
    const real arg1 = fmin(fmax(turbulent, viscous),
                           real(4) * rho * m.sigma_w2 * k_plus / (cross_term * d2));
    const real f1 = tanh(arg1 * arg1 * arg1 * arg1);
    const real mu_t = sst_eddy_viscosity(rho, k_plus, omega, vorticity, turbulent, viscous, m,
                                         &f2);
    diffusivity_k[c] = mu + blend(f1, m.sigma_k1, m.sigma_k2) * mu_t;
    diffusivity_omega[c] = mu + blend(f1, m.sigma_w1, m.sigma_w2) * mu_t;
    // sources
    const real destruction = m.beta_star * rho * omega * k_plus;
    const real production = fmin(mu_t * vorticity * vorticity,
                                 m.production_limit * destruction);
    const real gamma_f1 = blend(f1, m.gamma1, m.gamma2), beta_f1 = blend(f1, m.beta1, m.beta2);
    const real cross_diffusion = real(2) * (real(1) - f1) * rho * m.sigma_w2 / omega * cross;
    const real vol = volume[c];
    source_k[c] = (production - destruction) * vol;
    source_omega[c] = (gamma_f1 * rho * vorticity * vorticity - beta_f1 * rho * omega * omega
                       + cross_diffusion) * vol;
    damping_k[c] = m.beta_star * rho * omega * vol;
    damping_omega[c] = real(2) * beta_f1 * rho * omega * vol;
    density[c] = rho;
}

template <typename real, int DIM, int NS>
__global__ void __launch_bounds__(256) scalar_face_kernel(
    const real* __restrict__ phi, const real* __restrict__ gradient,
    const real* __restrict__ diffusivity, const real* __restrict__ wall,
    const real* __restrict__ mass_flux,
    const int* __restrict__ left, const int* __restrict__ right,
    const real* __restrict__ normal, const real* __restrict__ area,
    const real* __restrict__ tangent, const real* __restrict__ inverse_length, int n_cells,
    int n_faces, int n_interior, const int* __restrict__ kind,
    const real* __restrict__ free_stream, const real* __restrict__ sigma,
    real* __restrict__ flux, real* __restrict__ coefficient, real* __restrict__ entries) {
    const int f = blockIdx.x * blockDim.x + threadIdx.x;
    if (f >= n_faces) return;
    const int l = left[f];
    const bool interior = f < n_interior;
    const int r = interior ? right[f] : l;
    const int b = f - n_interior, n_boundary = n_faces - n_interior;
    const int boundary_kind = interior ? 0 : kind[b];
    const real m = mass_flux[f], face_area = area[f], inverse = inverse_length[f];
    real t[DIM], n[DIM];
#pragma unroll
    for (int d = 0; d < DIM; ++d) {
        t[d] = tangent[d * n_faces + f];
        n[d] = normal[d * n_faces + f];
    }
#pragma unroll
    for (int s = 0; s < NS; ++s) {
        const real* values = phi + s * n_cells;
        const real* diffusivities = diffusivity + s * n_cells;
        const real value_l = values[l];
        const real value_r = interior ? values[r]
                                      : scalar_ghost(boundary_kind,
                                                     scalar_wall(wall, s, n_boundary), b,
                                                     value_l, m, free_stream[s]);
        const real face = interior ? real(0.5) * (diffusivities[l] + diffusivities[r])
                                   : diffusivities[l];
        const real c = face / sigma[s] * face_area;
        real grad_l[DIM], grad_r[DIM], face_gradient[DIM];
#pragma unroll
        for (int d = 0; d < DIM; ++d) {
            grad_l[d] = gradient[(s * DIM + d) * n_cells + l];
            grad_r[d] = gradient[(s * DIM + d) * n_cells + r];
        }
        corrected_gradient<real, DIM>(grad_l, grad_r, value_l, value_r, t, inverse,
                                      face_gradient);
        real normal_gradient = 0;
#pragma unroll
        for (int d = 0; d < DIM; ++d) normal_gradient += face_gradient[d] * n[d];
        const real convective = fmax(m, real(0)) * value_l + fmin(m, real(0)) * value_r;
        flux[s * n_faces + f] = convective - c * normal_gradient;
        const real cf = c * inverse;
        coefficient[s * n_faces + f] = cf;
        // the implicit matrix's entries of an interior face (see scalar_sweep_kernel): the
        // left cell's row (inward - cf) and the right cell's (-out - cf)
        if (entries != nullptr && interior) {
            entries[s * 2 * n_interior + f] = fmin(m, real(0)) - cf;
            entries[s * 2 * n_interior + n_interior + f] = -fmax(m, real(0)) - cf;
        }
    }
}

// Per cell and scalar: residual = its faces' fluxes (out of the left cell, into the right)
// plus the sources; diagonal = rho V / dt + damping + the faces' implicit parts; with
// squares, adds the sum of (residual / V)^2 over the cells [0, n_own) to squares[s].
template <typename real, int NS>
__global__ void __launch_bounds__(256) scalar_matrix_kernel(
    const real* __restrict__ flux, const real* __restrict__ coefficient,
    const real* __restrict__ mass_flux, int n_cells, int n_faces, int n_interior,
    const int* __restrict__ kind, const int* __restrict__ slots, int width,
    const real* __restrict__ volume, const real* __restrict__ dt,
    const real* __restrict__ source, const real* __restrict__ damping,
    const real* __restrict__ density, real* __restrict__ residual,
    real* __restrict__ diagonal, int n_own, double* __restrict__ squares) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    double rate2[NS];
#pragma unroll
    for (int s = 0; s < NS; ++s) rate2[s] = 0;
    if (c < n_cells) {
        real faces[NS], implicit[NS];
#pragma unroll
        for (int s = 0; s < NS; ++s) faces[s] = implicit[s] = 0;
        for_each_face(slots, width, n_cells, n_faces, c, [&](int f, bool is_right) {
            const real m = mass_flux[f];
            const real out = fmax(m, real(0)), inward = fmin(m, real(0));
            const int b = f < n_interior ? -1 : kind[f - n_interior];
#pragma unroll
            for (int s = 0; s < NS; ++s) {
                const real cf = coefficient[s * n_faces + f];
                if (is_right) {
                    faces[s] += flux[s * n_faces + f];
                    implicit[s] += cf - inward;
                } else {
                    faces[s] -= flux[s * n_faces + f];
                    if (b < 0) {
                        implicit[s] += out + cf;
                    } else {
                        implicit[s] += out + (b == WALL ? real(2) * cf - inward
                                              : b == FREE_STREAM && m < 0 ? cf : real(0));
                    }
                }
            }
        });
        const real held = density[c] * volume[c] / dt[c];
#pragma unroll
        for (int s = 0; s < NS; ++s) {
            const real r = faces[s] + source[s * n_cells + c];
            residual[s * n_cells + c] = r;
            diagonal[s * n_cells + c] = held + damping[s * n_cells + c] + implicit[s];
            if (c < n_own) {
                const double rate = double(r) / double(volume[c]);
                rate2[s] = rate * rate;
            }
        }
    }
    if (squares != nullptr) add_block_sums<NS>(rate2, squares);  // every thread
}

// One level of a sweep of (D + L) D^-1 (D + U), over the rows [first, last) of the mean
// flow's sweep tables (SweepTables of solvers/fv/lusgs.py: per row i its cell cells[i],
// per slot k its upstream neighbour upstream[k * n_rows + i] (-1: none), whose matrix
// entry in row cells[i] is entries[entry[k * n_rows + i]], as scalar_face_kernel wrote
// it): total = the sum of the entries times x of the upstream neighbours; forward:
// x[c] = (rhs[c] - total) / D; backward: x[c] = rhs[c] - total / D.
template <typename real>
__global__ void __launch_bounds__(256) scalar_sweep_kernel(
    int first, int last, int n_rows, int width, const int* __restrict__ cells,
    const int* __restrict__ upstream, const int* __restrict__ entry,
    const real* __restrict__ entries, const real* __restrict__ diagonal, const real* rhs,
    real* x, int forward) {
    const int i = first + blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= last) return;
    const int c = cells[i];
    real total = 0;
    for (int k = 0; k < width; ++k) {
        const int j = upstream[k * n_rows + i];
        if (j < 0) continue;
        total += entries[entry[k * n_rows + i]] * x[j];
    }
    x[c] = forward ? (rhs[c] - total) / diagonal[c] : rhs[c] - total / diagonal[c];
}

// phi += dphi on every cell, its fall at most max_fall phi (where max_fall > 0) and its
// size at most max_change (|phi| + scale) (where max_change > 0); adds 1 to bad[0] for
// each cell of [0, n_own) whose new phi is not finite or (where ceiling > 0) larger in
// size than ceiling.
template <typename real>
__global__ void __launch_bounds__(256) scalar_update_kernel(
    real* __restrict__ phi, const real* __restrict__ change, int n_cells, real max_fall,
    real max_change, real scale, real ceiling, int n_own, double* __restrict__ bad) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_cells) return;
    const real value = phi[c];
    real d = change[c];
    if (max_fall > 0) d = fmax(d, -max_fall * value);
    if (max_change > 0) {
        const real bound = max_change * (fabs(value) + scale);
        d = fmin(fmax(d, -bound), bound);
    }
    const real updated = value + d;
    phi[c] = updated;
    if (c < n_own && (!isfinite(updated) || (ceiling > 0 && fabs(updated) > ceiling)))
        atomicAdd(bad, 1.0);
}

// spalart_allmaras.eddy_viscosity of every cell: mu_t = rho nt fv1(nt / nu), 0 where
// nt < 0.
template <typename real, int DIM>
__global__ void __launch_bounds__(256) sa_eddy_viscosity_kernel(
    const real* __restrict__ U, const real* __restrict__ nt, int n_cells,
    const real* __restrict__ constants, real mu_ref, real sutherland, int constant_law,
    real gamma, real* __restrict__ mu_t) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_cells) return;
    const SAConstants<real> k(constants);
    real rho;
    const real nu = kinematic_viscosity<real, DIM>(U, n_cells, c, mu_ref, sutherland,
                                                   constant_law, gamma, &rho);
    const real positive = fmax(nt[c], real(0));
    const real chi = positive / nu, chi3 = chi * chi * chi;
    mu_t[c] = rho * positive * (chi3 / (chi3 + k.cv1 * k.cv1 * k.cv1));
}

// SST's mu_t of every cell (menter_sst.blending's F2, menter_sst.eddy_viscosity), from the
// mean flow's primitive gradients.
template <typename real, int DIM>
__global__ void __launch_bounds__(256) sst_eddy_viscosity_kernel(
    const real* __restrict__ U, const real* __restrict__ k_values,
    const real* __restrict__ omega_values, const real* __restrict__ mean_gradient,
    const real* __restrict__ distance, int n_cells, const real* __restrict__ constants,
    real mu_ref, real sutherland, int constant_law, real gamma, real* __restrict__ mu_t) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_cells) return;
    const SSTConstants<real> m(constants);
    real rho;
    const real nu = kinematic_viscosity<real, DIM>(U, n_cells, c, mu_ref, sutherland,
                                                   constant_law, gamma, &rho);
    const real k_plus = fmax(k_values[c], real(0)), omega = omega_values[c];
    real turbulent, viscous, f2;
    sst_distance_terms(k_plus, omega, nu, distance[c], m, &turbulent, &viscous);
    mu_t[c] = sst_eddy_viscosity(rho, k_plus, omega,
                                 vorticity_of<real, DIM>(mean_gradient, n_cells, c), turbulent,
                                 viscous, m, &f2);
}

// menter_sst's omega on a no-slip wall at each boundary face b, 60 nu / (beta1 d^2) of the
// face's cell, into omega's row of the scalars' wall values (walls[n_boundary + b]).
template <typename real, int DIM>
__global__ void __launch_bounds__(256) sst_wall_omega_kernel(
    const real* __restrict__ U, const int* __restrict__ left,
    const real* __restrict__ distance, int n_cells, int n_faces, int n_interior,
    const real* __restrict__ constants, real mu_ref, real sutherland, int constant_law,
    real gamma, real wall_factor, real* __restrict__ walls) {
    const int b = blockIdx.x * blockDim.x + threadIdx.x, n_boundary = n_faces - n_interior;
    if (b >= n_boundary) return;
    const SSTConstants<real> m(constants);
    const int c = left[n_interior + b];
    real rho;
    const real nu = kinematic_viscosity<real, DIM>(U, n_cells, c, mu_ref, sutherland,
                                                   constant_law, gamma, &rho);
    const real d = distance[c];
    walls[n_boundary + b] = wall_factor * nu / (m.beta1 * (d * d));
}

// Each face's eddy viscosity: the mean of its cells' mu_t; a boundary face's cell's, 0 on
// a no-slip wall.
template <typename real>
__global__ void __launch_bounds__(256) face_eddy_viscosity_kernel(
    const real* __restrict__ mu_t, const int* __restrict__ left, const int* __restrict__ right,
    int n_faces, int n_interior, const int* __restrict__ kind, real* __restrict__ face) {
    const int f = blockIdx.x * blockDim.x + threadIdx.x;
    if (f >= n_faces) return;
    const real l = mu_t[left[f]];
    face[f] = f < n_interior               ? real(0.5) * (l + mu_t[right[f]])
              : kind[f - n_interior] == WALL ? real(0)
                                             : l;
}

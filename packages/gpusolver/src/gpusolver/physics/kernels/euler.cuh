// The Euler equations on the device: primitive states, physical fluxes and the Riemann
// fluxes of gpusolver/physics/fluxes.py (Roe with Harten's entropy fix, Rusanov, AUSMPW+),
// shared by the finite-volume kernels (solvers/fv/kernels) and the DG kernels
// (solvers/dg/kernels). States are primitive (rho, velocity, p) unless named otherwise.
#pragma once

#include "../../backends/ids.cuh"

template <int DIM>
struct Vars {
    static constexpr int N = DIM + 2;
};

// Riemann fluxes: the template argument FLUX is an enum Flux of ids.cuh (JST: the
// finite-volume central scheme, whose flux between cells lives in
// solvers/fv/kernels/residual.cu; Roe on the boundary); ENTROPY_FIX is Harten's.

template <typename real, int DIM>
__device__ __forceinline__ void primitive(const real* __restrict__ U, int n, int c,
                                          real gamma, real w[Vars<DIM>::N]) {
    const real rho = U[c];
    real kinetic = 0;
#pragma unroll
    for (int d = 0; d < DIM; ++d) {
        w[1 + d] = U[(1 + d) * n + c] / rho;
        kinetic += w[1 + d] * w[1 + d];
    }
    w[0] = rho;
    w[DIM + 1] = (gamma - real(1)) * (U[(DIM + 1) * n + c] - real(0.5) * rho * kinetic);
}

template <typename real, int DIM>
__device__ __forceinline__ real normal_velocity(const real w[Vars<DIM>::N], const real n[DIM]) {
    real un = 0;
#pragma unroll
    for (int d = 0; d < DIM; ++d) un += w[1 + d] * n[d];
    return un;
}

template <typename real>
__device__ __forceinline__ real sound_speed(real rho, real p, real gamma) {
    return sqrt(gamma * p / rho);
}

// ---------------------------------------------------------------- fluxes
template <typename real, int DIM>
__device__ __forceinline__ real total_enthalpy(const real w[Vars<DIM>::N], real gamma) {
    real q2 = 0;
#pragma unroll
    for (int d = 0; d < DIM; ++d) q2 += w[1 + d] * w[1 + d];
    return gamma / (gamma - real(1)) * w[DIM + 1] / w[0] + real(0.5) * q2;
}

template <typename real, int DIM>
__device__ __forceinline__ void euler_flux(const real w[Vars<DIM>::N], const real n[DIM],
                                           real gamma, real f[Vars<DIM>::N]) {
    const real un = normal_velocity<real, DIM>(w, n);
    f[0] = w[0] * un;
#pragma unroll
    for (int d = 0; d < DIM; ++d) f[1 + d] = w[0] * w[1 + d] * un + w[DIM + 1] * n[d];
    f[DIM + 1] = w[0] * total_enthalpy<real, DIM>(w, gamma) * un;
}

// The flux through a wall that nothing crosses: the inside's pressure times the normal.
template <typename real, int DIM>
__device__ __forceinline__ void wall_flux(const real w[Vars<DIM>::N], const real n[DIM],
                                          real f[Vars<DIM>::N]) {
    f[0] = 0;
#pragma unroll
    for (int d = 0; d < DIM; ++d) f[1 + d] = w[DIM + 1] * n[d];
    f[DIM + 1] = 0;
}

template <typename real>
__device__ __forceinline__ real harten(real eigenvalue, real delta) {
    const real m = fabs(eigenvalue);
    return m < delta ? (m * m + delta * delta) / (real(2) * delta) : m;
}

// LOW_MACH: Rieper's fix (LMRoe, J. Comput. Phys. 230, 2011): the normal velocity jump in
// the acoustic waves scaled by min(1, |u| / c), which removes the O(1/M) pressure
// dissipation of low-speed flow; and Harten's entropy fix of the entropy and shear waves
// a tenth of the acoustic waves' (ENTROPY_FIX_LOW_MACH_LINEAR; see physics/fluxes.py).
template <typename real, int DIM, bool LOW_MACH = false>
__device__ void roe(const real wl[Vars<DIM>::N], const real wr[Vars<DIM>::N], const real n[DIM],
                    real gamma, real flux[Vars<DIM>::N]) {
    constexpr int NV = Vars<DIM>::N, P = DIM + 1;
    const real sl = sqrt(wl[0]), sr = sqrt(wr[0]);
    const real weight_l = sl / (sl + sr), weight_r = sr / (sl + sr);
    const real rho = sl * sr;
    real velocity[DIM], d_velocity[DIM];
    real q2 = 0, un = 0, d_un = 0;
#pragma unroll
    for (int d = 0; d < DIM; ++d) {
        velocity[d] = weight_l * wl[1 + d] + weight_r * wr[1 + d];
        d_velocity[d] = wr[1 + d] - wl[1 + d];
        q2 += velocity[d] * velocity[d];
        un += velocity[d] * n[d];
        d_un += d_velocity[d] * n[d];
    }
    const real enthalpy = weight_l * total_enthalpy<real, DIM>(wl, gamma)
                          + weight_r * total_enthalpy<real, DIM>(wr, gamma);
    const real c = sqrt((gamma - real(1)) * (enthalpy - real(0.5) * q2));
    const real d_rho = wr[0] - wl[0], d_p = wr[P] - wl[P];
    const real delta = real(ENTROPY_FIX) * c;
    const real d_acoustic = LOW_MACH ? fmin(real(1), sqrt(q2) / c) * d_un : d_un;
    const real a_minus = harten(un - c, delta) * (d_p - rho * c * d_acoustic) / (real(2) * c * c);
    const real a_plus = harten(un + c, delta) * (d_p + rho * c * d_acoustic) / (real(2) * c * c);
    const real lam_mid = harten(un, LOW_MACH ? real(ENTROPY_FIX_LOW_MACH_LINEAR) * c : delta);
    const real a_entropy = lam_mid * (d_rho - d_p / (c * c));
    const real a_shear = lam_mid * rho;
    real fl[NV], fr[NV];
    euler_flux<real, DIM>(wl, n, gamma, fl);
    euler_flux<real, DIM>(wr, n, gamma, fr);
    real dissipation[NV];
    dissipation[0] = a_minus + a_entropy + a_plus;
    real along = 0;
#pragma unroll
    for (int d = 0; d < DIM; ++d) {
        dissipation[1 + d] = a_minus * (velocity[d] - c * n[d]) + a_entropy * velocity[d]
                             + a_plus * (velocity[d] + c * n[d])
                             + a_shear * (d_velocity[d] - d_un * n[d]);
        along += velocity[d] * d_velocity[d];
    }
    dissipation[P] = a_minus * (enthalpy - un * c) + a_entropy * real(0.5) * q2
                     + a_plus * (enthalpy + un * c) + a_shear * (along - un * d_un);
#pragma unroll
    for (int v = 0; v < NV; ++v) flux[v] = real(0.5) * (fl[v] + fr[v] - dissipation[v]);
}

template <typename real, int DIM>
__device__ void rusanov(const real wl[Vars<DIM>::N], const real wr[Vars<DIM>::N],
                        const real n[DIM], real gamma, real flux[Vars<DIM>::N]) {
    constexpr int NV = Vars<DIM>::N, P = DIM + 1;
    const real speed_l = fabs(normal_velocity<real, DIM>(wl, n)) + sound_speed(wl[0], wl[P], gamma);
    const real speed_r = fabs(normal_velocity<real, DIM>(wr, n)) + sound_speed(wr[0], wr[P], gamma);
    const real smax = speed_r > speed_l ? speed_r : speed_l;
    real fl[NV], fr[NV];
    euler_flux<real, DIM>(wl, n, gamma, fl);
    euler_flux<real, DIM>(wr, n, gamma, fr);
    real q2l = 0, q2r = 0;
#pragma unroll
    for (int d = 0; d < DIM; ++d) {
        q2l += wl[1 + d] * wl[1 + d];
        q2r += wr[1 + d] * wr[1 + d];
    }
    real jump[NV];
    jump[0] = wr[0] - wl[0];
#pragma unroll
    for (int d = 0; d < DIM; ++d) jump[1 + d] = wr[0] * wr[1 + d] - wl[0] * wl[1 + d];
    jump[P] = (wr[P] / (gamma - real(1)) + real(0.5) * wr[0] * q2r)
              - (wl[P] / (gamma - real(1)) + real(0.5) * wl[0] * q2l);
#pragma unroll
    for (int v = 0; v < NV; ++v) flux[v] = real(0.5) * (fl[v] + fr[v] - smax * jump[v]);
}

template <typename real>
__device__ __forceinline__ real split_mach(real m, real sign) {
    return fabs(m) <= real(1) ? sign * real(0.25) * (m + sign) * (m + sign)
                              : real(0.5) * (m + sign * fabs(m));
}

template <typename real>
__device__ __forceinline__ real split_pressure(real m, real sign) {
    return fabs(m) <= real(1) ? real(0.25) * (m + sign) * (m + sign) * (real(2) - sign * m)
                              : real(0.5) * (real(1) + sign * (m > 0 ? real(1) : real(-1)));
}

template <typename real, int DIM>
__device__ void ausmpw_plus(const real wl[Vars<DIM>::N], const real wr[Vars<DIM>::N],
                            const real n[DIM], real gamma, real flux[Vars<DIM>::N]) {
    constexpr int P = DIM + 1;
    const real unl = normal_velocity<real, DIM>(wl, n), unr = normal_velocity<real, DIM>(wr, n);
    const real hl = total_enthalpy<real, DIM>(wl, gamma), hr = total_enthalpy<real, DIM>(wr, gamma);
    real q2l = 0, q2r = 0;
#pragma unroll
    for (int d = 0; d < DIM; ++d) {
        q2l += wl[1 + d] * wl[1 + d];
        q2r += wr[1 + d] * wr[1 + d];
    }
    const real h_normal = real(0.5) * (hl - real(0.5) * (q2l - unl * unl) + hr
                                       - real(0.5) * (q2r - unr * unr));
    const real cs = sqrt(real(2) * (gamma - real(1)) / (gamma + real(1)) * h_normal);
    const real upwind_speed = (unl + unr) > 0 ? fabs(unl) : fabs(unr);
    const real c = cs * cs / (upwind_speed > cs ? upwind_speed : cs);
    const real ml = unl / c, mr = unr / c;
    const real m_plus = split_mach(ml, real(1)), m_minus = split_mach(mr, real(-1));
    const real p_plus = split_pressure(ml, real(1)), p_minus = split_pressure(mr, real(-1));
    const real pl = wl[P], pr = wr[P];
    const real ps = p_plus * pl + p_minus * pr;
    const real ratio = pl < pr ? pl / pr : pr / pl;
    const real w = real(1) - ratio * ratio * ratio;
    // f = p / ps - 1, and 0 where ps = 0 (both sides supersonic away from the face)
    const real fl = ps != 0 ? pl / ps - real(1) : real(0);
    const real fr = ps != 0 ? pr / ps - real(1) : real(0);
    const bool positive = m_plus + m_minus >= 0;
    const real mbar_l = positive ? m_plus + m_minus * ((real(1) - w) * (real(1) + fr) - fl)
                                 : m_plus * w * (real(1) + fl);
    const real mbar_r = positive ? m_minus * w * (real(1) + fr)
                                 : m_minus + m_plus * ((real(1) - w) * (real(1) + fl) - fr);
    const real left = mbar_l * c, right = mbar_r * c;
    flux[0] = left * wl[0] + right * wr[0];
#pragma unroll
    for (int d = 0; d < DIM; ++d)
        flux[1 + d] = left * (wl[0] * wl[1 + d]) + right * (wr[0] * wr[1 + d]) + ps * n[d];
    flux[P] = left * (wl[0] * hl) + right * (wr[0] * hr);
}

template <typename real, int DIM, int FLUX>
__device__ __forceinline__ void riemann(const real wl[Vars<DIM>::N], const real wr[Vars<DIM>::N],
                                        const real n[DIM], real gamma, real flux[Vars<DIM>::N]) {
    if (FLUX == ROE) roe<real, DIM>(wl, wr, n, gamma, flux);
    else if (FLUX == LMROE) roe<real, DIM, true>(wl, wr, n, gamma, flux);
    else if (FLUX == RUSANOV) rusanov<real, DIM>(wl, wr, n, gamma, flux);
    else ausmpw_plus<real, DIM>(wl, wr, n, gamma, flux);
}

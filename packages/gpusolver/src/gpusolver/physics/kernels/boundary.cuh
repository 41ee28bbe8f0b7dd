// Boundary conditions as ghost states, the device twin of gpusolver/physics/boundary.py:
// one condition code per boundary face (CONDITION_CODES there) and its values (outside
// state, wall temperature and velocity, or outlet pressure). Included by the FV and DG
// kernels; needs euler.cuh.
#pragma once

// enum Condition comes from ids.cuh
#include "../../backends/ids.cuh"

// Characteristic far field about the outside state (boundary.characteristic_ghost).
template <typename real, int DIM>
__device__ void characteristic_ghost(const real w[Vars<DIM>::N], const real n[DIM],
                                     const real out[Vars<DIM>::N], real gamma,
                                     real g[Vars<DIM>::N]) {
    constexpr int P = DIM + 1;
    const real c0 = sound_speed(w[0], w[P], gamma);
    const real impedance = w[0] * c0;
    const real un_in = normal_velocity<real, DIM>(w, n);
    const real un_out = normal_velocity<real, DIM>(out, n);
    const real pressure = real(0.5) * (w[P] + out[P] + impedance * (un_in - un_out));
    const real un = real(0.5) * (un_in + un_out) + (w[P] - out[P]) / (real(2) * impedance);
    const bool outflow = un_in > 0;
    const real* up = outflow ? w : out;
    const real un_up = outflow ? un_in : un_out;
    if (fabs(un_in) >= c0) {
#pragma unroll
        for (int v = 0; v < DIM + 2; ++v) g[v] = up[v];
        return;
    }
    g[0] = up[0] + (pressure - up[P]) / (c0 * c0);
#pragma unroll
    for (int d = 0; d < DIM; ++d) g[1 + d] = up[1 + d] + (un - un_up) * n[d];
    g[P] = pressure;
}

// Ghost state of the interior primitive state w across a boundary of condition ``code``
// with ``value``, unit outward normal n (not for PERIODIC, which the caller resolves).
template <typename real, int DIM>
__device__ void boundary_ghost(int code, const real value[Vars<DIM>::N],
                               const real w[Vars<DIM>::N], const real n[DIM], real gamma,
                               real g[Vars<DIM>::N]) {
    constexpr int NV = Vars<DIM>::N, P = DIM + 1;
#pragma unroll
    for (int v = 0; v < NV; ++v) g[v] = w[v];
    switch (code) {
        case MIRROR: {
            const real un = normal_velocity<real, DIM>(w, n);
#pragma unroll
            for (int d = 0; d < DIM; ++d) g[1 + d] = w[1 + d] - real(2) * un * n[d];
            break;
        }
        case NO_SLIP_ADIABATIC:
#pragma unroll
            for (int d = 0; d < DIM; ++d) g[1 + d] = real(2) * value[1 + d] - w[1 + d];
            break;
        case NO_SLIP_ISOTHERMAL: {  // wall temperature in value[0]
            const real t = fmax(real(2) * value[0] - gamma * w[P] / w[0], real(0.5) * value[0]);
            g[0] = gamma * w[P] / t;
#pragma unroll
            for (int d = 0; d < DIM; ++d) g[1 + d] = real(2) * value[1 + d] - w[1 + d];
            break;
        }
        case FARFIELD:
            characteristic_ghost<real, DIM>(w, n, value, gamma, g);
            break;
        case IMPOSED:
#pragma unroll
            for (int v = 0; v < NV; ++v) g[v] = value[v];
            break;
        case PRESSURE_OUTLET:  // outlet pressure in value[P]
            if (normal_velocity<real, DIM>(w, n) < sound_speed(w[0], w[P], gamma)) g[P] = value[P];
            break;
        case TOTAL_PRESSURE_INFLOW: {  // total temperature value[0], direction value[1..DIM],
                                       // total pressure value[P]; the interior's pressure
            const real pressure = fmin(w[P], value[P]);
            // (p0 / p)^((gamma - 1) / gamma) - 1 without the cancellation near p0 (fp32)
            const real mach2 = real(2) / (gamma - real(1))
                               * expm1((gamma - real(1)) / gamma
                                       * log1p((value[P] - pressure) / pressure));
            const real t = value[0] / (real(1) + real(0.5) * (gamma - real(1)) * mach2);
            const real speed = sqrt(mach2 * t);  // c^2 = T in these units
            g[0] = gamma * pressure / t;
#pragma unroll
            for (int d = 0; d < DIM; ++d) g[1 + d] = speed * value[1 + d];
            g[P] = pressure;
            break;
        }
        default:  // EXTRAPOLATED
            break;
    }
}


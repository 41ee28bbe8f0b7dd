// Laminar transport on the device: the viscosity law of gpusolver/physics/gas.py
// (Gas.viscosity) and the pointwise viscous flux of a conserved state and its gradient
// (Gas.viscous_flux after solvers/dg/viscous.primitive_gradients), shared by the
// finite-volume kernels (the law) and the DG kernels (both).
#pragma once

// Sutherland's law, non-dimensional: mu(1) = mu_ref; sutherland is its constant over the
// free-stream temperature.
template <typename real>
__device__ __forceinline__ real sutherland_viscosity(real t, real mu_ref, real sutherland) {
    return mu_ref * pow(t, real(1.5)) * (real(1) + sutherland) / (t + sutherland);
}

// The viscosity law and the Prandtl number; constant_law: mu = mu_ref at every temperature.
template <typename real>
struct Transport {
    real mu_ref, sutherland, prandtl;
    int constant_law;

    __device__ __forceinline__ real viscosity(real t) const {
        return constant_law ? mu_ref : sutherland_viscosity(t, mu_ref, sutherland);
    }
};

// F[d][v]: the 2-D viscous flux (0, tau[:, d], u . tau[:, d] + k dT/dx_d) along x_d of the
// conserved state U (rho, rho u, rho v, rho E) whose conserved gradient is G[v][d]; heat
// scales the conduction (0 at an adiabatic wall).
template <typename real>
__device__ void viscous_flux_tensor(const real U[4], const real G[4][2],
                                    const Transport<real>& transport, real gamma, real heat,
                                    real F[2][4]) {
    const real rho = U[0], velocity[2] = {U[1] / rho, U[2] / rho};
    real grad_u[2][2], grad_t[2];  // grad_u[i][d] = d u_i / d x_d
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int d = 0; d < 2; ++d) grad_u[i][d] = (G[1 + i][d] - velocity[i] * G[0][d]) / rho;
    const real speed2 = velocity[0] * velocity[0] + velocity[1] * velocity[1];
    const real pressure = (gamma - real(1)) * (U[3] - real(0.5) * rho * speed2);
    const real temperature = gamma * pressure / rho;
#pragma unroll
    for (int d = 0; d < 2; ++d) {
        const real grad_p = (gamma - real(1)) * (G[3][d] - real(0.5) * speed2 * G[0][d]
                                                 - rho * (velocity[0] * grad_u[0][d]
                                                          + velocity[1] * grad_u[1][d]));
        grad_t[d] = (gamma * grad_p - temperature * G[0][d]) / rho;
    }
    const real mu = transport.viscosity(temperature);
    const real conductivity = heat * mu / ((gamma - real(1)) * transport.prandtl);
    const real divergence = grad_u[0][0] + grad_u[1][1];
#pragma unroll
    for (int d = 0; d < 2; ++d) {
        F[d][0] = 0;
        F[d][3] = conductivity * grad_t[d];
#pragma unroll
        for (int i = 0; i < 2; ++i) {
            const real tau = mu * (grad_u[i][d] + grad_u[d][i]
                                   - (i == d ? real(2.0 / 3.0) * divergence : real(0)));
            F[d][1 + i] = tau;
            F[d][3] += velocity[i] * tau;
        }
    }
}

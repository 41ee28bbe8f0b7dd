// Relaxed updates on the device (gpusolver/integrators/relaxation.py): the fraction of a
// cell's change that keeps its state physical, shared by the LU-SGS sweeps
// (solvers/fv/kernels/lusgs.cu) and the explicit stages (solvers/fv/kernels/residual.cu).
#pragma once

#include "../../backends/ids.cuh"

// alpha, halved while start + alpha * change (conserved states: rho, rho u, E) has a
// non-positive density or pressure, at most RELAX_HALVINGS times and 0 after. `bad`: the
// state at the returned alpha is not finite (a divergence, which the caller reports).
template <typename real, int DIM>
__device__ __forceinline__ real positive_fraction(const real start[DIM + 2],
                                                  const real change[DIM + 2], real alpha,
                                                  real gamma, bool& bad) {
    constexpr int NV = DIM + 2;
    for (int halving = 0; halving <= RELAX_HALVINGS; ++halving) {
        real next[NV], kinetic = 0;
        bad = false;
#pragma unroll
        for (int v = 0; v < NV; ++v) {
            next[v] = start[v] + alpha * change[v];
            bad |= !isfinite(next[v]);
        }
#pragma unroll
        for (int d = 0; d < DIM; ++d) kinetic += next[1 + d] * next[1 + d];
        const real p = (gamma - real(1)) * (next[NV - 1] - real(0.5) * kinetic / next[0]);
        if (bad || (next[0] > 0 && p > 0)) break;
        alpha = halving < RELAX_HALVINGS ? real(0.5) * alpha : real(0);
    }
    return alpha;
}

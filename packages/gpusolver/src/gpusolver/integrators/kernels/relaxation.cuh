// Relaxed updates on the device (gpusolver/integrators/relaxation.py): the fraction of a
// cell's change that keeps its state physical, shared by the LU-SGS sweeps
// (solvers/fv/kernels/lusgs.cu), the explicit stages (solvers/fv/kernels/residual.cu) and
// the multigrid prolongation (solvers/fv/kernels/multigrid.cu).
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

// The largest fraction alpha <= 1 of `change` that moves the density and total energy of
// `start` by at most `limit` of their values (1 where the change is not finite, so that a
// non-finite update stays so and is reported).
template <typename real, int NV>
__device__ __forceinline__ real bounded_fraction(const real start[NV], const real change[NV],
                                                 real limit) {
    real alpha = 1;
    const int kept[2] = {0, NV - 1};
#pragma unroll
    for (int k = 0; k < 2; ++k) {
        const real size = fabs(change[kept[k]]), allowed = limit * fabs(start[kept[k]]);
        if (size > allowed) alpha = fmin(alpha, allowed / size);
    }
    return alpha;
}

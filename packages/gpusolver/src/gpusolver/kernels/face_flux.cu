// Face-based Rusanov flux for the 3D Euler equations, accumulated into cells.
//
// One thread per face. Conserved variables are Structure-of-Arrays:
// U[v * n_cells + c] for v = rho, rho*u, rho*v, rho*w, rho*E. Faces carry their
// two cells (right = -1 on the boundary, where the left state is mirrored as the
// ghost, so the flux is the physical flux of the left state), a unit normal
// pointing from left to right, and an area. The residual R (same layout) gets
// -flux*area on the left cell and +flux*area on the right cell, with atomics.

template <typename real>
__device__ __forceinline__ void euler_flux(const real q[5], real nx, real ny, real nz,
                                           real gamma, real f[5], real* speed) {
    const real rho = q[0];
    const real inv = real(1) / rho;
    const real u = q[1] * inv, v = q[2] * inv, w = q[3] * inv;
    const real p = (gamma - real(1)) * (q[4] - real(0.5) * rho * (u * u + v * v + w * w));
    const real un = u * nx + v * ny + w * nz;
    f[0] = rho * un;
    f[1] = q[1] * un + p * nx;
    f[2] = q[2] * un + p * ny;
    f[3] = q[3] * un + p * nz;
    f[4] = (q[4] + p) * un;
    *speed = fabs(un) + sqrt(gamma * p * inv);
}

template <typename real>
__device__ __forceinline__ void face_flux(const real* __restrict__ U,
                                          real* __restrict__ R,
                                          const int* __restrict__ left,
                                          const int* __restrict__ right,
                                          const real* __restrict__ normal,
                                          const real* __restrict__ area,
                                          int n_faces, int n_cells, real gamma) {
    const int f = blockIdx.x * blockDim.x + threadIdx.x;
    if (f >= n_faces) return;
    const int l = left[f];
    const int r = right[f];
    const real nx = normal[f], ny = normal[n_faces + f], nz = normal[2 * n_faces + f];
    real ql[5], qr[5], fl[5], fr[5], sl, sr;
#pragma unroll
    for (int v = 0; v < 5; ++v) ql[v] = U[v * n_cells + l];
#pragma unroll
    for (int v = 0; v < 5; ++v) qr[v] = r >= 0 ? U[v * n_cells + r] : ql[v];
    euler_flux(ql, nx, ny, nz, gamma, fl, &sl);
    euler_flux(qr, nx, ny, nz, gamma, fr, &sr);
    const real smax = sl > sr ? sl : sr;
    const real a = area[f];
#pragma unroll
    for (int v = 0; v < 5; ++v) {
        const real flux = a * real(0.5) * (fl[v] + fr[v] - smax * (qr[v] - ql[v]));
        atomicAdd(&R[v * n_cells + l], -flux);
        if (r >= 0) atomicAdd(&R[v * n_cells + r], flux);
    }
}

extern "C" __global__ void face_flux_f64(const double* U, double* R, const int* left,
                                         const int* right, const double* normal,
                                         const double* area, int n_faces, int n_cells,
                                         double gamma) {
    face_flux<double>(U, R, left, right, normal, area, n_faces, n_cells, gamma);
}

extern "C" __global__ void face_flux_f32(const float* U, float* R, const int* left,
                                         const int* right, const float* normal,
                                         const float* area, int n_faces, int n_cells,
                                         float gamma) {
    face_flux<float>(U, R, left, right, normal, area, n_faces, n_cells, gamma);
}

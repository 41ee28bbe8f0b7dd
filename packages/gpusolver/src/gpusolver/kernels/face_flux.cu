// Face-based Rusanov flux for the 3D Euler equations, accumulated into cells
// under three conflict strategies.
//
// Conserved variables are Structure-of-Arrays: U[v * n_cells + c] for v = rho,
// rho*u, rho*v, rho*w, rho*E. Faces carry their two cells (right = -1 on the
// boundary, where the left state is the ghost, so the flux is the physical flux of
// the left state), a unit normal pointing from left to right, and an area. The
// residual R (same layout) gets -flux*area on the left cell and +flux*area on the
// right cell:
//   face_flux_atomic_*  one thread per face, atomicAdd into R;
//   face_flux_colour_*  faces [first, last) of one colour class: no two share a
//                       cell, so plain read-modify-write is race-free;
//   face_flux_store_* + cell_gather_*  fluxes written to F[v * n_faces + f], then
//                       one thread per cell sums its face slots (no atomics).

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

// Rusanov flux times area of face f; returns the left and right cells.
template <typename real>
__device__ __forceinline__ void rusanov(const real* __restrict__ U, const int* __restrict__ left,
                                        const int* __restrict__ right,
                                        const real* __restrict__ normal,
                                        const real* __restrict__ area, int f, int n_faces,
                                        int n_cells, real gamma, real flux[5], int* l, int* r) {
    *l = left[f];
    *r = right[f];
    const real nx = normal[f], ny = normal[n_faces + f], nz = normal[2 * n_faces + f];
    real ql[5], qr[5], fl[5], fr[5], sl, sr;
#pragma unroll
    for (int v = 0; v < 5; ++v) ql[v] = U[v * n_cells + *l];
#pragma unroll
    for (int v = 0; v < 5; ++v) qr[v] = *r >= 0 ? U[v * n_cells + *r] : ql[v];
    euler_flux(ql, nx, ny, nz, gamma, fl, &sl);
    euler_flux(qr, nx, ny, nz, gamma, fr, &sr);
    const real smax = sl > sr ? sl : sr;
    const real a = area[f];
#pragma unroll
    for (int v = 0; v < 5; ++v) flux[v] = a * real(0.5) * (fl[v] + fr[v] - smax * (qr[v] - ql[v]));
}

template <typename real>
__device__ void atomic_kernel(const real* U, real* R, const int* left, const int* right,
                              const real* normal, const real* area, int n_faces, int n_cells,
                              real gamma) {
    const int f = blockIdx.x * blockDim.x + threadIdx.x;
    if (f >= n_faces) return;
    real flux[5];
    int l, r;
    rusanov(U, left, right, normal, area, f, n_faces, n_cells, gamma, flux, &l, &r);
#pragma unroll
    for (int v = 0; v < 5; ++v) {
        atomicAdd(&R[v * n_cells + l], -flux[v]);
        if (r >= 0) atomicAdd(&R[v * n_cells + r], flux[v]);
    }
}

template <typename real>
__device__ void colour_kernel(const real* U, real* R, const int* left, const int* right,
                              const real* normal, const real* area, int n_faces, int n_cells,
                              real gamma, int first, int last) {
    const int f = first + blockIdx.x * blockDim.x + threadIdx.x;
    if (f >= last) return;
    real flux[5];
    int l, r;
    rusanov(U, left, right, normal, area, f, n_faces, n_cells, gamma, flux, &l, &r);
#pragma unroll
    for (int v = 0; v < 5; ++v) {
        R[v * n_cells + l] -= flux[v];
        if (r >= 0) R[v * n_cells + r] += flux[v];
    }
}

template <typename real>
__device__ void store_kernel(const real* U, real* F, const int* left, const int* right,
                             const real* normal, const real* area, int n_faces, int n_cells,
                             real gamma) {
    const int f = blockIdx.x * blockDim.x + threadIdx.x;
    if (f >= n_faces) return;
    real flux[5];
    int l, r;
    rusanov(U, left, right, normal, area, f, n_faces, n_cells, gamma, flux, &l, &r);
#pragma unroll
    for (int v = 0; v < 5; ++v) F[v * n_faces + f] = flux[v];
}

// slots[k * n_cells + c]: face f < n_faces is a left side (-F), n_faces + f a right
// side (+F), anything >= 2 n_faces an empty slot.
template <typename real>
__device__ void gather_kernel(const real* F, const int* slots, real* R, int width, int n_faces,
                              int n_cells) {
    const int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= n_cells) return;
    real sum[5] = {0, 0, 0, 0, 0};
    for (int k = 0; k < width; ++k) {
        const int s = slots[k * n_cells + c];
        if (s >= 2 * n_faces) continue;
        const bool is_left = s < n_faces;
        const int f = is_left ? s : s - n_faces;
#pragma unroll
        for (int v = 0; v < 5; ++v) sum[v] += is_left ? -F[v * n_faces + f] : F[v * n_faces + f];
    }
#pragma unroll
    for (int v = 0; v < 5; ++v) R[v * n_cells + c] += sum[v];
}

#define FACE_FLUX_KERNELS(real, suffix)                                                          \
    extern "C" __global__ void face_flux_atomic_##suffix(                                       \
        const real* U, real* R, const int* left, const int* right, const real* normal,          \
        const real* area, int n_faces, int n_cells, real gamma) {                               \
        atomic_kernel<real>(U, R, left, right, normal, area, n_faces, n_cells, gamma);         \
    }                                                                                            \
    extern "C" __global__ void face_flux_colour_##suffix(                                       \
        const real* U, real* R, const int* left, const int* right, const real* normal,          \
        const real* area, int n_faces, int n_cells, real gamma, int first, int last) {          \
        colour_kernel<real>(U, R, left, right, normal, area, n_faces, n_cells, gamma, first,   \
                            last);                                                              \
    }                                                                                            \
    extern "C" __global__ void face_flux_store_##suffix(                                        \
        const real* U, real* F, const int* left, const int* right, const real* normal,          \
        const real* area, int n_faces, int n_cells, real gamma) {                               \
        store_kernel<real>(U, F, left, right, normal, area, n_faces, n_cells, gamma);          \
    }                                                                                            \
    extern "C" __global__ void cell_gather_##suffix(const real* F, const int* slots, real* R,   \
                                                    int width, int n_faces, int n_cells) {      \
        gather_kernel<real>(F, slots, R, width, n_faces, n_cells);                              \
    }

FACE_FLUX_KERNELS(double, f64)
FACE_FLUX_KERNELS(float, f32)

// Biot-Savart velocities of 2D vortex elements by direct summation, the device twin of
// gpusolver/solvers/vortex/biot_savart.py (direct_velocity):
//
//   V(x) = sum_i gamma_i / (2 pi) k x (x - r_i) / max(|x - r_i|^2, eps^2)
//
// PER_THREAD targets per thread; on the GPU the sources pass through shared memory a tile
// of TILE (= the block size) at a time, each thread summing a whole tile from there. On the
// CPU (the host compile of CI, which has no shared memory) every thread reads the sources
// directly. Positions are (x, y) pairs, velocities (u, v) pairs. fp32 and fp64 from one
// source. The reciprocal is the hardware's approximate one (fp32: about 1 ulp, against a
// relative tolerance of 1e-5 on sums of many terms; fp64: the approximation refined by two
// Newton steps, as accurate as a division in the tests at 1e-12), cheaper than the
// correctly rounded __frcp_rn / __drcp_rn: 1.36e12 and 0.82e12 interactions per second
// with those at N = 2^20 on the H100.

template <typename real>
__device__ __forceinline__ real reciprocal(real x);
#ifdef __CUDACC__
template <>
__device__ __forceinline__ float reciprocal<float>(float x) { return __fdividef(1.0f, x); }
template <>
__device__ __forceinline__ double reciprocal<double>(double x) {
    double y;
    asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(y) : "d"(x));
    y = fma(y, fma(-x, y, 1.0), y);  // Newton: y (2 - x y)
    return fma(y, fma(-x, y, 1.0), y);
}
#else
template <typename real>
__device__ __forceinline__ real reciprocal(real x) { return real(1) / x; }
#endif

// The velocity induced at (x, y) by one element at (sx, sy) of circulation g, added to
// (u, v) without the factor 1 / (2 pi).
template <typename real>
__device__ __forceinline__ void interact(real x, real y, real sx, real sy, real g, real eps2,
                                         real& u, real& v) {
    const real dx = x - sx, dy = y - sy;
    const real weight = g * reciprocal<real>(fmax(dx * dx + dy * dy, eps2));
    u -= weight * dy;
    v += weight * dx;
}

template <typename real, int TILE, int PER_THREAD>
__global__ void __launch_bounds__(TILE) direct_velocity_kernel(
    int n_sources, const real* __restrict__ sources, const real* __restrict__ gammas,
    int n_targets, const real* __restrict__ targets, real eps2, real scale,
    real* __restrict__ velocity) {
    // PER_THREAD targets per thread, TILE apart: each source read from shared memory
    // serves them all
    const int first_target = blockIdx.x * TILE * PER_THREAD + threadIdx.x;
    real x[PER_THREAD], y[PER_THREAD], u[PER_THREAD], v[PER_THREAD];
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
        const int t = first_target + j * TILE;
        x[j] = t < n_targets ? targets[2 * t] : real(0);
        y[j] = t < n_targets ? targets[2 * t + 1] : real(0);
        u[j] = v[j] = 0;
    }
#ifdef __CUDACC__
    __shared__ real tile_x[TILE], tile_y[TILE], tile_g[TILE];
    for (int first = 0; first < n_sources; first += TILE) {
        const int s = first + threadIdx.x;
        tile_x[threadIdx.x] = s < n_sources ? sources[2 * s] : real(0);
        tile_y[threadIdx.x] = s < n_sources ? sources[2 * s + 1] : real(0);
        tile_g[threadIdx.x] = s < n_sources ? gammas[s] : real(0);  // padding adds nothing
        __syncthreads();
#pragma unroll 8
        for (int k = 0; k < TILE; ++k) {
            const real sx = tile_x[k], sy = tile_y[k], g = tile_g[k];
#pragma unroll
            for (int j = 0; j < PER_THREAD; ++j) interact(x[j], y[j], sx, sy, g, eps2, u[j], v[j]);
        }
        __syncthreads();
    }
#else
    for (int s = 0; s < n_sources; ++s)
        for (int j = 0; j < PER_THREAD; ++j)
            interact(x[j], y[j], sources[2 * s], sources[2 * s + 1], gammas[s], eps2, u[j], v[j]);
#endif
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
        const int t = first_target + j * TILE;
        if (t < n_targets) {
            velocity[2 * t] = u[j] * scale;
            velocity[2 * t + 1] = v[j] * scale;
        }
    }
}

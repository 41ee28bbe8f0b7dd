// The element-pair rules of the viscous vortex domains and of merging, shared by the
// direct kernels (vvd.cu) and those walking the tree (tree.cu), so that both give the
// NumPy references' answers (diffusion.py, restructure.py).
#pragma once

// The three smallest squared distances seen so far (e0 <= e1 <= e2), kept as d2 comes:
// the domain radii.
template <typename real>
__device__ __forceinline__ void keep_three_smallest(real d2, real& e0, real& e1, real& e2) {
    if (d2 < e0) {
        e2 = e1;
        e1 = e0;
        e0 = d2;
    } else if (d2 < e1) {
        e2 = e1;
        e1 = d2;
    } else if (d2 < e2) {
        e2 = d2;
    }
}

// Whether two circulations pair up: of one sign, or of any (any_sign; zero never).
template <typename real>
__device__ __forceinline__ bool signs_match(real g, real gj, int any_sign) {
    return any_sign ? g * gj != 0 : g * gj > 0;
}

// Adds source j at offset (dx, dy) = element - source, circulation gj, to the element's
// I1 (s1) and I2 (sx, sy) when it counts: within reach (reach2 its square), of the
// element's sign g unless any_sign (then the smoothed vorticity of all elements), and
// not the element itself (r = 0).
template <typename real>
__device__ __forceinline__ void add_wake_sum(real dx, real dy, real gj, real g, int any_sign,
                                             real reach2, real inverse_radius, real& s1,
                                             real& sx, real& sy) {
    const real r2 = dx * dx + dy * dy;
    if (r2 < reach2 && r2 > 0 && signs_match(g, gj, any_sign)) {
        const real r = sqrt(r2);
        const real weight = gj * exp(-r * inverse_radius);
        s1 += weight;
        sx += weight * dx / r;
        sy += weight * dy / r;
    }
}

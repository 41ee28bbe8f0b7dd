// The three smallest squared distances seen so far (e0 <= e1 <= e2), kept as d2 comes:
// the domain radii of the viscous vortex domains (vvd.cu, direct; tree.cu, by the tree).
#pragma once

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

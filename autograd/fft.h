// autograd/fft.h - differentiable rfft / irfft (primitives) and complex arithmetic composed from primitives.
//
// Primitives (derivations of the adjoints are in tensor/fft.h):
//   rfft(x, n)   x (..., L) -> X (..., n/2+1, 2)   dx = n * irfft(dX with bins 1..(n-1)/2 halved, n)[..., :L]
//   irfft(X, n)  X (..., m, 2) -> x (..., n)       dX_k = (w_k / n) rfft(dx, n)_k, w_k = 2 for 1 <= k <= (n-1)/2
//                                                  else 1; bins the forward ignored (k > n/2) get 0
// Compositions (no backward of their own; gradients come from select/stack/mul/exp/sin/cos):
//   CVar {re, im}        a complex tensor as two real Vars of equal (broadcastable) shape
//   as_complex(X)        (..., 2) -> {X[..., 0], X[..., 1]};  as_real(z) the inverse (stack on a new last dim)
//   cadd, csub, cmul     (a+ib)(c+id) = (ac - bd) + i(ad + bc)
//   cexp                 exp(a+ib) = e^a (cos b + i sin b)
//   creciprocal, cdiv    1/(c+id) = (c - id) / (c^2 + d^2);  z/w = z * (1/w)
//   fft_conv(u, k, L)    causal convolution y[t] = sum_{s<=t} k[s] u[t-s], t < L, of u (..., L) and k (..., L)
//                        (batch dims broadcast) as irfft(rfft(u, 2L) * rfft(k, 2L), 2L)[..., :L]; padding to
//                        2L makes the circular convolution equal the linear one on the first L outputs.
//                        On a device it is causal_conv (rfft/irfft have no device kernel; fft_conv does).
// Primitive:
//   causal_conv(a, b)    y[t] = sum_{s<=t} a[s] b[t-s] of a, b (..., L) of one shape (tensor/fft.h). Its adjoint is
//                        the same convolution on reversed rows: dL/da[s] = sum_{t>=s} dy[t] b[t-s], and with
//                        r = flip(dy) that is causal_conv(r, b)[L-1-s], so
//                          da = flip(causal_conv(flip(dy), b)),  db = flip(causal_conv(flip(dy), a))
#pragma once
#include "autograd/variable.h"
#include "tensor/fft.h"

namespace dl {

Var rfft(const Var& x, int64_t n = -1);
Var irfft(const Var& X, int64_t n = -1);

struct CVar {
  Var re, im;
};
CVar as_complex(const Var& x);  // (..., 2) -> CVar of (...)
Var as_real(const CVar& z);     // CVar of (...) -> (..., 2)
CVar cadd(const CVar& a, const CVar& b);
CVar csub(const CVar& a, const CVar& b);
CVar cmul(const CVar& a, const CVar& b);
CVar cexp(const CVar& z);
CVar creciprocal(const CVar& z);
CVar cdiv(const CVar& a, const CVar& b);
CVar cscale(const CVar& z, const Var& s);  // real scale s * z

Var fft_conv(const Var& u, const Var& k, int64_t L);
Var causal_conv(const Var& a, const Var& b);

}  // namespace dl

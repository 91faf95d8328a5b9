// tensor/conv.cpp - conv1d forward/backward: im2col + sgemm, and a direct depthwise loop (see conv.h).
#include "tensor/conv.h"

#include <algorithm>

#include "tensor/elementwise.h"
#include "tensor/indexing.h"
#include "tensor/linalg.h"
#include "tensor/reduce.h"
#include "tensor/shape_ops.h"

namespace dl {

namespace {

struct Geo {
  int64_t B, Cin, L, Cout, K, G, Cig, Cog, Lout;
  int64_t s, d, pl;
};

Geo check(const Tensor& x, const Tensor& w, const Tensor& bias, const Conv1dParams& p) {
  if (x.dim() != 3) fail("conv1d: x must be (B, Cin, L), got " + shape_str(x.shape()));
  if (w.dim() != 3) fail("conv1d: weight must be (Cout, Cin/groups, K), got " + shape_str(w.shape()));
  if (x.dtype() != w.dtype()) fail("conv1d: x and weight dtypes differ");
  if (p.stride < 1 || p.dilation < 1 || p.groups < 1 || p.pad_left < 0 || p.pad_right < 0)
    fail("conv1d: need stride, dilation, groups >= 1 and padding >= 0, got stride " + std::to_string(p.stride) + ", dilation " +
         std::to_string(p.dilation) + ", groups " + std::to_string(p.groups) + ", padding (" + std::to_string(p.pad_left) + ", " +
         std::to_string(p.pad_right) + ")");
  Geo g{x.size(0), x.size(1), x.size(2), w.size(0), w.size(2), p.groups, 0, 0, 0, p.stride, p.dilation, p.pad_left};
  if (g.Cin % g.G || g.Cout % g.G)
    fail("conv1d: groups = " + std::to_string(g.G) + " must divide Cin = " + std::to_string(g.Cin) + " (x " +
         shape_str(x.shape()) + ") and Cout = " + std::to_string(g.Cout) + " (weight " + shape_str(w.shape()) + ")");
  g.Cig = g.Cin / g.G;
  g.Cog = g.Cout / g.G;
  if (w.size(1) != g.Cig)
    fail("conv1d: channel mismatch: x " + shape_str(x.shape()) + " has Cin = " + std::to_string(g.Cin) + ", so with groups = " +
         std::to_string(g.G) + " weight " + shape_str(w.shape()) + " should have " + std::to_string(g.Cig) + " in dim 1");
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != g.Cout))
    fail("conv1d: bias " + shape_str(bias.shape()) + " expected [" + std::to_string(g.Cout) + "]");
  g.Lout = conv1d_out_length(g.L, g.K, p);
  if (g.Lout < 1)
    fail("conv1d: input length " + std::to_string(g.L) + " with padding (" + std::to_string(p.pad_left) + ", " +
         std::to_string(p.pad_right) + ") is shorter than the dilated kernel " + std::to_string(p.dilation * (g.K - 1) + 1));
  return g;
}

// Output positions t with 0 <= t*s + off < L, as [t0, t1).
inline void valid_range(int64_t off, const Geo& g, int64_t& t0, int64_t& t1) {
  t0 = off >= 0 ? 0 : (-off + g.s - 1) / g.s;
  t1 = (g.L - 1 - off) < 0 ? 0 : std::min(g.Lout, (g.L - 1 - off) / g.s + 1);
  if (t1 < t0) t1 = t0;
}

// cols (Cin*K, nb*Lout) for batches [b0, b0+nb)
template <class T> void im2col(const T* x, T* cols, const Geo& g, int64_t b0, int64_t nb) {
  int64_t W = nb * g.Lout;
  parallel_for(g.Cin * g.K * nb, std::max<int64_t>(1, 16384 / g.Lout), [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; u++) {
      int64_t r = u / nb, b = u % nb, c = r / g.K, k = r % g.K;
      const T* xr = x + ((b0 + b) * g.Cin + c) * g.L;
      T* row = cols + r * W + b * g.Lout;
      int64_t off = k * g.d - g.pl, t0, t1;
      valid_range(off, g, t0, t1);
      for (int64_t t = 0; t < t0; t++) row[t] = 0;
      for (int64_t t = t0; t < t1; t++) row[t] = xr[t * g.s + off];
      for (int64_t t = t1; t < g.Lout; t++) row[t] = 0;
    }
  });
}

// dx[b, c, t*s + off] += dcols[c*K + k, b*Lout + t]: the adjoint of im2col; one thread per (b, c) row of dx.
template <class T> void col2im(const T* dcols, T* dx, const Geo& g, int64_t b0, int64_t nb) {
  int64_t W = nb * g.Lout;
  parallel_for(nb * g.Cin, std::max<int64_t>(1, 16384 / (g.K * g.Lout)), [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; u++) {
      int64_t b = u / g.Cin, c = u % g.Cin;
      T* xr = dx + ((b0 + b) * g.Cin + c) * g.L;
      for (int64_t k = 0; k < g.K; k++) {
        const T* row = dcols + (c * g.K + k) * W + b * g.Lout;
        int64_t off = k * g.d - g.pl, t0, t1;
        valid_range(off, g, t0, t1);
        for (int64_t t = t0; t < t1; t++) xr[t * g.s + off] += row[t];
      }
    }
  });
}

int64_t batch_chunk(const Geo& g) {
  int64_t per = std::max<int64_t>(1, g.Cin * g.K * g.Lout);
  return std::max<int64_t>(1, std::min<int64_t>(g.B, (int64_t(16) << 20) / per));
}

// ---- on a device: the depthwise convolution composed of device ops ----
// No conv kernel of its own: with stride 1 the depthwise forward is a sum of K shifted, scaled copies of the padded
// input, y = bias + sum_k w[:, 0, k] * xpad[:, :, k*d : k*d + Lout] (in the CPU loop's order: bias, then k = 0..K-1),
// and each input channel c feeds outputs c*Cog .. (c+1)*Cog - 1 (an index_select of the channels when Cog > 1). The
// backward is the same sums transposed: dw[o, 0, k] = sum_{b,t} dy * xpad shifted by k*d, db = sum_{b,t} dy, and dxpad
// gets w_k * dy added at each shift (then the padding is cut and the Cog outputs of a channel summed). Every op here
// has its device branch, so the convolution runs where its operands are. Every other shape (Cin/groups > 1, stride
// > 1) takes the general path below.
bool conv_on_device(const Tensor& x, const Tensor& w, const Geo& g, const char* op) {
  if (x.device() == Device::cpu && w.device() == Device::cpu) return false;
  if (x.device() != w.device())
    fail(std::string(op) + ": x is on " + device_name(x.device()) + " and the weight on " + device_name(w.device()));
  return true;
}
bool depthwise_stride1(const Geo& g) { return g.Cig == 1 && g.s == 1; }

// ---- on a device, any other shape: im2col and one batched product, composed of device ops ----
// cols (B, G, Cig*K, Lout): tap k of input channel c at output t reads xpad[b, c, t*s + k*d] (an index_select of the
// zero-padded input along L per tap), so y_g = W_g (Cog, Cig*K) @ cols_g, as the CPU's im2col + sgemm. The backward
// is the products transposed (dW_g = sum_b dy_g cols_g^T, dcols_g = W_g^T dy_g) and col2im as an index_add per tap.
Tensor tap_positions(const Geo& g, int64_t k, Device d) {
  std::vector<int64_t> idx(g.Lout);
  for (int64_t t = 0; t < g.Lout; t++) idx[t] = t * g.s + k * g.d;
  return from_vector(idx, {g.Lout}).to(d);
}

Tensor im2col_device(const Tensor& x, const Geo& g, int64_t pr) {  // -> (B, G, Cig*K, Lout)
  Tensor xp = zeros({g.B, g.Cin, g.pl + g.L + pr}, x.dtype(), x.device());
  xp.narrow(2, g.pl, g.L).copy_(x);
  std::vector<Tensor> taps;
  for (int64_t k = 0; k < g.K; k++) taps.push_back(index_select(xp, 2, tap_positions(g, k, x.device())));  // (B, Cin, Lout)
  return stack(taps, 2).reshape({g.B, g.G, g.Cig * g.K, g.Lout});
}

Tensor conv1d_general_device(const Tensor& x, const Tensor& w, const Tensor& bias, const Geo& g, const Conv1dParams& p) {
  Tensor wg = w.contiguous().reshape({1, g.G, g.Cog, g.Cig * g.K});
  Tensor y = matmul(wg, im2col_device(x, g, p.pad_right)).reshape({g.B, g.Cout, g.Lout});  // (B, G, Cog, Lout)
  return bias.defined() ? add(y, bias.reshape({1, g.Cout, 1})) : y;
}

Conv1dGrads conv1d_backward_general_device(const Tensor& x, const Tensor& w, const Tensor& dy, const Geo& g,
                                           const Conv1dParams& p, bool need_x, bool need_w, bool need_b) {
  Conv1dGrads r;
  Tensor dyg = dy.contiguous().reshape({g.B, g.G, g.Cog, g.Lout});
  if (need_b) r.db = sum(dy, {0, 2});
  if (need_w) r.dw = sum(matmul(dyg, im2col_device(x, g, p.pad_right).transpose(-1, -2)), {0}).reshape(w.shape());
  if (need_x) {
    Tensor wg = w.contiguous().reshape({1, g.G, g.Cog, g.Cig * g.K});
    Tensor dcols = matmul(wg.transpose(-1, -2), dyg).reshape({g.B, g.Cin, g.K, g.Lout});
    Tensor dxp = zeros({g.B, g.Cin, g.pl + g.L + p.pad_right}, x.dtype(), x.device());
    for (int64_t k = 0; k < g.K; k++) index_add_(dxp, 2, tap_positions(g, k, x.device()), dcols.select(2, k).contiguous());
    r.dx = dxp.narrow(2, g.pl, g.L).contiguous();
  }
  return r;
}

// x (B, Cin, L) -> its channels in output order, zero-padded: (B, Cout, pl + L + pr)
Tensor padded_by_output(const Tensor& x, const Geo& g, int64_t pr) {
  Tensor xs = x;
  if (g.Cog > 1) {
    std::vector<int64_t> idx(g.Cout);
    for (int64_t o = 0; o < g.Cout; o++) idx[o] = o / g.Cog;
    xs = index_select(x, 1, from_vector(idx, {g.Cout}));
  }
  Tensor xp = zeros({g.B, g.Cout, g.pl + g.L + pr}, x.dtype(), x.device());
  xp.narrow(2, g.pl, g.L).copy_(xs);
  return xp;
}

Tensor tap(const Tensor& w, const Geo& g, int64_t k) { return w.narrow(2, k, 1).reshape({1, g.Cout, 1}); }  // w[:, 0, k]

Tensor conv1d_device(const Tensor& x, const Tensor& w, const Tensor& bias, const Geo& g, const Conv1dParams& p) {
  if (!depthwise_stride1(g)) return conv1d_general_device(x, w, bias, g, p);
  Tensor xp = padded_by_output(x, g, p.pad_right);
  Tensor y = bias.defined() ? bias.reshape({1, g.Cout, 1}) : Tensor();
  for (int64_t k = 0; k < g.K; k++) {
    Tensor term = mul(tap(w, g, k), xp.narrow(2, k * g.d, g.Lout));
    y = y.defined() ? add(y, term) : term;
  }
  return y.contiguous();
}

Conv1dGrads conv1d_backward_device(const Tensor& x, const Tensor& w, const Tensor& dy, const Geo& g, const Conv1dParams& p,
                                   bool need_x, bool need_w, bool need_b) {
  if (!depthwise_stride1(g)) return conv1d_backward_general_device(x, w, dy, g, p, need_x, need_w, need_b);
  Conv1dGrads r;
  if (need_b) r.db = sum(dy, {0, 2});
  if (need_w) {
    Tensor xp = padded_by_output(x, g, p.pad_right);
    r.dw = zeros(w.shape(), w.dtype(), w.device());
    for (int64_t k = 0; k < g.K; k++)
      r.dw.narrow(2, k, 1).copy_(sum(mul(dy, xp.narrow(2, k * g.d, g.Lout)), {0, 2}).reshape({g.Cout, 1, 1}));
  }
  if (need_x) {
    Tensor dxp = zeros({g.B, g.Cout, g.pl + g.L + p.pad_right}, x.dtype(), x.device());
    for (int64_t k = 0; k < g.K; k++) {
      Tensor at = dxp.narrow(2, k * g.d, g.Lout);
      at.copy_(add(at, mul(tap(w, g, k), dy)));
    }
    Tensor dxs = dxp.narrow(2, g.pl, g.L);  // (B, Cout, L)
    r.dx = g.Cog > 1 ? sum(dxs.contiguous().reshape({g.B, g.Cin, g.Cog, g.L}), {2}) : dxs.contiguous();
  }
  return r;
}

}  // namespace

int64_t conv1d_out_length(int64_t L, int64_t K, const Conv1dParams& p) {
  int64_t span = L + p.pad_left + p.pad_right - p.dilation * (K - 1) - 1;
  return span < 0 ? 0 : span / p.stride + 1;
}

Tensor conv1d(const Tensor& x_in, const Tensor& w_in, const Tensor& bias, const Conv1dParams& p) {
  Geo g = check(x_in, w_in, bias, p);
  if (conv_on_device(x_in, w_in, g, "conv1d")) return conv1d_device(x_in, w_in, bias, g, p);
  Tensor x = x_in.contiguous(), w = w_in.contiguous();
  Tensor bc = bias.defined() ? bias.contiguous() : Tensor();
  Tensor y = Tensor::empty({g.B, g.Cout, g.Lout}, x.dtype());
  dispatch_float(x.dtype(), "conv1d", [&]<class T>() {
    const T *px = x.data<T>(), *pw = w.data<T>(), *pb = bc.defined() ? bc.data<T>() : nullptr;
    T* py = y.data<T>();
    if (g.Cig == 1) {  // depthwise: y[b, o] = bias[o] + sum_k w[o, k] * x[b, o / Cog] shifted by k*d
      parallel_for(g.B * g.Cout, std::max<int64_t>(1, 16384 / (g.K * g.Lout)), [&](int64_t u0, int64_t u1) {
        for (int64_t u = u0; u < u1; u++) {
          int64_t b = u / g.Cout, o = u % g.Cout;
          const T* xr = px + (b * g.Cin + o / g.Cog) * g.L;
          T* yr = py + u * g.Lout;
          T b0 = pb ? pb[o] : (T)0;
          for (int64_t t = 0; t < g.Lout; t++) yr[t] = b0;
          for (int64_t k = 0; k < g.K; k++) {
            T wk = pw[o * g.K + k];
            int64_t off = k * g.d - g.pl, t0, t1;
            valid_range(off, g, t0, t1);
            for (int64_t t = t0; t < t1; t++) yr[t] += wk * xr[t * g.s + off];
          }
        }
      });
      return;
    }
    int64_t bcn = batch_chunk(g);
    Tensor cols = Tensor::empty({g.Cin * g.K, bcn * g.Lout}, x.dtype());
    Tensor tmp = Tensor::empty({g.Cout, bcn * g.Lout}, x.dtype());
    for (int64_t b0 = 0; b0 < g.B; b0 += bcn) {
      int64_t nb = std::min(bcn, g.B - b0), W = nb * g.Lout, KC = g.Cig * g.K;
      im2col<T>(px, cols.data<T>(), g, b0, nb);
      for (int64_t gi = 0; gi < g.G; gi++)  // y_g (Cog, W) = W_g (Cog, Cig*K) @ cols_g (Cig*K, W)
        gemm<T>(false, false, g.Cog, W, KC, (T)1, pw + gi * g.Cog * KC, KC, cols.data<T>() + gi * KC * W, W, (T)0,
                tmp.data<T>() + gi * g.Cog * W, W);
      const T* pt = tmp.data<T>();
      parallel_for(nb * g.Cout, std::max<int64_t>(1, 16384 / g.Lout), [&](int64_t u0, int64_t u1) {
        for (int64_t u = u0; u < u1; u++) {  // (o, b*Lout + t) -> (b, o, t), plus bias
          int64_t b = u / g.Cout, o = u % g.Cout;
          T* yr = py + ((b0 + b) * g.Cout + o) * g.Lout;
          const T* tr = pt + o * W + b * g.Lout;
          T b0v = pb ? pb[o] : (T)0;
          for (int64_t t = 0; t < g.Lout; t++) yr[t] = tr[t] + b0v;
        }
      });
    }
  });
  return y;
}

Conv1dGrads conv1d_backward(const Tensor& x_in, const Tensor& w_in, const Tensor& dy_in, const Conv1dParams& p, bool need_x,
                            bool need_w, bool need_b) {
  Geo g = check(x_in, w_in, Tensor(), p);
  if (dy_in.shape() != Shape{g.B, g.Cout, g.Lout})
    fail("conv1d_backward: dy " + shape_str(dy_in.shape()) + " expected " + shape_str({g.B, g.Cout, g.Lout}));
  if (conv_on_device(x_in, w_in, g, "conv1d_backward"))
    return conv1d_backward_device(x_in, w_in, dy_in, g, p, need_x, need_w, need_b);
  Tensor x = x_in.contiguous(), w = w_in.contiguous(), dy = dy_in.contiguous();
  Conv1dGrads r;
  if (need_x) r.dx = zeros(x.shape(), x.dtype());
  if (need_w) r.dw = zeros(w.shape(), w.dtype());
  if (need_b) r.db = Tensor::empty({g.Cout}, x.dtype());
  dispatch_float(x.dtype(), "conv1d_backward", [&]<class T>() {
    const T *px = x.data<T>(), *pw = w.data<T>(), *pg = dy.data<T>();
    if (need_b) {  // db[o] = sum_{b,t} dy[b, o, t]
      T* db = r.db.data<T>();
      parallel_for(g.Cout, std::max<int64_t>(1, 16384 / (g.B * g.Lout)), [&](int64_t o0, int64_t o1) {
        for (int64_t o = o0; o < o1; o++) {
          T acc = 0;
          for (int64_t b = 0; b < g.B; b++)
            for (int64_t t = 0; t < g.Lout; t++) acc += pg[(b * g.Cout + o) * g.Lout + t];
          db[o] = acc;
        }
      });
    }
    if (g.Cig == 1) {  // depthwise: the forward was yr[t] += w[o, k] * xr[t*s + off]
      if (need_x) {    // so dxr[t*s + off] += w[o, k] * dyr[t], for every o reading input channel c
        T* dx = r.dx.data<T>();
        parallel_for(g.B * g.Cin, std::max<int64_t>(1, 16384 / (g.Cog * g.K * g.Lout)), [&](int64_t u0, int64_t u1) {
          for (int64_t u = u0; u < u1; u++) {
            int64_t b = u / g.Cin, c = u % g.Cin;
            T* xr = dx + u * g.L;
            for (int64_t o = c * g.Cog; o < (c + 1) * g.Cog; o++) {
              const T* gr = pg + (b * g.Cout + o) * g.Lout;
              for (int64_t k = 0; k < g.K; k++) {
                T wk = pw[o * g.K + k];
                int64_t off = k * g.d - g.pl, t0, t1;
                valid_range(off, g, t0, t1);
                for (int64_t t = t0; t < t1; t++) xr[t * g.s + off] += wk * gr[t];
              }
            }
          }
        });
      }
      if (need_w) {  // and dw[o, k] += dyr[t] * xr[t*s + off]
        T* dw = r.dw.data<T>();
        parallel_for(g.Cout, std::max<int64_t>(1, 16384 / (g.B * g.K * g.Lout)), [&](int64_t o0, int64_t o1) {
          for (int64_t o = o0; o < o1; o++)
            for (int64_t k = 0; k < g.K; k++) {
              int64_t off = k * g.d - g.pl, t0, t1;
              valid_range(off, g, t0, t1);
              T acc = 0;
              for (int64_t b = 0; b < g.B; b++) {
                const T* xr = px + (b * g.Cin + o / g.Cog) * g.L;
                const T* gr = pg + (b * g.Cout + o) * g.Lout;
                for (int64_t t = t0; t < t1; t++) acc += gr[t] * xr[t * g.s + off];
              }
              dw[o * g.K + k] = acc;
            }
        });
      }
      return;
    }
    if (!need_x && !need_w) return;
    int64_t bcn = batch_chunk(g), KC = g.Cig * g.K;
    Tensor cols = Tensor::empty({g.Cin * g.K, bcn * g.Lout}, x.dtype());
    Tensor dyT = Tensor::empty({g.Cout, bcn * g.Lout}, x.dtype());
    for (int64_t b0 = 0; b0 < g.B; b0 += bcn) {
      int64_t nb = std::min(bcn, g.B - b0), W = nb * g.Lout;
      T* pt = dyT.data<T>();
      parallel_for(nb * g.Cout, std::max<int64_t>(1, 16384 / g.Lout), [&](int64_t u0, int64_t u1) {
        for (int64_t u = u0; u < u1; u++) {  // dy (b, o, t) -> dyT (o, b*Lout + t), the layout of the forward's product
          int64_t b = u / g.Cout, o = u % g.Cout;
          std::copy_n(pg + ((b0 + b) * g.Cout + o) * g.Lout, g.Lout, pt + o * W + b * g.Lout);
        }
      });
      if (need_w) {  // dW_g += dy_g (Cog, W) @ cols_g^T (W, Cig*K)
        im2col<T>(px, cols.data<T>(), g, b0, nb);
        for (int64_t gi = 0; gi < g.G; gi++)
          gemm<T>(false, true, g.Cog, KC, W, (T)1, pt + gi * g.Cog * W, W, cols.data<T>() + gi * KC * W, W, b0 == 0 ? (T)0 : (T)1,
                  r.dw.data<T>() + gi * g.Cog * KC, KC);
      }
      if (need_x) {  // dcols_g = W_g^T (Cig*K, Cog) @ dy_g (Cog, W), then col2im
        for (int64_t gi = 0; gi < g.G; gi++)
          gemm<T>(true, false, KC, W, g.Cog, (T)1, pw + gi * g.Cog * KC, KC, pt + gi * g.Cog * W, W, (T)0,
                  cols.data<T>() + gi * KC * W, W);
        col2im<T>(cols.data<T>(), r.dx.data<T>(), g, b0, nb);
      }
    }
  });
  return r;
}

}  // namespace dl

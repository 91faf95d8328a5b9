// tensor/nn_kernels_loss.cpp - CPU kernels for the losses declared in tensor/nn_kernels.h.
// Shape letters: R rows (every dim but the last), C classes (the last dim).
#include <cmath>
#include <limits>
#include <type_traits>
#include <vector>

#include "tensor/backend.h"
#include "tensor/elementwise.h"
#include "tensor/indexing.h"
#include "tensor/reduce.h"
#include "tensor/nn_kernels.h"

namespace dl {

const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::none: return "none";
    case Reduction::mean: return "mean";
    case Reduction::sum: return "sum";
  }
  return "?";
}

namespace {

template <class T> inline T exp_fast_t(T v) {  // vectorisable exp for float rows (nn_kernels.h)
  if constexpr (std::is_same_v<T, float>) return exp_fast(v);
  else return std::exp(v);
}

constexpr int64_t kLossChunk = 4096;  // elements (or rows) per partial of a reduced loss

// Validate (logits (..., C), target (...)) and return C; names op, both shapes and any bad class index.
int64_t check_class_target(const Tensor& x, const Tensor& t, int64_t ignore_index, const char* op) {
  if (!x.defined() || !t.defined()) fail(std::string(op) + ": undefined input");
  if (x.device() != Device::cpu || t.device() != Device::cpu) fail(std::string(op) + ": implemented for CPU tensors only");
  dispatch_float(x.dtype(), op, []<class T>() {});
  if (x.dim() < 1) fail(std::string(op) + ": input must have a class dim (..., C), got a scalar");
  Shape want(x.shape().begin(), x.shape().end() - 1);
  if (t.shape() != want)
    fail(std::string(op) + ": target has shape " + shape_str(t.shape()) + ", expected " + shape_str(want) + " (the input " +
         shape_str(x.shape()) + " without its last, class, dim)");
  if (t.dtype() != DType::i64) fail(std::string(op) + ": target must be i64 class indices, got " + dtype_name(t.dtype()));
  int64_t C = x.size(-1);
  Tensor tc = t.contiguous();
  const int64_t* pt = tc.data<int64_t>();
  for (int64_t r = 0; r < tc.numel(); r++)
    if (pt[r] != ignore_index && (pt[r] < 0 || pt[r] >= C))
      fail(std::string(op) + ": target value " + std::to_string(pt[r]) + " at flat index " + std::to_string(r) +
           " is out of range for " + std::to_string(C) + " classes (input " + shape_str(x.shape()) + ", ignore_index " +
           std::to_string(ignore_index) + ")");
  return C;
}

// The per-row factor g_r that multiplies d loss_r: dy / count, dy, or dy[r].
struct RowScale {
  const Tensor* dy;
  Reduction red;
  double k = 1.0;
  Tensor dyc;
  RowScale(const Tensor& d, Reduction r, double count) : dy(&d), red(r) {
    if (r == Reduction::none) dyc = d.to(DType::f64).contiguous();
    else k = d.item() / (r == Reduction::mean ? count : 1.0);
  }
  double operator()(int64_t r) const { return red == Reduction::none ? dyc.data<double>()[r] : k; }
};

Tensor reduce_rows(const std::vector<double>& rowloss, const Shape& row_shape, DType dt, Reduction red, double count) {
  if (red == Reduction::none) return from_vector(rowloss, row_shape).to(dt);
  double s = ordered_sum((int64_t)rowloss.size(), kLossChunk, [&](int64_t i0, int64_t i1) {
    double a = 0;
    for (int64_t i = i0; i < i1; i++) a += rowloss[i];
    return a;
  });
  return scalar_tensor(red == Reduction::mean ? s / count : s, dt);
}

// The device seam of cross_entropy: per-row loss, lse and a valid flag on the device (logits read in
// place), then the reduction as a device sum; only the count comes back to the host.
CrossEntropyOut device_cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index, double ls, Reduction red) {
  const char* op = "cross_entropy";
  if (!(ls >= 0.0 && ls < 1.0)) fail(std::string(op) + ": label_smoothing must be in [0, 1), got " + std::to_string(ls));
  if (logits.dim() < 1) fail(std::string(op) + ": input must have a class dim (..., C), got a scalar");
  Shape rs(logits.shape().begin(), logits.shape().end() - 1);
  if (!target.defined() || target.shape() != rs)
    fail(std::string(op) + ": target must have shape " + shape_str(rs) + " (the input " + shape_str(logits.shape()) +
         " without its last, class, dim)");
  Device d = logits.device();
  CrossEntropyOut o;
  Tensor rowloss = Tensor::empty(rs, logits.dtype(), d), valid = Tensor::empty(rs, logits.dtype(), d);
  o.lse = Tensor::empty(rs, logits.dtype(), d);
  // class indices built on the host (a batch's labels) follow the logits to the device, as indices do in tensor/indexing.cpp
  require_backend(d, op).cross_entropy(logits, target.to(d).contiguous(), ignore_index, ls, rowloss, o.lse, valid);
  double n = sum(valid).item();
  if (std::isnan(n))
    fail(std::string(op) + ": a target value is out of range for " + std::to_string(logits.size(-1)) + " classes (input " +
         shape_str(logits.shape()) + ", ignore_index " + std::to_string(ignore_index) + ")");
  o.count = (int64_t)n;
  if (red == Reduction::none) o.loss = rowloss;
  else o.loss = red == Reduction::sum ? sum(rowloss) : mul_scalar(sum(rowloss), 1.0 / (double)o.count);
  return o;
}

}  // namespace

// The losses' reductions (nn_kernels.h): chunks of `chunk` terms summed in parallel, the partials in chunk order.
double ordered_sum(int64_t n, int64_t chunk, const std::function<double(int64_t, int64_t)>& partial) {
  if (n <= 0) return 0.0;
  int64_t nch = (n + chunk - 1) / chunk;
  std::vector<double> part(nch);
  parallel_for(nch, std::max<int64_t>(1, 32768 / chunk), [&](int64_t c0, int64_t c1) {
    for (int64_t k = c0; k < c1; k++) part[k] = partial(k * chunk, std::min(n, (k + 1) * chunk));
  });
  double s = 0;
  for (double v : part) s += v;
  return s;
}

// ---------------------------------------------------------------------------------------------
// cross_entropy, one pass per row: m = max(x), lse = m + log sum exp(x - m),
//   loss = lse - (1 - s) x_t - s mean(x)
CrossEntropyOut cross_entropy(const Tensor& logits, const Tensor& target, int64_t ignore_index, double ls, Reduction red) {
  const char* op = "cross_entropy";
  if (logits.defined() && logits.device() != Device::cpu) return device_cross_entropy(logits, target, ignore_index, ls, red);
  int64_t C = check_class_target(logits, target, ignore_index, op);
  if (!(ls >= 0.0 && ls < 1.0)) fail(std::string(op) + ": label_smoothing must be in [0, 1), got " + std::to_string(ls));
  int64_t R = target.numel();
  Tensor xc = logits.contiguous(), tc = target.contiguous();
  CrossEntropyOut o;
  o.lse = Tensor::empty(target.shape(), logits.dtype());
  std::vector<double> rowloss(R, 0.0);
  const int64_t* pt = tc.data<int64_t>();
  dispatch_float(logits.dtype(), op, [&]<class T>() {
    const T* px = xc.data<T>();
    T* pl = o.lse.data<T>();
    parallel_for(R, std::max<int64_t>(1, 16384 / std::max<int64_t>(C, 1)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++) {
        const T* xr = px + r * C;
        T m = xr[0];
        for (int64_t c = 1; c < C; c++) m = xr[c] > m ? xr[c] : m;
        double s = lane_sum<T>(C, [&](int64_t c) { return exp_fast_t(xr[c] - m); });
        double sx = lane_sum<T>(C, [&](int64_t c) { return xr[c]; });
        double lse = (double)m + std::log(s);
        pl[r] = (T)lse;
        if (pt[r] != ignore_index) rowloss[r] = lse - (1.0 - ls) * (double)xr[pt[r]] - ls * sx / (double)C;
      }
    });
  });
  for (int64_t r = 0; r < R; r++) o.count += pt[r] != ignore_index;
  o.loss = reduce_rows(rowloss, target.shape(), logits.dtype(), red, (double)o.count);
  return o;
}

// d loss_r / d x_j = softmax_j - q_j,  q = (1 - s) onehot(t) + s / C;  dx = g_r (softmax - q), 0 on ignored rows
Tensor cross_entropy_backward(const Tensor& dy, const Tensor& logits, const Tensor& target, const Tensor& lse,
                              int64_t ignore_index, double ls, Reduction red, int64_t count) {
  if (logits.device() != Device::cpu) {  // the device seam: g_r is dy, or dy / count broadcast to every row
    const Shape& rs = target.shape();
    Tensor scale = red == Reduction::none                       ? dy
                   : red == Reduction::mean && count == 0       ? zeros({}, logits.dtype(), logits.device()).expand(rs)
                   : red == Reduction::mean                     ? mul_scalar(dy, 1.0 / (double)count).reshape({}).expand(rs)
                                                                : dy.reshape({}).expand(rs);
    Tensor dx = Tensor::empty(logits.shape(), logits.dtype(), logits.device());
    require_backend(logits.device(), "cross_entropy backward")
        .cross_entropy_backward(logits, target.to(logits.device()).contiguous(), lse.contiguous(), ignore_index, ls, scale, dx);
    return dx;
  }
  int64_t C = logits.size(-1), R = target.numel();
  Tensor xc = logits.contiguous(), tc = target.contiguous(), lc = lse.contiguous();
  Tensor dx = Tensor::empty(logits.shape(), logits.dtype());
  RowScale g(dy, red, (double)count);
  const int64_t* pt = tc.data<int64_t>();
  dispatch_float(logits.dtype(), "cross_entropy backward", [&]<class T>() {
    const T *px = xc.data<T>(), *pl = lc.data<T>();
    T* pd = dx.data<T>();
    parallel_for(R, std::max<int64_t>(1, 16384 / std::max<int64_t>(C, 1)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; r++) {
        T* dr = pd + r * C;
        if (pt[r] == ignore_index || (red == Reduction::mean && count == 0)) {
          for (int64_t c = 0; c < C; c++) dr[c] = 0;
          continue;
        }
        const T* xr = px + r * C;
        T gr = (T)g(r), l = pl[r], off = (T)(ls / (double)C);
#pragma omp simd
        for (int64_t c = 0; c < C; c++) dr[c] = gr * (exp_fast_t(xr[c] - l) - off);
        dr[pt[r]] -= gr * (T)(1.0 - ls);
      }
    });
  });
  return dx;
}

// nll_loss on a device, composed of device ops: the target is checked on a host copy (as the CPU checks it), moved to
// the device, ignored rows gather class 0 and are then zeroed; the backward puts -g_r at each row's class (one_hot).
namespace {

struct NllRows {
  Tensor idx, valid;  // i64 class per row (0 where ignored), and 1 / 0 per row in logp's dtype, on logp's device
};
NllRows device_nll_rows(const Tensor& logp, const Tensor& target, int64_t ignore_index, const char* op) {
  check_class_target(zeros({}, logp.dtype()).expand(logp.shape()), target.to(Device::cpu), ignore_index, op);  // shape and dtype only
  Tensor t = target.to(logp.device()), ii = full({}, (double)ignore_index, DType::i64, logp.device());
  NllRows r;
  Tensor keep = ne(t, ii);
  r.idx = where(keep, t, zeros({}, DType::i64, logp.device())).contiguous();
  r.valid = keep.to(logp.dtype());
  return r;
}

CrossEntropyOut device_nll_loss(const Tensor& logp, const Tensor& target, int64_t ignore_index, Reduction red) {
  NllRows r = device_nll_rows(logp, target, ignore_index, "nll_loss");
  Tensor rowloss = neg(mul(gather(logp, -1, r.idx.unsqueeze(-1)).squeeze(-1), r.valid));
  CrossEntropyOut o;
  o.count = (int64_t)sum(r.valid).item();
  if (red == Reduction::none) o.loss = rowloss.contiguous();
  else o.loss = red == Reduction::sum ? sum(rowloss) : mul_scalar(sum(rowloss), 1.0 / (double)o.count);
  return o;
}

Tensor device_nll_loss_backward(const Tensor& dy, const Shape& logp_shape, DType dtype, Device device, const Tensor& target,
                                int64_t ignore_index, Reduction red, int64_t count) {
  Tensor logp_like = zeros({}, dtype, device).expand(logp_shape);
  NllRows r = device_nll_rows(logp_like, target, ignore_index, "nll_loss backward");
  const Shape& rs = target.shape();
  Tensor g = red == Reduction::none                   ? dy
             : red == Reduction::mean && count == 0   ? zeros({}, dtype, device).expand(rs)
             : red == Reduction::mean                 ? mul_scalar(dy, 1.0 / (double)count).reshape({}).expand(rs)
                                                      : dy.reshape({}).expand(rs);
  Tensor w = neg(mul(g, r.valid)).unsqueeze(-1);  // (..., 1): -g_r on kept rows
  return mul(one_hot(r.idx, logp_shape.back(), dtype), w).contiguous();
}

}  // namespace

// nll_loss: loss_r = -logp[r, t_r];  d/dlogp[r, t_r] = -g_r
CrossEntropyOut nll_loss(const Tensor& logp, const Tensor& target, int64_t ignore_index, Reduction red) {
  if (logp.defined() && logp.device() != Device::cpu) return device_nll_loss(logp, target, ignore_index, red);
  int64_t C = check_class_target(logp, target, ignore_index, "nll_loss");
  int64_t R = target.numel();
  Tensor xc = logp.contiguous(), tc = target.contiguous();
  const int64_t* pt = tc.data<int64_t>();
  std::vector<double> rowloss(R, 0.0);
  CrossEntropyOut o;
  dispatch_float(logp.dtype(), "nll_loss", [&]<class T>() {
    const T* px = xc.data<T>();
    for (int64_t r = 0; r < R; r++)
      if (pt[r] != ignore_index) rowloss[r] = -(double)px[r * C + pt[r]], o.count++;
  });
  o.loss = reduce_rows(rowloss, target.shape(), logp.dtype(), red, (double)o.count);
  return o;
}

Tensor nll_loss_backward(const Tensor& dy, const Shape& logp_shape, DType dtype, const Tensor& target, int64_t ignore_index,
                         Reduction red, int64_t count) {
  if (dy.device() != Device::cpu)
    return device_nll_loss_backward(dy, logp_shape, dtype, dy.device(), target, ignore_index, red, count);
  Tensor dx = zeros(logp_shape, dtype), tc = target.contiguous();
  int64_t C = logp_shape.back(), R = target.numel();
  RowScale g(dy, red, (double)count);
  const int64_t* pt = tc.data<int64_t>();
  dispatch_float(dtype, "nll_loss backward", [&]<class T>() {
    T* pd = dx.data<T>();
    if (red == Reduction::mean && count == 0) return;
    for (int64_t r = 0; r < R; r++)
      if (pt[r] != ignore_index) pd[r * C + pt[r]] = (T)(-g(r));
  });
  return dx;
}

// ---------------------------------------------------------------------------------------------
// Pointwise losses: one fused pass over p, t (and m), loss and gradients per element.
namespace {

template <class T> inline double pw_loss(PointwiseLoss k, T p, T t) {
  double d = (double)p - (double)t;
  switch (k) {
    case PointwiseLoss::mse: return d * d;
    case PointwiseLoss::l1: return std::abs(d);
    case PointwiseLoss::bce_logits:  // stable: never exponentiates a positive number
      return std::max((double)p, 0.0) - (double)p * (double)t + std::log1p(std::exp(-std::abs((double)p)));
  }
  return 0;
}
template <class T> inline T pw_dpred(PointwiseLoss k, T p, T t) {
  switch (k) {
    case PointwiseLoss::mse: return (T)2 * (p - t);
    case PointwiseLoss::l1: return (T)((p > t) - (p < t));  // sign(p - t), 0 at p == t like PyTorch
    case PointwiseLoss::bce_logits: return (T)1 / ((T)1 + std::exp(-p)) - t;
  }
  return 0;
}
template <class T> inline T pw_dtarget(PointwiseLoss k, T p, T t) {
  return k == PointwiseLoss::bce_logits ? -p : -pw_dpred(k, p, t);
}

const char* pw_name(PointwiseLoss k) {
  switch (k) {
    case PointwiseLoss::mse: return "mse_loss";
    case PointwiseLoss::l1: return "l1_loss";
    case PointwiseLoss::bce_logits: return "binary_cross_entropy_with_logits";
  }
  return "?";
}

// contiguous pred, target and (expanded) mask in pred's dtype
struct PwInputs {
  Tensor p, t, m;
};
PwInputs pw_inputs(PointwiseLoss kind, const Tensor& pred, const Tensor& target, const Tensor& mask) {
  const char* op = pw_name(kind);
  if (!pred.defined() || !target.defined()) fail(std::string(op) + ": undefined input");
  if (pred.device() != Device::cpu) fail(std::string(op) + ": implemented for CPU tensors only");
  dispatch_float(pred.dtype(), op, []<class T>() {});
  if (target.shape() != pred.shape())
    fail(std::string(op) + ": target has shape " + shape_str(target.shape()) + ", expected the input's shape " +
         shape_str(pred.shape()));
  if (target.dtype() != pred.dtype())
    fail(std::string(op) + ": target dtype " + dtype_name(target.dtype()) + " differs from the input's " +
         dtype_name(pred.dtype()));
  PwInputs r{pred.contiguous(), target.contiguous(), Tensor()};
  if (mask.defined()) {
    if (broadcast_shapes(pred.shape(), mask.shape(), op) != pred.shape())
      fail(std::string(op) + ": mask of shape " + shape_str(mask.shape()) + " does not broadcast to the input " +
           shape_str(pred.shape()));
    r.m = mask.to(pred.dtype()).expand(pred.shape()).contiguous();
  }
  return r;
}

// ---- on a device: the pointwise losses composed of device ops ----
// The same formulas as pw_loss / pw_dpred / pw_dtarget, written as tensor ops (each with its device branch), in the
// input's dtype; sums accumulate in f64 on the device as on the CPU. A masked element contributes 0, not 0 * NaN; the
// mean's count sum(m) is read back to the host (one scalar), as the CPU returns it.
Tensor zero_like_scalar(const Tensor& x) { return zeros({}, x.dtype(), x.device()); }

Tensor pw_loss_device(PointwiseLoss kind, const Tensor& p, const Tensor& t) {
  switch (kind) {
    case PointwiseLoss::mse: {
      Tensor d = sub(p, t);
      return mul(d, d);
    }
    case PointwiseLoss::l1: return abs(sub(p, t));
    case PointwiseLoss::bce_logits:  // max(p, 0) - p t + log1p(exp(-|p|)), the last as softplus of a non-positive number
      return add(sub(relu(p), mul(p, t)), softplus(neg(abs(p))));
  }
  return Tensor();
}

PwInputs device_pw_inputs(PointwiseLoss kind, const Tensor& pred, const Tensor& target, const Tensor& mask) {
  const char* op = pw_name(kind);
  if (!target.defined()) fail(std::string(op) + ": undefined input");
  if (target.device() != pred.device())
    fail(std::string(op) + ": the input is on " + device_name(pred.device()) + ", the target on " + device_name(target.device()));
  dispatch_float(pred.dtype(), op, []<class T>() {});
  if (target.shape() != pred.shape() || target.dtype() != pred.dtype())
    fail(std::string(op) + ": target " + shape_str(target.shape()) + " " + dtype_name(target.dtype()) +
         " must have the input's shape and dtype " + shape_str(pred.shape()) + " " + dtype_name(pred.dtype()));
  PwInputs r{pred, target, Tensor()};
  if (mask.defined()) {
    if (broadcast_shapes(pred.shape(), mask.shape(), op) != pred.shape())
      fail(std::string(op) + ": mask of shape " + shape_str(mask.shape()) + " does not broadcast to the input " +
           shape_str(pred.shape()));
    r.m = mask.to(pred.device()).to(pred.dtype()).expand(pred.shape());  // a host mask follows the data, as indices do
  }
  return r;
}

PointwiseLossOut device_pointwise_loss(PointwiseLoss kind, const Tensor& pred, const Tensor& target, const Tensor& mask,
                                       Reduction red) {
  PwInputs in = device_pw_inputs(kind, pred, target, mask);
  Tensor l = pw_loss_device(kind, in.p, in.t);
  if (in.m.defined()) l = where(ne(in.m, zero_like_scalar(l)), mul(l, in.m), zero_like_scalar(l));
  PointwiseLossOut o;
  if (red == Reduction::none) {
    o.loss = l.contiguous();
    return o;
  }
  o.count = in.m.defined() ? sum(in.m).item() : (double)pred.numel();
  o.loss = red == Reduction::mean ? mul_scalar(sum(l), 1.0 / o.count) : sum(l);
  return o;
}

PairGrads device_pointwise_loss_backward(PointwiseLoss kind, const Tensor& dy, const Tensor& pred, const Tensor& target,
                                         const Tensor& mask, Reduction red, double count, bool need_dp, bool need_dt) {
  PwInputs in = device_pw_inputs(kind, pred, target, mask);
  const Shape& s = pred.shape();
  // g_i m_i, with g_i = dy / count (mean), dy (sum) or dy_i (none); nothing selected under a mean: no gradient
  Tensor g = red == Reduction::none                   ? dy
             : red == Reduction::mean && count == 0   ? zero_like_scalar(pred).expand(s)
             : red == Reduction::mean                 ? mul_scalar(dy, 1.0 / count).reshape({}).expand(s)
                                                      : dy.reshape({}).expand(s);
  if (in.m.defined()) g = mul(g, in.m);
  Tensor gnz = ne(g, zero_like_scalar(g));
  auto times_g = [&](const Tensor& dl) { return where(gnz, mul(g, dl), zero_like_scalar(g)); };  // 0 where g is, as the CPU
  PairGrads o;
  Tensor d = sub(in.p, in.t);
  switch (kind) {
    case PointwiseLoss::mse:
      if (need_dp) o.dpred = times_g(mul_scalar(d, 2.0));
      if (need_dt) o.dtarget = times_g(mul_scalar(d, -2.0));
      break;
    case PointwiseLoss::l1:
      if (need_dp) o.dpred = times_g(sign(d));
      if (need_dt) o.dtarget = times_g(neg(sign(d)));
      break;
    case PointwiseLoss::bce_logits:
      if (need_dp) o.dpred = times_g(sub(sigmoid(in.p), in.t));
      if (need_dt) o.dtarget = times_g(neg(in.p));
      break;
  }
  return o;
}

}  // namespace

PointwiseLossOut pointwise_loss(PointwiseLoss kind, const Tensor& pred, const Tensor& target, const Tensor& mask, Reduction red) {
  if (pred.defined() && pred.device() != Device::cpu) return device_pointwise_loss(kind, pred, target, mask, red);
  PwInputs in = pw_inputs(kind, pred, target, mask);
  int64_t n = pred.numel();
  PointwiseLossOut o;
  dispatch_float(pred.dtype(), pw_name(kind), [&]<class T>() {
    const T *pp = in.p.data<T>(), *pt = in.t.data<T>(), *pm = mask.defined() ? in.m.data<T>() : nullptr;
    if (red == Reduction::none) {
      o.loss = Tensor::empty(pred.shape(), pred.dtype());
      T* pl = o.loss.data<T>();
      parallel_for(n, 32768, [&](int64_t i0, int64_t i1) {
        for (int64_t i = i0; i < i1; i++) pl[i] = (T)(pw_loss(kind, pp[i], pt[i]) * (pm ? (double)pm[i] : 1.0));
      });
      return;
    }
    double s = ordered_sum(n, kLossChunk, [&](int64_t i0, int64_t i1) {
      double a = 0;
      if (pm)
        for (int64_t i = i0; i < i1; i++) a += pm[i] != 0 ? pw_loss(kind, pp[i], pt[i]) * (double)pm[i] : 0.0;
      else
        for (int64_t i = i0; i < i1; i++) a += pw_loss(kind, pp[i], pt[i]);
      return a;
    });
    o.count = !pm ? (double)n : ordered_sum(n, kLossChunk, [&](int64_t i0, int64_t i1) {
      double a = 0;
      for (int64_t i = i0; i < i1; i++) a += pm[i];
      return a;
    });
    o.loss = scalar_tensor(red == Reduction::mean ? s / o.count : s, pred.dtype());
  });
  return o;
}

// dpred = g_i m_i dl/dp, dtarget = g_i m_i dl/dt with g_i = dy / count (mean), dy (sum) or dy_i (none)
PairGrads pointwise_loss_backward(PointwiseLoss kind, const Tensor& dy, const Tensor& pred, const Tensor& target,
                                  const Tensor& mask, Reduction red, double count, bool need_dp, bool need_dt) {
  if (pred.device() != Device::cpu) return device_pointwise_loss_backward(kind, dy, pred, target, mask, red, count, need_dp, need_dt);
  PwInputs in = pw_inputs(kind, pred, target, mask);
  int64_t n = pred.numel();
  RowScale g(dy, red, count);
  PairGrads o;
  if (need_dp) o.dpred = Tensor::empty(pred.shape(), pred.dtype());
  if (need_dt) o.dtarget = Tensor::empty(pred.shape(), pred.dtype());
  dispatch_float(pred.dtype(), pw_name(kind), [&]<class T>() {
    const T *pp = in.p.data<T>(), *pt = in.t.data<T>(), *pm = mask.defined() ? in.m.data<T>() : nullptr;
    T* dp = need_dp ? o.dpred.data<T>() : nullptr;
    T* dt = need_dt ? o.dtarget.data<T>() : nullptr;
    bool empty_mean = red == Reduction::mean && count == 0;  // nothing selected: no gradient (not NaN)
    parallel_for(n, 32768, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; i++) {
        T gi = empty_mean ? (T)0 : (T)(g(i) * (pm ? (double)pm[i] : 1.0));
        if (dp) dp[i] = gi == (T)0 ? (T)0 : gi * pw_dpred(kind, pp[i], pt[i]);
        if (dt) dt[i] = gi == (T)0 ? (T)0 : gi * pw_dtarget(kind, pp[i], pt[i]);
      }
    });
  });
  return o;
}

}  // namespace dl

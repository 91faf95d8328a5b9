// tensor/tensor.cpp - Tensor handle, views, copies, factories, printing and the random generator.
#include "tensor/tensor.h"

#include <atomic>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <mutex>
#include <numeric>
#include <sstream>

#include "tensor/allocator.h"
#include "tensor/backend.h"
#include "tensor/ops.h"

namespace dl {

size_t dtype_size(DType t) { return t == DType::f32 ? 4 : 8; }
const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::i64: return "i64";
  }
  return "?";
}
const char* device_name(Device d) { return d == Device::cpu ? "cpu" : "cuda"; }

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); i++) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}
int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}
Shape contiguous_strides(const Shape& s) {
  Shape st(s.size());
  int64_t acc = 1;
  for (int64_t i = (int64_t)s.size() - 1; i >= 0; i--) {
    st[i] = acc;
    acc *= s[i];
  }
  return st;
}
void fail(const std::string& msg) { throw ShapeError(msg); }

int64_t wrap_dim(int64_t dim, int64_t rank, const char* op) {
  int64_t d = dim < 0 ? dim + rank : dim;
  if (d < 0 || d >= rank)
    fail(std::string(op) + ": dim " + std::to_string(dim) + " out of range for a tensor of rank " + std::to_string(rank));
  return d;
}

// The registry of device backends: one slot, Device::cuda's, holding the build's own until a program sets another.
static std::atomic<Backend*>& cuda_slot() {
  static std::atomic<Backend*> slot{cuda_backend()};
  return slot;
}
Backend* device_backend(Device d) { return d == Device::cuda ? cuda_slot().load(std::memory_order_acquire) : nullptr; }
void set_device_backend(Device d, Backend* b) {
  if (d != Device::cuda) fail(std::string("set_device_backend: ") + device_name(d) + " has no backend to set");
  cuda_slot().store(b, std::memory_order_release);
}

Backend& require_backend(Device d, const char* op) {
  Backend* b = device_backend(d);
  if (!b) fail(std::string(op) + ": this build has no " + device_name(d) + " backend (built without CUDA)");
  if (!b->available()) fail(std::string(op) + ": no " + device_name(d) + " device is present");
  return *b;
}

// ---------------------------------------------------------------------------------------------
// Storage
Storage::Storage(size_t n, Device d) : nbytes(n), device(d) {
  if (d == Device::cpu) {
    data = host_alloc(n);
  } else {
    backend = &require_backend(d, "alloc");
    data = backend->alloc(n);
  }
}
Storage::~Storage() {
  if (device == Device::cpu) host_free(data, nbytes);
  else if (backend) backend->free(data, nbytes);
}

// ---------------------------------------------------------------------------------------------
// Tensor basics
Tensor::Tensor(std::shared_ptr<Storage> storage, Shape shape, Shape strides, int64_t offset, DType dtype)
    : storage_(std::move(storage)), shape_(std::move(shape)), strides_(std::move(strides)), offset_(offset), dtype_(dtype) {
  for (int64_t d : shape_)
    if (d < 0) fail("Tensor: negative size in shape " + shape_str(shape_));
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t d : shape)
    if (d < 0) fail("empty: negative size in shape " + shape_str(shape));
  size_t n = (size_t)shape_numel(shape) * dtype_size(dtype);
  return Tensor(std::make_shared<Storage>(n, device), shape, contiguous_strides(shape), 0, dtype);
}

int64_t Tensor::size(int64_t d) const { return shape_[wrap_dim(d, dim(), "size")]; }

bool Tensor::is_contiguous() const {
  int64_t acc = 1;
  for (int64_t i = dim() - 1; i >= 0; i--) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != acc) return false;
    acc *= shape_[i];
  }
  return true;
}

void* Tensor::raw_data() const {
  if (!defined()) fail("data: the tensor is undefined");
  return (char*)storage_->data + offset_ * (int64_t)dtype_size(dtype_);
}
template <class T> T* Tensor::data() const {
  if (dtype_ != dtype_of<T>())
    fail(std::string("data<T>: the tensor holds ") + dtype_name(dtype_) + ", asked for " + dtype_name(dtype_of<T>()));
  // A host pointer only: a CPU kernel handed a device tensor (an op with no device branch) stops here, loudly.
  // The device backend reads its pointers through raw_data() (cuda/ops/common.cuh's dptr).
  if (device() != Device::cpu)
    fail(std::string("data<T>: a ") + device_name(device()) + " tensor " + shape_str(shape_) +
         " reached a CPU kernel (this op has no " + device_name(device()) + " branch yet; docs/cuda.md lists what has one)");
  return (T*)raw_data();
}
template float* Tensor::data<float>() const;
template double* Tensor::data<double>() const;
template int64_t* Tensor::data<int64_t>() const;

// ---------------------------------------------------------------------------------------------
// Views
Tensor Tensor::view(const Shape& shape) const {
  Shape s = shape;
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == -1) {
      if (infer >= 0) fail("view: only one dim may be -1, got " + shape_str(shape));
      infer = (int64_t)i;
    } else {
      known *= s[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel() % known != 0) fail("view: cannot view " + shape_str(shape_) + " as " + shape_str(shape));
    s[infer] = numel() / known;
  }
  if (shape_numel(s) != numel())
    fail("view: shape " + shape_str(shape) + " has " + std::to_string(shape_numel(s)) + " elements, the tensor " +
         shape_str(shape_) + " has " + std::to_string(numel()));
  if (!is_contiguous()) fail("view: tensor of shape " + shape_str(shape_) + " is not contiguous; use reshape() (which copies)");
  return Tensor(storage_, s, contiguous_strides(s), offset_, dtype_);
}

Tensor Tensor::reshape(const Shape& shape) const { return is_contiguous() ? view(shape) : contiguous().view(shape); }

Tensor Tensor::flatten(int64_t start, int64_t end) const {
  if (dim() == 0) return reshape({1});
  start = wrap_dim(start, dim(), "flatten");
  end = wrap_dim(end, dim(), "flatten");
  Shape s(shape_.begin(), shape_.begin() + start);
  int64_t m = 1;
  for (int64_t i = start; i <= end; i++) m *= shape_[i];
  s.push_back(m);
  s.insert(s.end(), shape_.begin() + end + 1, shape_.end());
  return reshape(s);
}

Tensor Tensor::permute(const std::vector<int64_t>& dims) const {
  if ((int64_t)dims.size() != dim())
    fail("permute: " + std::to_string(dims.size()) + " dims given for a tensor of rank " + std::to_string(dim()));
  Shape s(dim()), st(dim());
  std::vector<bool> seen(dim(), false);
  for (int64_t i = 0; i < dim(); i++) {
    int64_t d = wrap_dim(dims[i], dim(), "permute");
    if (seen[d]) fail("permute: dim " + std::to_string(d) + " repeated");
    seen[d] = true;
    s[i] = shape_[d];
    st[i] = strides_[d];
  }
  return Tensor(storage_, s, st, offset_, dtype_);
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  std::vector<int64_t> p(dim());
  std::iota(p.begin(), p.end(), 0);
  std::swap(p[wrap_dim(d0, dim(), "transpose")], p[wrap_dim(d1, dim(), "transpose")]);
  return permute(p);
}

Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  d = wrap_dim(d, dim(), "narrow");
  if (start < 0) start += shape_[d];
  if (start < 0 || length < 0 || start + length > shape_[d])
    fail("narrow: range [" + std::to_string(start) + ", " + std::to_string(start + length) + ") out of bounds for dim " +
         std::to_string(d) + " of size " + std::to_string(shape_[d]));
  Shape s = shape_;
  s[d] = length;
  return Tensor(storage_, s, strides_, offset_ + start * strides_[d], dtype_);
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  d = wrap_dim(d, dim(), "select");
  if (index < 0) index += shape_[d];
  if (index < 0 || index >= shape_[d])
    fail("select: index " + std::to_string(index) + " out of range for dim " + std::to_string(d) + " of size " +
         std::to_string(shape_[d]));
  Shape s = shape_, st = strides_;
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  return Tensor(storage_, s, st, offset_ + index * strides_[d], dtype_);
}

Tensor Tensor::expand(const Shape& shape) const {
  if ((int64_t)shape.size() < dim()) fail("expand: cannot expand " + shape_str(shape_) + " to fewer dims " + shape_str(shape));
  int64_t lead = (int64_t)shape.size() - dim();
  Shape s(shape.size()), st(shape.size());
  for (int64_t i = 0; i < (int64_t)shape.size(); i++) {
    if (i < lead) {
      if (shape[i] < 0) fail("expand: -1 not allowed for a new leading dim in " + shape_str(shape));
      s[i] = shape[i];
      st[i] = 0;
      continue;
    }
    int64_t have = shape_[i - lead], want = shape[i] == -1 ? have : shape[i];
    if (have == want) {
      s[i] = have;
      st[i] = strides_[i - lead];
    } else if (have == 1) {
      s[i] = want;
      st[i] = 0;
    } else {
      fail("expand: cannot expand " + shape_str(shape_) + " to " + shape_str(shape) + " (dim " + std::to_string(i) + ": " +
           std::to_string(have) + " is not 1)");
    }
  }
  return Tensor(storage_, s, st, offset_, dtype_);
}

Tensor Tensor::squeeze(int64_t d) const {
  d = wrap_dim(d, dim(), "squeeze");
  if (shape_[d] != 1)
    fail("squeeze: dim " + std::to_string(d) + " of " + shape_str(shape_) + " has size " + std::to_string(shape_[d]) + ", not 1");
  Shape s = shape_, st = strides_;
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  return Tensor(storage_, s, st, offset_, dtype_);
}

Tensor Tensor::unsqueeze(int64_t d) const {
  d = wrap_dim(d, dim() + 1, "unsqueeze");
  Shape s = shape_, st = strides_;
  int64_t stride = d < dim() ? strides_[d] * shape_[d] : 1;
  s.insert(s.begin() + d, 1);
  st.insert(st.begin() + d, stride);
  return Tensor(storage_, s, st, offset_, dtype_);
}

// ---------------------------------------------------------------------------------------------
// Copies
Tensor Tensor::contiguous() const {
  if (!defined()) fail("contiguous: the tensor is undefined");
  if (is_contiguous()) return *this;
  Tensor out = Tensor::empty(shape_, dtype_, device());
  out.copy_(*this);
  return out;
}

Tensor Tensor::clone() const {
  Tensor out = Tensor::empty(shape_, dtype_, device());
  out.copy_(*this);
  return out;
}

Tensor Tensor::to(DType t) const {
  if (t == dtype_) return *this;
  if (device() != Device::cpu) {  // the device seam: a cast kernel reads this view in place
    Tensor out = Tensor::empty(shape_, t, device());
    require_backend(device(), "to(dtype)").cast(*this, out);
    return out;
  }
  Tensor src = contiguous(), out = Tensor::empty(shape_, t);
  int64_t n = numel();
  dispatch_all(dtype_, "to", [&]<class S>() {
    dispatch_all(t, "to", [&]<class D>() {
      const S* s = src.data<S>();
      D* o = out.data<D>();
      for (int64_t i = 0; i < n; i++) o[i] = (D)s[i];
    });
  });
  return out;
}

Tensor Tensor::to(Device d) const {
  if (d == device()) return *this;
  Tensor src = contiguous();
  Tensor out = Tensor::empty(shape_, dtype_, d);
  size_t n = (size_t)numel() * dtype_size(dtype_);
  if (d == Device::cpu) {
    require_backend(src.device(), "to(cpu)").copy_to_host(out.raw_data(), src.raw_data(), n);
    flush_device_checks();  // the device has just been waited for: its deferred checks cost one small copy each
  } else {
    require_backend(d, "to(device)").copy_from_host(out.raw_data(), src.raw_data(), n);
  }
  return out;
}

// ---- deferred device checks (tensor/backend.h) ----
namespace {
struct PendingCheck {
  Tensor count;
  std::string message;
};
std::mutex g_checks_mu;
std::vector<PendingCheck> g_checks;
constexpr size_t kMaxPendingChecks = 256;  // a long run of device ops without a read back is checked every 256
}  // namespace

void defer_device_check(Tensor count, std::string message) {
  size_t pending;
  {
    std::lock_guard<std::mutex> lock(g_checks_mu);
    g_checks.push_back({std::move(count), std::move(message)});
    pending = g_checks.size();
  }
  if (pending >= kMaxPendingChecks) flush_device_checks();
}

void flush_device_checks() {
  std::vector<PendingCheck> mine;
  {
    std::lock_guard<std::mutex> lock(g_checks_mu);
    mine.swap(g_checks);
  }
  for (const PendingCheck& c : mine) {
    double bad = 0;  // read through the backend, not to(cpu): no recursion into this function
    require_backend(c.count.device(), "device check").copy_to_host(&bad, c.count.raw_data(), sizeof bad);
    if (bad != 0) fail(c.message + " (" + std::to_string((int64_t)bad) + (bad == 1 ? " index" : " indices") +
                       " on the device; found at the first read back after the op)");
  }
}

void Tensor::copy_(const Tensor& src) { copy_into(*this, src); }

void Tensor::fill_(double v) {
  if (device() != Device::cpu) {
    if (is_contiguous()) require_backend(device(), "fill_").fill(*this, v);
    else require_backend(device(), "fill_").copy_strided(full({}, v, dtype_, device()).expand(shape_), *this);  // a view
    return;
  }
  Tensor t = *this;
  dispatch_all(dtype_, "fill_", [&]<class T>() {
    if (t.is_contiguous()) {
      T* p = t.data<T>();
      int64_t n = t.numel();
      for (int64_t i = 0; i < n; i++) p[i] = (T)v;
    } else {
      copy_into(t, scalar_tensor(v, t.dtype()));
    }
  });
}

double Tensor::at(const Shape& index) const {
  if ((int64_t)index.size() != dim())
    fail("at: index of rank " + std::to_string(index.size()) + " for tensor " + shape_str(shape_));
  if (device() != Device::cpu) return to(Device::cpu).at(index);
  int64_t off = 0;
  for (int64_t i = 0; i < dim(); i++) {
    int64_t j = index[i] < 0 ? index[i] + shape_[i] : index[i];
    if (j < 0 || j >= shape_[i]) fail("at: index " + shape_str(index) + " out of range for " + shape_str(shape_));
    off += j * strides_[i];
  }
  return dispatch_all(dtype_, "at", [&]<class T>() { return (double)(data<T>()[off]); });
}

double Tensor::item() const {
  if (numel() != 1) fail("item: tensor of shape " + shape_str(shape_) + " has " + std::to_string(numel()) + " elements, not 1");
  return at(Shape(dim(), 0));
}

std::vector<float> Tensor::to_vector() const {
  Tensor c = to(Device::cpu).to(DType::f32).contiguous();
  return std::vector<float>(c.data<float>(), c.data<float>() + c.numel());
}

std::string Tensor::str(int max_per_dim) const {
  if (!defined()) return "Tensor(undefined)";
  std::ostringstream os;
  os << "Tensor(shape=" << shape_str(shape_) << ", dtype=" << dtype_name(dtype_) << ", device=" << device_name(device()) << ")\n";
  Tensor c = to(Device::cpu);
  Shape idx(dim(), 0);
  os << std::setprecision(5);
  // recursive printer with "..." when a dim is longer than max_per_dim
  auto rec = [&](auto& self, int64_t d) -> void {
    if (d == dim()) {
      double v = c.at(idx);
      if (dtype_ == DType::i64) os << (int64_t)v;
      else os << v;
      return;
    }
    os << "[";
    int64_t n = shape_[d];
    for (int64_t i = 0; i < n; i++) {
      if (n > max_per_dim && i == max_per_dim / 2) {
        os << "...";
        i = n - max_per_dim / 2 - 1;
        if (i < max_per_dim / 2) i = max_per_dim / 2;
        os << ", ";
        continue;
      }
      idx[d] = i;
      self(self, d + 1);
      if (i + 1 < n) os << (d + 1 == dim() ? ", " : ",\n" + std::string(d + 1, ' '));
    }
    os << "]";
  };
  rec(rec, 0);
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

// ---------------------------------------------------------------------------------------------
// Factories
Tensor zeros(const Shape& s, DType t, Device d) { return full(s, 0.0, t, d); }
Tensor ones(const Shape& s, DType t, Device d) { return full(s, 1.0, t, d); }
Tensor full(const Shape& s, double v, DType t, Device d) {
  Tensor out = Tensor::empty(s, t, d);
  out.fill_(v);
  return out;
}
Tensor scalar_tensor(double v, DType t) { return full({}, v, t); }

Tensor arange(int64_t n, DType t) { return arange(0.0, (double)n, 1.0, t); }
Tensor arange(double start, double end, double step, DType t) {
  if (step == 0 || (end - start) / step < 0) fail("arange: empty or infinite range");
  int64_t n = (int64_t)std::ceil((end - start) / step);
  Tensor out = Tensor::empty({n}, t);
  dispatch_all(t, "arange", [&]<class T>() {
    T* p = out.data<T>();
    for (int64_t i = 0; i < n; i++) p[i] = (T)(start + i * step);
  });
  return out;
}

template <class T> static Tensor from_vec(const std::vector<T>& v, const Shape& s) {
  if ((int64_t)v.size() != shape_numel(s)) fail("from_vector: " + std::to_string(v.size()) + " values for shape " + shape_str(s));
  Tensor out = Tensor::empty(s, dtype_of<T>());
  if (!v.empty()) std::memcpy(out.raw_data(), v.data(), v.size() * sizeof(T));
  return out;
}
Tensor from_vector(const std::vector<float>& v, const Shape& s) { return from_vec(v, s); }
Tensor from_vector(const std::vector<double>& v, const Shape& s) { return from_vec(v, s); }
Tensor from_vector(const std::vector<int64_t>& v, const Shape& s) { return from_vec(v, s); }

// ---------------------------------------------------------------------------------------------
// Random numbers
static uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
void Generator::manual_seed(uint64_t seed) {
  for (auto& w : s) w = splitmix64(seed);
}
uint64_t Generator::next_u64() {
  auto rotl = [](uint64_t x, int k) { return (x << k) | (x >> (64 - k)); };
  uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}
double Generator::uniform() { return (next_u64() >> 11) * 0x1.0p-53; }
double Generator::normal() {
  double u1 = uniform(), u2 = uniform();
  if (u1 < 1e-300) u1 = 1e-300;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}
std::string Generator::state_string() const {
  std::ostringstream os;
  os << s[0] << ' ' << s[1] << ' ' << s[2] << ' ' << s[3];
  return os.str();
}
void Generator::set_state_string(const std::string& str) {
  std::istringstream is(str);
  if (!(is >> s[0] >> s[1] >> s[2] >> s[3])) throw std::invalid_argument("Generator: bad state string '" + str + "'");
}
Generator& default_generator() {
  static Generator g(0);
  return g;
}
void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

template <class F> static Tensor fill_random(const Shape& shape, DType dtype, F&& draw) {
  Tensor out = Tensor::empty(shape, dtype);
  int64_t n = out.numel();
  dispatch_float(dtype, "random", [&]<class T>() {
    T* p = out.data<T>();
    for (int64_t i = 0; i < n; i++) p[i] = (T)draw();
  });
  return out;
}
Tensor rand(const Shape& s, Generator& g, DType t) {
  return fill_random(s, t, [&] { return g.uniform(); });
}
Tensor randn(const Shape& s, Generator& g, DType t) {
  return fill_random(s, t, [&] { return g.normal(); });
}
Tensor uniform(const Shape& s, double lo, double hi, Generator& g, DType t) {
  return fill_random(s, t, [&] { return lo + (hi - lo) * g.uniform(); });
}
Tensor normal(const Shape& s, double mean, double std, Generator& g, DType t) {
  return fill_random(s, t, [&] { return mean + std * g.normal(); });
}
Tensor randint(int64_t lo, int64_t hi, const Shape& s, Generator& g) {
  if (hi <= lo) fail("randint: empty range [" + std::to_string(lo) + ", " + std::to_string(hi) + ")");
  Tensor out = Tensor::empty(s, DType::i64);
  int64_t* p = out.data<int64_t>();
  uint64_t span = (uint64_t)(hi - lo);
  for (int64_t i = 0; i < out.numel(); i++) p[i] = lo + (int64_t)(g.next_u64() % span);
  return out;
}

}  // namespace dl

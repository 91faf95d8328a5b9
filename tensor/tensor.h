// tensor/tensor.h - the n-dimensional array the whole framework computes on.
//
// +------------------------------------------------------------------------------------------------+
// | A Tensor is a cheap handle: (shared Storage, shape, strides, offset, dtype). Copying a Tensor     |
// | copies the handle, NOT the data.                                                                 |
// |   share storage (views) : copy-construction, view/reshape (when possible), permute, transpose,   |
// |                           narrow, select, expand, squeeze, unsqueeze, flatten (when possible)    |
// |   copy the data         : clone(), contiguous() (when not already contiguous), to(dtype/device), |
// |                           reshape of a non-contiguous tensor, and every op in tensor/ops.h       |
// | Writing through a view writes the shared storage. A Tensor knows nothing about gradients: that   |
// | is autograd's job (autograd/variable.h).                                                          |
// +------------------------------------------------------------------------------------------------+
//
// Shapes and strides are in elements; strides may be 0 (broadcast) but never negative.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace dl {

enum class DType : uint8_t { f32, f64, i64 };
enum class Device : uint8_t { cpu, cuda };

size_t dtype_size(DType t);
const char* dtype_name(DType t);
const char* device_name(Device d);

using Shape = std::vector<int64_t>;
std::string shape_str(const Shape& s);  // "[2, 3, 4]"
int64_t shape_numel(const Shape& s);
Shape contiguous_strides(const Shape& s);

// Thrown for every misuse: wrong shapes, dims, dtypes, devices. The message names the op and the values.
struct ShapeError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
[[noreturn]] void fail(const std::string& msg);  // throws ShapeError

// Raw bytes on one device, returned to the caching allocator (tensor/allocator.h) when the last
// Tensor that shares it goes away.
struct Backend;  // tensor/backend.h

struct Storage {
  void* data = nullptr;
  size_t nbytes = 0;
  Device device = Device::cpu;
  Backend* backend = nullptr;  // a device block's backend, which frees it
  Storage(size_t nbytes, Device device);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
};

class Tensor {
 public:
  Tensor() = default;  // an undefined tensor (e.g. "no gradient")
  Tensor(std::shared_ptr<Storage> storage, Shape shape, Shape strides, int64_t offset, DType dtype);
  static Tensor empty(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  const Shape& strides() const { return strides_; }
  int64_t offset() const { return offset_; }
  int64_t dim() const { return (int64_t)shape_.size(); }
  int64_t size(int64_t d) const;  // negative d counts from the end
  int64_t numel() const { return shape_numel(shape_); }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_ ? storage_->device : Device::cpu; }
  const std::shared_ptr<Storage>& storage() const { return storage_; }
  bool is_contiguous() const;
  bool shares_storage_with(const Tensor& o) const { return storage_ == o.storage_; }

  // Typed pointer to element [0,...,0]. Checks the dtype (T = float, double or int64_t) and that the tensor is on
  // the CPU (a device tensor in a CPU kernel is an error naming the device, never a read of device memory).
  template <class T> T* data() const;
  void* raw_data() const;  // pointer to element [0,...,0], any dtype, any device (copies and the device backend)

  // ---- views: share storage ----
  Tensor view(const Shape& shape) const;     // needs a contiguous tensor; one dim may be -1
  Tensor reshape(const Shape& shape) const;  // a view when contiguous, else a copy
  Tensor flatten(int64_t start = 0, int64_t end = -1) const;
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor transpose(int64_t d0, int64_t d1) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  Tensor select(int64_t dim, int64_t index) const;  // removes dim
  Tensor expand(const Shape& shape) const;          // broadcast size-1 dims (stride 0); -1 keeps a size
  Tensor squeeze(int64_t dim) const;
  Tensor unsqueeze(int64_t dim) const;

  // ---- copies ----
  Tensor contiguous() const;  // returns *this when already contiguous
  Tensor clone() const;
  Tensor to(DType dtype) const;
  Tensor to(Device device) const;
  void copy_(const Tensor& src);  // elementwise copy into this tensor (same shape; src may broadcast)
  void fill_(double value);
  void zero_() { fill_(0.0); }

  // ---- scalars and printing ----
  double item() const;                   // numel must be 1
  double at(const Shape& index) const;   // read one element (slow; for tests and printing)
  std::vector<float> to_vector() const;  // a float copy of all elements in row-major order
  std::string str(int max_per_dim = 6) const;

 private:
  std::shared_ptr<Storage> storage_;
  Shape shape_, strides_;
  int64_t offset_ = 0;
  DType dtype_ = DType::f32;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Normalise a possibly negative dim for a tensor of rank `rank`; names `op` in the error.
int64_t wrap_dim(int64_t dim, int64_t rank, const char* op);

// ---- factories ----
Tensor zeros(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu);
Tensor ones(const Shape& shape, DType dtype = DType::f32, Device device = Device::cpu);
Tensor full(const Shape& shape, double value, DType dtype = DType::f32, Device device = Device::cpu);
Tensor arange(int64_t n, DType dtype = DType::i64);
Tensor arange(double start, double end, double step, DType dtype = DType::f32);
Tensor from_vector(const std::vector<float>& v, const Shape& shape);
Tensor from_vector(const std::vector<double>& v, const Shape& shape);
Tensor from_vector(const std::vector<int64_t>& v, const Shape& shape);
Tensor scalar_tensor(double v, DType dtype = DType::f32);

// ---- seeded random numbers ----
// xoshiro256** seeded through splitmix64: small state, fast, and its state can be saved in a checkpoint.
struct Generator {
  uint64_t s[4];
  explicit Generator(uint64_t seed = 0) { manual_seed(seed); }
  void manual_seed(uint64_t seed);
  uint64_t next_u64();
  double uniform();  // [0, 1)
  double normal();   // standard normal (Box-Muller, no cached second value so state is the whole story)
  std::string state_string() const;
  void set_state_string(const std::string& s);
};
Generator& default_generator();
void manual_seed(uint64_t seed);  // seeds default_generator()

Tensor rand(const Shape& shape, Generator& g = default_generator(), DType dtype = DType::f32);  // U[0,1)
Tensor randn(const Shape& shape, Generator& g = default_generator(), DType dtype = DType::f32);
Tensor uniform(const Shape& shape, double lo, double hi, Generator& g = default_generator(), DType dtype = DType::f32);
Tensor normal(const Shape& shape, double mean, double std, Generator& g = default_generator(), DType dtype = DType::f32);
Tensor randint(int64_t lo, int64_t hi, const Shape& shape, Generator& g = default_generator());  // [lo, hi), i64

// ---- type dispatch for kernels: DL_DISPATCH_FLOAT(t, "op", [&]<class T>() { ... }) ----
template <class F> decltype(auto) dispatch_float(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::f32: return f.template operator()<float>();
    case DType::f64: return f.template operator()<double>();
    default: fail(std::string(op) + ": expected a floating dtype (f32/f64), found " + dtype_name(t));
  }
}
template <class F> decltype(auto) dispatch_all(DType t, const char* op, F&& f) {
  switch (t) {
    case DType::f32: return f.template operator()<float>();
    case DType::f64: return f.template operator()<double>();
    case DType::i64: return f.template operator()<int64_t>();
  }
  fail(std::string(op) + ": unknown dtype");
}
template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<int64_t>() { return DType::i64; }

}  // namespace dl

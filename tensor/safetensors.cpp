// tensor/safetensors.cpp - see safetensors.h for the format.
#include "tensor/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace dl {

using json = nlohmann::json;

const Tensor& TensorFile::at(const std::string& name) const {
  auto it = tensors.find(name);
  if (it == tensors.end()) {
    std::string have;
    int k = 0;
    for (auto& [n, t] : tensors) {
      if (k++ == 8) {
        have += ", ...";
        break;
      }
      have += (have.empty() ? "" : ", ") + n;
    }
    throw SafetensorsError(source + ": no tensor named '" + name + "' (it has: " + have + ")");
  }
  return it->second;
}

static float half_to_float(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff, f;
  if (exp == 0) {
    if (mant == 0) f = sign << 31;
    else {  // subnormal
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        exp--;
      }
      mant &= 0x3ff;
      f = (sign << 31) | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) f = (sign << 31) | 0x7f800000 | (mant << 13);
  else f = (sign << 31) | ((exp - 15 + 127) << 23) | (mant << 13);
  float r;
  std::memcpy(&r, &f, 4);
  return r;
}

TensorFile parse_safetensors(const std::string& bytes, const std::string& src) {
  auto err = [&](const std::string& m) { return SafetensorsError(src + ": " + m); };
  if (bytes.size() < 8) throw err("file is " + std::to_string(bytes.size()) + " bytes, too short for the 8-byte header length");
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  if (n > bytes.size() - 8)
    throw err("header length " + std::to_string(n) + " exceeds the file size " + std::to_string(bytes.size()));
  json h;
  try {
    h = json::parse(bytes.begin() + 8, bytes.begin() + 8 + (int64_t)n);
  } catch (const std::exception& e) {
    throw err(std::string("header is not valid JSON: ") + e.what());
  }
  if (!h.is_object()) throw err("header is not a JSON object");
  TensorFile f;
  f.source = src;
  size_t data_size = bytes.size() - 8 - n;
  const char* base = bytes.data() + 8 + n;
  for (auto& item : h.items()) {
    const std::string name = item.key();  // a plain variable: lambdas below capture it (clang rejects bindings)
    const json& v = item.value();
    if (name == "__metadata__") {
      if (!v.is_object()) throw err("__metadata__ is not an object");
      for (auto& [k, val] : v.items()) {
        if (!val.is_string()) throw err("__metadata__ value for '" + k + "' is not a string");
        f.metadata[k] = val.get<std::string>();
      }
      continue;
    }
    auto terr = [&](const std::string& m) { return err("tensor '" + name + "': " + m); };
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") || !v.contains("data_offsets"))
      throw terr("entry needs dtype, shape and data_offsets");
    if (!v["dtype"].is_string() || !v["shape"].is_array() || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
      throw terr("malformed dtype/shape/data_offsets");
    std::string dt = v["dtype"];
    Shape shape;
    for (auto& d : v["shape"]) {
      if (!d.is_number_integer() || d.get<int64_t>() < 0) throw terr("shape has a non-integer or negative entry");
      shape.push_back(d.get<int64_t>());
    }
    if (!v["data_offsets"][0].is_number_unsigned() || !v["data_offsets"][1].is_number_unsigned())
      throw terr("data_offsets are not unsigned integers");
    uint64_t b = v["data_offsets"][0], e = v["data_offsets"][1];
    if (b > e || e > data_size)
      throw terr("data_offsets [" + std::to_string(b) + ", " + std::to_string(e) + "] outside the data section of " +
                 std::to_string(data_size) + " bytes");
    size_t elem = dt == "F32" || dt == "I32"      ? 4
                  : (dt == "F64" || dt == "I64")  ? 8
                  : (dt == "F16" || dt == "BF16") ? 2
                  : (dt == "U8" || dt == "BOOL")  ? 1
                                                  : 0;
    if (elem == 0) throw terr("unsupported dtype " + dt + " (expected F32, F64, F16, BF16, I64, I32, U8 or BOOL)");
    // guard the product against overflow before comparing byte counts
    uint64_t count = 1;
    for (int64_t d : shape) {
      if (d != 0 && count > (UINT64_MAX / 16) / (uint64_t)d) throw terr("shape " + shape_str(shape) + " is too large");
      count *= (uint64_t)d;
    }
    if (count * elem != e - b)
      throw terr("shape " + shape_str(shape) + " of " + dt + " needs " + std::to_string(count * elem) +
                 " bytes, data_offsets give " + std::to_string(e - b));
    const char* p = base + b;
    Tensor t;
    if (dt == "F32" || dt == "F64" || dt == "I64") {
      t = Tensor::empty(shape, dt == "F32" ? DType::f32 : dt == "F64" ? DType::f64 : DType::i64);
      if (count) std::memcpy(t.raw_data(), p, count * elem);
    } else if (dt == "I32" || dt == "U8" || dt == "BOOL") {
      t = Tensor::empty(shape, DType::i64);
      int64_t* o = t.data<int64_t>();
      for (uint64_t i = 0; i < count; i++) {
        if (dt == "I32") {
          int32_t x;
          std::memcpy(&x, p + 4 * i, 4);
          o[i] = x;
        } else o[i] = (uint8_t)p[i];
      }
    } else {  // F16 / BF16 -> F32
      t = Tensor::empty(shape, DType::f32);
      float* o = t.data<float>();
      for (uint64_t i = 0; i < count; i++) {
        uint16_t x;
        std::memcpy(&x, p + 2 * i, 2);
        if (dt == "F16") o[i] = half_to_float(x);
        else {
          uint32_t u = (uint32_t)x << 16;
          std::memcpy(&o[i], &u, 4);
        }
      }
    }
    f.tensors[name] = t;
  }
  return f;
}

TensorFile load_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw SafetensorsError(path + ": cannot open for reading (" + std::strerror(errno) + ")");
  if (std::filesystem::is_directory(path)) throw SafetensorsError(path + ": is a folder, not a safetensors file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_safetensors(ss.str(), path);
}

void atomic_write_file(const std::string& path, const std::string& contents) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) throw std::runtime_error(path + ": cannot create temp file " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t w = ::write(fd, contents.data() + done, contents.size() - done);
    if (w < 0) {
      int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw std::runtime_error(path + ": write failed: " + std::strerror(e));
    }
    done += (size_t)w;
  }
  // a full disk may only show at fsync or close (delayed allocation, network file systems): check both
  if (::fsync(fd) != 0) {
    int e = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw std::runtime_error(path + ": fsync failed: " + std::strerror(e));
  }
  if (::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error(path + ": close failed: " + std::strerror(e));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error(path + ": rename from " + tmp + " failed: " + std::strerror(e));
  }
  // the rename is durable once the folder's entry is on disk (after a power cut, not only after a kill)
  const size_t slash = path.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  if (int dfd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::string serialize_safetensors(const std::map<std::string, Tensor>& tensors,
                                  const std::map<std::string, std::string>& metadata, const std::string& what) {
  json h = json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  std::string data;
  for (auto& [name, t0] : tensors) {
    if (!t0.defined()) throw SafetensorsError(what + ": tensor '" + name + "' is undefined");
    Tensor t = t0.to(Device::cpu).contiguous();
    size_t nb = (size_t)t.numel() * dtype_size(t.dtype());
    h[name] = {{"dtype", t.dtype() == DType::f32   ? "F32"
                         : t.dtype() == DType::f64 ? "F64"
                                                   : "I64"},
               {"shape", t.shape()},
               {"data_offsets", {data.size(), data.size() + nb}}};
    data.append((const char*)t.raw_data(), nb);
  }
  std::string hs = h.dump();
  while ((hs.size() + 8) % 8) hs += ' ';  // align the data section to 8 bytes, as the reference writer does
  uint64_t n = hs.size();
  std::string out((const char*)&n, 8);
  out += hs;
  out += data;
  return out;
}

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  atomic_write_file(path, serialize_safetensors(tensors, metadata, path));
}

}  // namespace dl

// autograd/profile.cpp - the op profile of autograd/profile.h: a table of rows by op name, a forward clock.
#include "autograd/profile.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>

#include "autograd/variable.h"
#include "tensor/backend.h"

namespace dl {
namespace {

std::atomic<bool> g_on{false};
std::map<std::string, OpProfile> g_rows;  // by op name
double g_last_ms = 0;                     // the forward clock: when the previous op was recorded
// The device backend once an op's output was on a device: its ops only queue work, so every clock read first waits
// for the device (else an op's row would hold the time of whatever was queued before the next wait).
Backend* g_device = nullptr;

// Notes the device the first time an op's tensor is on one; from then on profile_now_ms() waits for it.
void note_device(const Tensor& t) {
  if (!g_device && t.defined() && t.device() != Device::cpu) g_device = &require_backend(t.device(), "profile");
}

double megabytes(const Tensor& t) { return t.defined() ? double(t.numel()) * dtype_size(t.dtype()) / 1e6 : 0.0; }

OpProfile& row(const Node& n) {
  OpProfile& r = g_rows[n.name()];
  if (r.op.empty()) r.op = n.name();
  return r;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

bool profiling() { return g_on.load(std::memory_order_relaxed); }

ProfileScope::ProfileScope() {
  g_rows.clear();
  g_device = nullptr;
  g_last_ms = detail::profile_now_ms();
  g_on.store(true, std::memory_order_relaxed);
}

ProfileScope::~ProfileScope() { g_on.store(false, std::memory_order_relaxed); }

void profile_mark() { g_last_ms = detail::profile_now_ms(); }

std::vector<OpProfile> profile_table() {
  std::vector<OpProfile> out;
  for (const auto& [name, r] : g_rows) out.push_back(r);
  std::stable_sort(out.begin(), out.end(), [](const OpProfile& a, const OpProfile& b) { return a.total_ms() > b.total_ms(); });
  return out;
}

std::string profile_report(const std::string& title, int top) {
  const std::vector<OpProfile> rows = profile_table();
  double fwd = 0, bwd = 0;
  for (const OpProfile& r : rows) fwd += r.forward_ms, bwd += r.backward_ms;
  const double total = fwd + bwd;
  std::string s = "## " + title + "\n\n";
  s += "| op | share | forward ms | backward ms | forward calls | backward calls | forward MB | backward MB |\n";
  s += "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n";
  int shown = 0;
  for (const OpProfile& r : rows) {
    if (top > 0 && shown++ >= top) break;
    s += "| " + r.op + " | " + fixed(total > 0 ? 100 * r.total_ms() / total : 0, 1) + "% | " + fixed(r.forward_ms, 2) +
         " | " + fixed(r.backward_ms, 2) + " | " + std::to_string(r.forward_calls) + " | " +
         std::to_string(r.backward_calls) + " | " + fixed(r.forward_mb, 1) + " | " + fixed(r.backward_mb, 1) + " |\n";
  }
  s += "\n" + std::to_string(rows.size()) + " ops; forward " + fixed(fwd, 1) + " ms, backward " + fixed(bwd, 1) +
       " ms, total " + fixed(total, 1) + " ms";
  if (top > 0 && int(rows.size()) > top) s += " (the table shows the top " + std::to_string(top) + ")";
  return s + ".\n";
}

namespace detail {

double profile_now_ms() {
  if (g_device) g_device->synchronize();
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

void profile_forward(const Node& n, const Tensor& out) {
  note_device(out);
  const double now = profile_now_ms();
  OpProfile& r = row(n);
  r.forward_calls++;
  r.forward_ms += now - g_last_ms;
  r.forward_mb += megabytes(out);
  g_last_ms = now;
}

void profile_backward(const Node& n, double start_ms, const std::vector<Tensor>& grads) {
  for (const Tensor& g : grads) note_device(g);
  OpProfile& r = row(n);
  r.backward_calls++;
  r.backward_ms += profile_now_ms() - start_ms;
  for (const Tensor& g : grads) r.backward_mb += megabytes(g);
}

}  // namespace detail
}  // namespace dl

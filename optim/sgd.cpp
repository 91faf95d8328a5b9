// optim/sgd.cpp - the SGD update as one tight loop over contiguous buffers (formula in sgd.h).
#include "optim/sgd.h"

namespace dl::optim {

static std::map<std::string, double> sgd_defaults(const SGDOptions& o) {
  return {{"momentum", o.momentum}, {"dampening", o.dampening}, {"nesterov", o.nesterov ? 1.0 : 0.0}};
}

static std::vector<ParamGroup> check_sgd_groups(std::vector<ParamGroup> groups, const SGDOptions& o) {
  for (auto& g : groups) {
    auto get = [&](const char* k, double d) { return g.options.count(k) ? g.options.at(k) : d; };
    double mu = get("momentum", o.momentum), tau = get("dampening", o.dampening);
    bool nesterov = get("nesterov", o.nesterov) != 0;
    if (mu < 0) fail("SGD: group '" + g.name + "' has negative momentum " + std::to_string(mu));
    if (nesterov && (mu <= 0 || tau != 0))
      fail("SGD: group '" + g.name + "': Nesterov momentum needs momentum > 0 and dampening 0 (as torch.optim.SGD)");
  }
  return groups;
}

SGD::SGD(std::vector<ParamGroup> groups, const SGDOptions& opt)
    : Optimizer(check_sgd_groups(std::move(groups), opt), sgd_defaults(opt)) {}

SGD::SGD(const std::vector<Var>& params, const SGDOptions& opt)
    : SGD(std::vector<ParamGroup>{make_group(params, opt.lr, opt.weight_decay)}, opt) {}

std::vector<std::string> SGD::buffer_names(const ParamGroup& g) const {
  if (option(g, "momentum") == 0) return {};
  return {"momentum_buffer"};
}

void SGD::update(const ParamGroup& g, Tensor& param, const Tensor& grad, ParamState& s) {
  const double mu = option(g, "momentum"), tau = option(g, "dampening"), wd = g.weight_decay, lr = g.lr;
  const bool nesterov = option(g, "nesterov") != 0;
  const bool first = !s.buffers.count("momentum_buffer");
  if (mu != 0 && first) s.buffers["momentum_buffer"] = Tensor::empty(param.shape(), param.dtype());
  dispatch_float(param.dtype(), "SGD", [&]<class T>() {
    T* p = param.data<T>();
    const T* gr = grad.data<T>();
    T* buf = mu != 0 ? s.buffers["momentum_buffer"].data<T>() : nullptr;
    const T twd = (T)wd, tmu = (T)mu, tdamp = (T)(1 - tau), tlr = (T)lr;
    parallel_chunks(param.numel(), [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; i++) {
        T d = gr[i];
        if (wd != 0) d += twd * p[i];
        if (buf) {
          buf[i] = first ? d : tmu * buf[i] + tdamp * d;
          d = nesterov ? d + tmu * buf[i] : buf[i];
        }
        p[i] -= tlr * d;
      }
    });
  });
}

}  // namespace dl::optim

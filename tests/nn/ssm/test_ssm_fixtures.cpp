// tests/nn/ssm/test_ssm_fixtures.cpp - forward and every gradient of S4D, the S4 DPLR kernel and DLR against values recorded
// from PyTorch (tests/fixtures/nn_zoo_ssm.py, files in tests/fixtures/zoo/: param.<name>, input, output, gout, grad.<name>, grad_input).
#include <gtest/gtest.h>

#include "nn/nn_test_util.h"
#include "nn/ssm/s4.h"
#include "nn/ssm/ssm_ops.h"

using namespace dl;
using namespace dl::nn;
using dl::test::all_close;

// FFTs and length-L kernels: rounding grows with L (kFixtureLong), and the fixture computed in float64.
TEST(SSMFixtures, S4D) {
  for (std::string name : {"s4d_zoh", "s4d_bilinear_bidir"}) {
    SCOPED_TRACE(name);
    TensorFile f = test::zoo_fixture(name);
    auto p = test::zoo_param_leaves(f);
    Var u(f.at("input").clone(), true);
    DiagKernelOptions o;
    o.disc = name == "s4d_zoh" ? Discretization::zoh : Discretization::bilinear;
    o.chunk = 5;
    Var K = diag_ssm_kernel(p["log_dt"], p["inv_A_real"], p["A_imag"], p["B"], p["C"], u.size(1), o);
    test::zoo_check(f, ssm_conv(u, K, p["D"]), u, p, test::kFixtureLong);
  }
}

TEST(SSMFixtures, S4DplrKernel) {
  TensorFile f = test::zoo_fixture("s4_dplr_kernel");
  auto p = test::zoo_param_leaves(f);
  Var K = s4_dplr_kernel(p["log_dt"], p["inv_A_real"], p["A_imag"], p["B"], p["P"], p["C"], f.at("output").size(2));
  test::zoo_check(f, K, Var(), p, test::kFixtureLong);
}

TEST(SSMFixtures, DLR) {
  TensorFile f = test::zoo_fixture("dlr_bidir");
  auto p = test::zoo_param_leaves(f);
  Var u(f.at("input").clone(), true);
  Var K = dlr_kernel(p["Lambda_log_neg_re"], p["Lambda_im"], p["W"], u.size(1), 4);
  test::zoo_check(f, ssm_conv(u, K, p["D"]), u, p, test::kFixtureLong);
}

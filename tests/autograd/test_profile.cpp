// tests/autograd/test_profile.cpp - the op profile (autograd/profile.h): every recorded op gets a row with its calls,
// forward and backward time and bytes; forward time is the time since the previous recorded op (so a pause before
// an op is that op's, unless profile_mark() restarts the clock); nothing is collected outside a ProfileScope.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "autograd/ops.h"
#include "autograd/profile.h"
#include "op_harness.h"

using namespace dl;

namespace {

const OpProfile* find_row(const std::vector<OpProfile>& rows, const std::string& op) {
  for (const OpProfile& r : rows)
    if (r.op == op) return &r;
  return nullptr;
}

void pause_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

}  // namespace

TEST(Profile, EveryOpOfAStepHasARowWithCallsAndBytes) {
  Var x(from_vector(std::vector<float>(6, 1.0f), {2, 3}), false);
  Var w(from_vector(std::vector<float>(6, 2.0f), {2, 3}), true);
  {
    ProfileScope scope;
    EXPECT_TRUE(profiling());
    Var loss = sum(mul(mul(x, w), w));  // two muls, one sum
    loss.backward();
  }
  EXPECT_FALSE(profiling());
  const std::vector<OpProfile> rows = profile_table();
  const OpProfile* m = find_row(rows, "mul");
  const OpProfile* s = find_row(rows, "sum");
  const OpProfile* acc = find_row(rows, "accumulate_grad");
  ASSERT_NE(m, nullptr);
  ASSERT_NE(s, nullptr);
  ASSERT_NE(acc, nullptr);
  EXPECT_EQ(m->forward_calls, 2);
  EXPECT_EQ(m->backward_calls, 2);
  EXPECT_EQ(s->forward_calls, 1);
  EXPECT_EQ(s->backward_calls, 1);
  EXPECT_EQ(acc->backward_calls, 1);  // w's gradient, accumulated once from both uses
  // forward: two (2, 3) f32 outputs of 24 bytes; backward: the second mul returns two gradients (x*w and w both
  // need one), the first only w's (x needs none): 3 gradients of 24 bytes
  EXPECT_NEAR(m->forward_mb, 48e-6, 1e-12);
  EXPECT_NEAR(m->backward_mb, 72e-6, 1e-12);
  EXPECT_NEAR(s->forward_mb, 4e-6, 1e-12);
}

TEST(Profile, AnOpsForwardTimeRunsFromThePreviousRecordedOp) {
  Var x(from_vector(std::vector<float>{1, 2, 3}, {3}), true);
  ProfileScope scope;
  Var a = exp(x);
  pause_ms(60);  // host work between two ops counts into the next one
  Var b = tanh(a);
  const std::vector<OpProfile> rows = profile_table();
  ASSERT_NE(find_row(rows, "tanh"), nullptr);
  EXPECT_GE(find_row(rows, "tanh")->forward_ms, 60.0);
}

TEST(Profile, MarkRestartsTheForwardClock) {
  Var x(from_vector(std::vector<float>{1, 2, 3}, {3}), true);
  ProfileScope scope;
  pause_ms(300);
  profile_mark();  // e.g. after the optimizer step: not the next op's time
  Var a = exp(x);
  ASSERT_NE(find_row(profile_table(), "exp"), nullptr);
  EXPECT_LT(find_row(profile_table(), "exp")->forward_ms, 300.0);
}

TEST(Profile, NothingIsCollectedOutsideAScopeAndANewScopeStartsEmpty) {
  Var x(from_vector(std::vector<float>{1, 2, 3}, {3}), true);
  { ProfileScope scope; Var a = exp(x); }
  Var b = sigmoid(x);  // outside: not counted
  EXPECT_EQ(find_row(profile_table(), "sigmoid"), nullptr);
  ASSERT_NE(find_row(profile_table(), "exp"), nullptr);
  { ProfileScope scope; Var c = tanh(x); }
  EXPECT_EQ(find_row(profile_table(), "exp"), nullptr);
  EXPECT_NE(find_row(profile_table(), "tanh"), nullptr);
}

TEST(Profile, TheReportListsTheTopOpsAndTheTotals) {
  Var x(from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2}), true);
  {
    ProfileScope scope;
    sum(matmul(exp(x), x)).backward();
  }
  const std::string all = profile_report("one step");
  EXPECT_NE(all.find("## one step"), std::string::npos);
  for (const char* op : {"| matmul |", "| exp |", "| sum |"}) EXPECT_NE(all.find(op), std::string::npos) << op;
  EXPECT_NE(all.find("ops; forward "), std::string::npos);
  const std::string top1 = profile_report("one step", 1);
  EXPECT_NE(top1.find("(the table shows the top 1)"), std::string::npos);
  int table_rows = 0;
  for (size_t p = top1.find("\n| "); p != std::string::npos; p = top1.find("\n| ", p + 1)) table_rows++;
  EXPECT_EQ(table_rows, 3);  // header, separator, one op
}

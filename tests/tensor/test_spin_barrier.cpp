// tests/tensor/test_spin_barrier.cpp - tensor/spin_barrier.h: no thread leaves a round before every thread has
// arrived, and what each wrote before the barrier is seen by all after it; also with more threads than cores (the
// yielding path) and inside an OpenMP team sized by `omp single`, as nn/fused/lstm_kernels.cpp uses it.
#include <gtest/gtest.h>

#include <omp.h>

#include <thread>
#include <vector>

#include "tensor/spin_barrier.h"

namespace {

// Each of `n` threads writes the round into its slot, waits, checks every slot holds the round, waits again.
// A barrier that lets a thread through early shows as a slot still holding the previous round (or already the next).
int broken_rounds(int n, int rounds) {
  dl::SpinBarrier bar(n);
  std::vector<int> slot(n, -1);
  std::vector<int> bad(n, 0);
  std::vector<std::thread> ts;
  for (int p = 0; p < n; p++)
    ts.emplace_back([&, p] {
      for (int r = 0; r < rounds; r++) {
        slot[p] = r;
        bar.wait();
        for (int q = 0; q < n; q++) bad[p] += slot[q] != r;
        bar.wait();
      }
    });
  for (auto& t : ts) t.join();
  int total = 0;
  for (int b : bad) total += b;
  return total;
}

}  // namespace

TEST(SpinBarrier, NoThreadPassesARoundEarly) {
  EXPECT_EQ(broken_rounds(2, 5000), 0);
  EXPECT_EQ(broken_rounds(1, 100), 0);
}

TEST(SpinBarrier, MoreThreadsThanCoresStillFinish) {
  const int n = 2 * (int)std::max(2u, std::thread::hardware_concurrency()) + 1;  // some must yield their core
  EXPECT_EQ(broken_rounds(n, 100), 0);
}

TEST(SpinBarrier, InsideAnOpenMpTeamSizedBySingle) {
  dl::SpinBarrier bar;
  std::vector<long> sums(64, 0);
  long expected = 0;
  for (int r = 0; r < 200; r++) expected += r;
#pragma omp parallel num_threads(3)
  {
#pragma omp single
    bar.set_threads(omp_get_num_threads());
    static std::vector<int> slot(64, -1);  // shared by the team
    const int p = omp_get_thread_num(), n = omp_get_num_threads();
    for (int r = 0; r < 200; r++) {
      slot[p] = r;
      bar.wait();
      for (int q = 0; q < n; q++) sums[p] += slot[q] == r ? r : -1000000;
      bar.wait();
    }
    sums[p] -= expected * n;
  }
  for (long s : sums) EXPECT_EQ(s, 0);
}

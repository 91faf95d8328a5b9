// tensor/spin_barrier.h - a barrier for the threads of one parallel region that meet many times in a row, a few
// microseconds of work apart (the LSTM's time loop meets once per time step: nn/fused/lstm_kernels.cpp).
//
// Why not `#pragma omp barrier`: every script here runs OpenMP with OMP_WAIT_POLICY=PASSIVE (two thread pools share
// two cores), under which a thread that reaches the barrier first goes to sleep at once and the last one must wake
// it, a futex round trip of ~25 us; at 200 barriers per LSTM training step that was 5 of its 73 ms on two threads.
// This barrier spins instead (with the CPU's pause hint) for up to kSpins rounds, then yields the core on every
// further round, so an oversubscribed machine (more threads than cores) still makes progress.
//
// Memory order: what a thread wrote before wait() is visible to every thread after it (the arrivals' fetch_add
// chain releases to the last arriver, whose store of the next generation releases to the waiters that acquire it).
#pragma once
#include <atomic>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace dl {

class SpinBarrier {
 public:
  static constexpr int kSpins = 1 << 12;  // ~10-40 us of pause before yielding

  explicit SpinBarrier(int threads = 1) : threads_(threads) {}
  // The number of threads that meet; set before any of them waits (e.g. in `#pragma omp single`, which ends with a
  // barrier of its own, from omp_get_num_threads(): a team may be smaller than asked for).
  void set_threads(int threads) { threads_ = threads; }

  void wait() {
    const unsigned gen = gen_.load(std::memory_order_acquire);
    if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == threads_) {  // the last one in opens the next round
      arrived_.store(0, std::memory_order_relaxed);
      gen_.store(gen + 1, std::memory_order_release);
      return;
    }
    for (int spins = 0; gen_.load(std::memory_order_acquire) == gen; spins++) {
      if (spins < kSpins) pause();
      else std::this_thread::yield();
    }
  }

 private:
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  }
  std::atomic<int> arrived_{0};
  std::atomic<unsigned> gen_{0};
  int threads_;
};

}  // namespace dl

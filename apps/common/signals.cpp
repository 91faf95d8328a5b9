// apps/common/signals.cpp - see signals.h.
#include "apps/common/signals.h"

#include <csignal>

namespace dl::harness {

static volatile std::sig_atomic_t g_stop = 0;

extern "C" void dl_harness_on_signal(int sig) {
  if (g_stop) {  // the second one: do what the user asked at once
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_stop = 1;
}

void install_stop_handlers() {
  std::signal(SIGINT, dl_harness_on_signal);
  std::signal(SIGTERM, dl_harness_on_signal);
}

bool stop_requested() { return g_stop != 0; }
void clear_stop_request() { g_stop = 0; }

}  // namespace dl::harness

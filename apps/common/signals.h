// apps/common/signals.h - a keyboard interrupt (SIGINT) or a polite kill (SIGTERM) asks the run to stop; the phase
// loop sees it after the current step, writes a checkpoint and throws Interrupted, so `--resume` loses nothing.
// A second signal while the first is pending restores the default action (a second Ctrl-C kills at once).
#pragma once

namespace dl::harness {

void install_stop_handlers();  // SIGINT and SIGTERM; idempotent
bool stop_requested();
void clear_stop_request();  // tests, and after an Interrupted was handled

}  // namespace dl::harness

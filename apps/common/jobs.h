// apps/common/jobs.h - a sweep's cells in several processes on one machine (--jobs N).
//
// Small models use two cores badly: a step of a width-64 Transformer spends much of its time in short loops that
// one thread runs as fast as two. Running two cells at once, one thread each, keeps both cores busy. The cells of a
// sweep are independent (each seeds its own generators from its config), so the results do not depend on which
// process runs which cell, or in what order: a cell run by a job equals the same cell run alone with the same
// --threads, bit for bit (tests/apps/test_jobs.cpp).
//
// How it works. The parent process takes the run folder's lock and starts N workers: the same executable with the
// same command line plus `--worker k`. Each worker walks the cells, the costliest first (Experiment::cost), and takes
// the next one nobody has claimed: it creates <out>/jobs/claims/<cell> with O_EXCL, which exactly one process can.
// A worker writes the cell's result.json and then <cell>.done; the parent watches those markers, rewrites the
// reports after each, and draws one status line per worker (what the worker's progress bar would show) under the
// lines of finished cells. A worker's other output goes to <out>/jobs/worker<k>.log.
//
// Stopping. Workers run in their own process group, so a Ctrl-C reaches only the parent, which passes one SIGTERM to
// each worker: each checkpoints its phase and exits with 130, and the parent then exits with 130 (resume with
// --resume: the parent clears old claims, finished cells are skipped, half-done ones resume from their checkpoints).
// A worker that dies of anything stops the others the same way and the parent names it with the end of its log. A
// parent killed outright takes its workers with it (PR_SET_PDEATHSIG: each gets SIGTERM and checkpoints).
#pragma once
#include <string>
#include <vector>

#include "apps/common/experiment.h"

namespace dl::harness {

std::string jobs_dir(const std::string& out);  // <out>/jobs

// Worker k's claim on a cell: true for the one process that creates the claim file first (it holds k).
bool claim_cell(const std::string& out, const Cell& c, int k);
// After the cell's result.json: tells the parent the cell is finished.
void mark_cell_done(const std::string& out, const Cell& c);

// The cells in the order workers take them: the highest Experiment::cost first (ties keep the sweep's order), so
// the long cells do not come last and leave one worker running alone.
std::vector<Cell> costliest_first(const Experiment& e, const std::vector<Cell>& cells);

// The parent's side: runs `cells` in `jobs` worker processes, each started as `worker_command` + {"--worker", k}
// (worker_command[0] is the executable). Returns every cell's result; throws Interrupted when stopped by a signal,
// std::runtime_error naming the worker and its log when one fails.
std::vector<CellResult> run_cells_in_jobs(const Experiment& e, const Preset& p, const std::vector<Cell>& cells,
                                          const SweepOptions& o, int jobs, const std::vector<std::string>& worker_command);

// An exclusive lock on a shared cache folder (flock on <dir>.lock), for a cached pretraining that several jobs or
// several runs may want at once: the first builds it, the others wait for it (saying so) and then find it built.
class FolderLock {
 public:
  FolderLock(const std::string& dir, bool quiet);
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace dl::harness

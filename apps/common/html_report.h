// apps/common/html_report.h - <out>/report.html: a run on one page that opens in any browser, from a file, offline.
//
// The harness rewrites it with results.{json,md} after every cell (experiment.h: write_reports), so a running sweep
// can be watched by reloading it. One self-contained file: nothing is fetched when it is viewed and nothing beside it
// is needed, so it can be mailed or copied off the machine alone. It holds, top to bottom:
//   - what ran: the app, the preset, the date it was written (UTC), the machine (CPU model and family from
//     /proc/cpuinfo, logical CPUs, OpenMP threads), the commits (`git describe --always --dirty` of the source tree,
//     read at run time - the build embeds no hash: the one each cell ran at, which the harness records in its result
//     as extra.commit, and the one the page was written at; "unknown" where the tree is not a git checkout), the
//     cells and their summed wall time;
//   - the results table with its notes (the footer of results.md), its rows exactly as in results.json;
//   - every plot in <out>/plots (*.png, inlined as base64 data URIs; *.svg inlined the same way);
//   - per cell: its metrics (as results.json writes them), wall time, steps/s and parameters; its curve from its
//     metrics.csv (training loss every logged step of every phase, validation accuracy at the evaluations, drawn as an
//     SVG image inlined as a data URI); its resolved config; the log rows themselves, folded.
// Plain HTML and CSS; no script. The page is checked in headless Chromium by tests/apps/test_html_report.cpp.
// What it is not: an interactive dashboard (no zoom, no series toggles); the plots are the PNGs gnuplot drew.
#pragma once
#include <string>
#include <vector>

#include "apps/common/report.h"
#include "apps/common/results.h"

namespace dl::harness {

// The page for the run in `out` (its plots are read from <out>/plots, the cells' logs from their metrics.csv).
std::string html_report(const std::string& out, const std::string& app, const std::string& preset, const Table& t,
                        const std::vector<CellResult>& rs);
// Writes html_report(...) to <out>/report.html atomically (temp file + rename).
void write_html_report(const std::string& out, const std::string& app, const std::string& preset, const Table& t,
                       const std::vector<CellResult>& rs);

// ---- the pieces (tests use them) ----
std::string base64(const std::string& bytes);      // RFC 4648, with padding
std::string html_escape(const std::string& text);  // & < > " '
// One cell's log as an SVG image (width x height pixels): the training loss of every phase on one step axis (each
// phase continuing where the previous one ended, a dashed line at each boundary), the validation accuracy on a right
// axis of 0-100 %. Empty rows: an SVG saying there is no log.
std::string curve_svg(const std::vector<CurvePoint>& rows, int width = 720, int height = 220);
// "AMD EPYC (family 25, model 17), 2 logical CPUs" from /proc/cpuinfo ("unknown CPU" where it is unreadable).
std::string machine_description();
// `git describe --always --dirty` of the source tree, or "unknown (not a git checkout)".
std::string source_commit();

}  // namespace dl::harness

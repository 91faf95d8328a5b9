// tests/apps/test_html_report.cpp - a run's report.html (apps/common/html_report.h), opened in headless Chromium and
// checked as a person would check it: every row of the results table and every plot is there, no image is broken,
// nothing comes from the network, the page draws (a screenshot of the right size with something on it), and the
// numbers on the page are those of results.json. The run is a miniature LRA sweep (scratch and self-pretrained, two
// seeds), so the page has pretraining and fine-tuning curves, bands and bars.
//
// How the browser is asked: a copy of the page gets a checking script before </body> (the report itself has none);
// on load it writes what it sees (image sizes, the table's cells, the cells' metrics, the resources the page
// fetched) as JSON into a <pre id="verdict">, and `chromium --dump-dom` prints the DOM after the load. Every host name
// resolves to nothing (--host-resolver-rules), so a page that needed the network would show a broken image, and
// performance.getEntriesByType("resource") lists anything it tried to fetch (data: URIs are not fetched).
// Without chromium (Debian's `chromium`, scripts/setup.sh installs it) the browser tests skip, saying so.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "app_test_util.h"
#include "apps/common/html_report.h"
#include "apps/lra_benchmark/app.h"
#include "apps/lra_benchmark/config.h"

using namespace dl;
namespace harness = dl::harness;
namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

// The path of the chromium executable, or "" when none is installed.
std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-browser"}) {
    const std::string cmd = std::string("command -v ") + name + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) == 0) return name;
  }
  return "";
}

// Runs headless chromium on a local file with the network unreachable; `what` is --dump-dom or --screenshot=...
// Returns its stdout (the DOM for --dump-dom).
std::string chromium(const std::string& exe, const std::string& dir, const std::string& what, const std::string& file,
                     const std::string& size = "1200,2400") {
  const std::string out = dir + "/chromium.out";
  // --no-sandbox: CI runs tests as root, where Chromium's sandbox refuses to start; a profile of its own in the test's
  // folder; the virtual time budget lets the load (and the checking script) finish before the DOM is printed
  const std::string cmd = "timeout 120 " + exe +
                          " --headless=new --no-sandbox --disable-gpu --no-first-run --user-data-dir=" + dir +
                          "/profile --host-resolver-rules='MAP * ~NOTFOUND' --virtual-time-budget=10000 --window-size=" + size +
                          " " + what + " 'file://" + fs::absolute(file).string() + "' > " + out + " 2> " + dir + "/chromium.err";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << harness::read_text(dir + "/chromium.err");
  return harness::read_text(out);
}

// What a person checks on the page, collected by the browser after the load.
const char* kCheckScript = R"(<script>
addEventListener("load", () => {
  const text = (el) => el.textContent;
  const v = {
    images: [...document.images].map((i) => ({alt: i.alt, width: i.naturalWidth, height: i.naturalHeight, done: i.complete})),
    plots: [...document.querySelectorAll("img.plot")].map((i) => i.dataset.file),
    curves: document.querySelectorAll("img.curve").length,
    columns: [...document.querySelectorAll("#results thead th")].map(text),
    rows: [...document.querySelectorAll("#results tbody tr")].map((tr) => [...tr.cells].map(text)),
    metrics: Object.fromEntries([...document.querySelectorAll("#cells tbody tr")].map((tr) =>
        [tr.dataset.cell, Object.fromEntries([...tr.querySelectorAll("[data-metric]")].map((td) => [td.dataset.metric, text(td)]))])),
    fetched: performance.getEntriesByType("resource").map((e) => e.name),
  };
  const pre = document.createElement("pre");
  pre.id = "verdict";
  pre.textContent = JSON.stringify(v);
  document.body.append(pre);
});
</script>
)";

// The verdict's JSON from a dumped DOM (a text node: & < > are escaped there).
json verdict_of(const std::string& dom) {
  const std::string open = "<pre id=\"verdict\">";
  const size_t a = dom.find(open), b = dom.find("</pre>", a);
  if (a == std::string::npos || b == std::string::npos) return json();
  std::string t = dom.substr(a + open.size(), b - a - open.size()), u;
  for (size_t i = 0; i < t.size(); i++) {
    bool hit = false;
    for (auto [ent, ch] : {std::pair{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&nbsp;", ' '}})
      if (t.compare(i, std::strlen(ent), ent) == 0) u += ch, i += std::strlen(ent) - 1, hit = true;
    if (!hit) u += t[i];
  }
  return json::parse(u);
}

// Width and height from a PNG's IHDR chunk (big-endian, after the 8-byte signature and the chunk's length and type).
std::pair<int, int> png_size(const std::string& bytes) {
  if (bytes.size() < 24 || bytes.compare(1, 3, "PNG") != 0) return {0, 0};
  auto be32 = [&](size_t at) {
    return (int)((unsigned char)bytes[at] << 24 | (unsigned char)bytes[at + 1] << 16 | (unsigned char)bytes[at + 2] << 8 |
                 (unsigned char)bytes[at + 3]);
  };
  return {be32(16), be32(20)};
}

// The miniature sweep: ListOps, a one-layer Transformer, scratch and masked self-pretraining, seeds 0 and 1.
std::string write_preset(const std::string& dir) {
  std::ofstream(dir + "/mini.json") << R"({
    "tasks": ["listops"], "models": ["transformer"], "regimes": ["scratch", "spt-masked"],
    "defaults": {"d_model": 16, "layers": 1, "heads": 2, "batch": 8, "steps": 12, "warmup": 2, "eval_every": 4,
                 "eval_batches": 2, "checkpoint_every": 6, "pretrain_steps": 8, "seq_len": 64, "train_size": 64,
                 "val_size": 16, "test_size": 16}
  })";
  return dir + "/mini.json";
}

struct MiniRun {
  harness::Experiment e = lra::experiment();
  harness::Preset p;
  std::vector<harness::Cell> cells;
  harness::SweepOptions o;
  explicit MiniRun(const std::string& d) {
    p = lra::load_preset(write_preset(d));
    cells = harness::expand_cells(e, p, p.values, {0, 1}, {});
    o.out = d + "/out", o.quiet = true;
  }
};

}  // namespace

TEST(HtmlReport, Base64AndEscaping) {
  // RFC 4648 section 10's vectors
  const std::vector<std::pair<std::string, std::string>> v = {{"", ""},
                                                              {"f", "Zg=="},
                                                              {"fo", "Zm8="},
                                                              {"foo", "Zm9v"},
                                                              {"foob", "Zm9vYg=="},
                                                              {"fooba", "Zm9vYmE="},
                                                              {"foobar", "Zm9vYmFy"}};
  for (auto& [in, out] : v) EXPECT_EQ(harness::base64(in), out) << in;
  EXPECT_EQ(harness::base64(std::string("\xff\x00\x80", 3)), "/wCA");
  EXPECT_EQ(harness::html_escape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;");
}

TEST(HtmlReport, WrittenAfterEachCellSelfContained) {
  const std::string d = dl::test::app_temp_dir("html_report_cells");
  MiniRun r(d);
  harness::run_cells(r.e, r.p, {r.cells.at(0)}, r.o);  // one cell finished: the page shows it and only it
  std::string page = harness::read_text(r.o.out + "/report.html");
  EXPECT_NE(page.find("id=\"cell-" + r.cells[0].name() + "\""), std::string::npos);
  EXPECT_EQ(page.find("id=\"cell-" + r.cells[1].name() + "\""), std::string::npos);
  harness::SweepOptions more = r.o;
  more.resume = true;
  harness::run_cells(r.e, r.p, r.cells, more);
  page = harness::read_text(r.o.out + "/report.html");
  for (auto& c : r.cells) EXPECT_NE(page.find("id=\"cell-" + c.name() + "\""), std::string::npos) << c.name();
  // nothing the page could fetch: every src a data URI, every link inside the page, no script, style sheet or url()
  for (const std::string bad : {"src=\"http", "src=\"file", "src=\"/", "href=\"http", "<script", "<link", "url(", "@import"})
    EXPECT_EQ(page.find(bad), std::string::npos) << bad;
  size_t at = 0, srcs = 0;
  while ((at = page.find(" src=\"", at)) != std::string::npos) {
    EXPECT_EQ(page.compare(at + 6, 5, "data:"), 0) << page.substr(at, 80);
    at++, srcs++;
  }
  EXPECT_GE(srcs, 3u + r.cells.size());  // three plots (curves, accuracy bars, SPT gain) and a curve per cell
  EXPECT_NE(page.find("cells ran at " + harness::source_commit()), std::string::npos);  // recorded by each cell
  EXPECT_NE(page.find(harness::machine_description()), std::string::npos);
}

TEST(HtmlReport, OpensInABrowserWithEveryRowPlotAndNumber) {
  const std::string exe = find_chromium();
  if (exe.empty()) GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs Debian's chromium)";
  const std::string d = dl::test::app_temp_dir("html_report_browser");
  MiniRun r(d);
  harness::run_cells(r.e, r.p, r.cells, r.o);
  const std::string page = harness::read_text(r.o.out + "/report.html");
  std::string checked = page;
  checked.insert(checked.rfind("</body>"), kCheckScript);
  harness::write_text_atomic(d + "/checked.html", checked);
  const json v = verdict_of(chromium(exe, d, "--dump-dom", d + "/checked.html"));
  ASSERT_TRUE(v.is_object()) << "no verdict in the DOM: the page did not load, or the check script did not run";

  // every image drawn: loaded, with a size
  for (auto& im : v["images"]) EXPECT_TRUE(im["done"].get<bool>() && im["width"] > 0 && im["height"] > 0) << im.dump();
  EXPECT_TRUE(v["fetched"].empty()) << "the page fetched: " << v["fetched"].dump();
  // every plot in <out>/plots on the page, and a curve per cell
  std::vector<std::string> pngs, shown = v["plots"];
  for (auto& f : fs::directory_iterator(r.o.out + "/plots"))
    if (f.path().extension() == ".png") pngs.push_back("plots/" + f.path().filename().string());
  std::sort(pngs.begin(), pngs.end()), std::sort(shown.begin(), shown.end());
  EXPECT_EQ(shown, pngs);
  EXPECT_EQ(pngs.size(), 3u);  // plots/listops (curves), test_accuracy, spt_gain
  EXPECT_EQ(v["curves"], r.cells.size());
  EXPECT_EQ(v["images"].size(), pngs.size() + r.cells.size());

  // the numbers: the results table as results.json holds it, and every cell's metrics as results.json writes them
  const json res = json::parse(harness::read_text(r.o.out + "/results.json"));
  EXPECT_EQ(v["columns"], res["table"]["columns"]);
  EXPECT_EQ(v["rows"], res["table"]["rows"]);
  EXPECT_EQ(v["rows"].size(), 2u);
  ASSERT_EQ(v["metrics"].size(), res["cells"].size());
  for (auto& c : res["cells"]) {
    const json& shown_m = v["metrics"][c["cell"].get<std::string>()];
    EXPECT_EQ(shown_m.size(), c["metrics"].size()) << c["cell"];
    for (auto& [k, x] : c["metrics"].items()) EXPECT_EQ(shown_m.value(k, "missing"), x.dump()) << c["cell"] << " " << k;
  }

  // the page itself (no checking script) drawn: a screenshot of the window's size, with the plots' pixels in it
  chromium(exe, d, "--screenshot=" + d + "/shot.png", r.o.out + "/report.html");
  const std::string shot = harness::read_text(d + "/shot.png");
  EXPECT_EQ(png_size(shot), (std::pair<int, int>{1200, 2400}));
  EXPECT_GT(shot.size(), 50000u) << "a near-empty screenshot: the page did not draw its tables and plots";
}

// apps/explain/explain.cpp - see explain.h. Shape letters: NH heads, T query positions, S key positions, Cc kernel
// channels, H channels, L length.
#include "explain.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <numbers>
#include <sstream>

#include "apps/common/report.h"
#include "apps/common/results.h"
#include "subject.h"

namespace explain {

using namespace dl;
namespace harness = dl::harness;
namespace fs = std::filesystem;

// Every module of the tree with its dotted path, preorder: explain asks each one what it can show (nn/module.h's
// hooks) and never names a layer type.
static void walk(nn::Module& m, const std::string& path, const std::function<void(const std::string&, nn::Module&)>& f) {
  f(path, m);
  for (auto& [n, c] : m.named_children()) walk(*c, path.empty() ? n : path + "." + n, f);
}

// ---- what the forward pass records: every module that answers record_attention / record_conv_taps gets a slot its
// forward appends to, by path, in tree order ----
namespace {
struct Recorders {
  std::deque<std::pair<std::string, std::vector<Var>>> attention, conv_taps;  // a deque: the slots never move
  nn::Module* root = nullptr;

  explicit Recorders(nn::Module& m) : root(&m) {
    walk(m, "", [&](const std::string& p, nn::Module& x) {
      attention.push_back({p, {}});
      if (!x.record_attention(&attention.back().second)) attention.pop_back();
      conv_taps.push_back({p, {}});
      if (!x.record_conv_taps(&conv_taps.back().second)) conv_taps.pop_back();
    });
  }
  ~Recorders() {  // the slots die here: no layer may keep writing to them
    walk(*root, "", [](const std::string&, nn::Module& x) { x.record_attention(nullptr), x.record_conv_taps(nullptr); });
  }
  // A layer run more than once per forward (the two towers of a retrieval model) gives one map per run.
  std::vector<NamedWeights> attention_weights(const Subject& s) const {
    std::vector<NamedWeights> out;
    for (auto& [name, ws] : attention)
      for (size_t i = 0; i < ws.size(); i++) {
        out.push_back({ws.size() == 1 ? name : name + " (sequence " + std::string(1, char('a' + i)) + ")", ws[i]});
        if (s.mark_axes) s.mark_axes(out.back());
      }
    return out;
  }
};
}  // namespace

// ---- 1. the module tree with parameter counts ----
static void count_modules(const nn::Module& m, const std::string& path, int depth, std::vector<ModuleCount>& out) {
  out.push_back({path, m.type_name(), depth, m.num_parameters(), m.num_parameters(true)});
  for (auto& [n, c] : m.named_children()) count_modules(*c, path.empty() ? n : path + "." + n, depth + 1, out);
}

static std::string thousands(int64_t n) {
  std::string s = std::to_string(n);
  for (int i = (int)s.size() - 3; i > 0; i -= 3) s.insert((size_t)i, ",");
  return s;
}

// The module's own parameters (not its children's) as "name [shape]".
static std::string own_parameters(const nn::Module& m) {
  std::string s;
  for (auto& [n, p] : m.named_parameters())
    if (n.find('.') == std::string::npos) s += (s.empty() ? "" : ", ") + n + " " + shape_str(p.shape());
  return s;
}

static std::string module_tree(const nn::Module& root, const std::vector<ModuleCount>& counts, int max_depth) {
  std::map<std::string, const nn::Module*> by_path;
  std::function<void(const nn::Module&, const std::string&)> index = [&](const nn::Module& m, const std::string& p) {
    by_path[p] = &m;
    for (auto& [n, c] : m.named_children()) index(*c, p.empty() ? n : p + "." + n);
  };
  index(root, "");
  std::ostringstream os;
  for (const ModuleCount& c : counts) {
    if (c.depth > max_depth) continue;
    const nn::Module& m = *by_path.at(c.path);
    std::string name = c.path.empty() ? "(model)" : c.path.substr(c.path.rfind('.') == std::string::npos ? 0 : c.path.rfind('.') + 1);
    std::ostringstream left;
    left << std::string(2 * c.depth, ' ') << name << "  " << c.type;
    if (!m.extra_repr().empty()) left << "(" << m.extra_repr() << ")";
    os << std::left << std::setw(58) << left.str() << std::right << std::setw(12) << thousands(c.params);
    if (c.trainable != c.params) os << "  (" << thousands(c.trainable) << " trainable)";
    const std::string own = own_parameters(m);
    if (!own.empty()) os << "   " << own;
    if (c.depth == max_depth && !m.named_children().empty()) os << "   (+ submodules, --depth)";
    os << "\n";
  }
  return os.str();
}

// ---- 2. the op graph ----
// graph_string prints "#id op <- #inputs" per node, root first; the op counts are read back from its lines.
static std::string graph_summary(const std::string& graph, int max_lines, int64_t* nodes) {
  std::map<std::string, int> ops;
  std::istringstream in(graph);
  std::ostringstream shown;
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    if (max_lines <= 0 || n < max_lines) shown << "  " << line << "\n";
    std::istringstream f(line);
    std::string id, op;
    f >> id >> op;
    ops[op]++, n++;
  }
  *nodes = n;
  std::ostringstream os;
  os << shown.str();
  if (max_lines > 0 && n > max_lines) os << "  ... " << n - max_lines << " more nodes (--graph-lines 0 prints all)\n";
  os << "op counts:";
  for (auto& [op, k] : ops) os << " " << op << " x" << k;
  os << "\n";
  return os.str();
}

// ---- plots: <dir>/<name>.{dat,gp,png}; the script names its files relative to dir, so the folder can move ----
static void write_plot(const std::string& dir, const std::string& name, const std::string& dat, const std::string& gp,
                       bool run, const std::string& size = "640,480") {
  harness::write_text_atomic(dir + "/" + name + ".dat", dat);
  harness::write_text_atomic(dir + "/" + name + ".gp", "set terminal pngcairo size " + size + " noenhanced\nset output '" +
                                                           name + ".png'\n" + gp);
  if (!run || !harness::have_gnuplot()) return;
  const std::string cd = "cd '" + dir + "' && ";
  if (std::system((cd + "gnuplot '" + name + ".gp' 2>/dev/null").c_str()) != 0)  // gnuplot-nox: no cairo
    (void)std::system((cd + "sed -i 's/pngcairo/png/' '" + name + ".gp' && gnuplot '" + name + ".gp' 2>/dev/null").c_str());
}

static std::string file_safe(std::string s) {
  for (char& ch : s)
    if (!std::isalnum((unsigned char)ch)) ch = '_';
  return s;
}

// ---- 3. attention: one heat map per head ----
// gnuplot tics naming each position: ("[MAX" 0, "7" 1, ...), single-quoted (a quote doubled)
static std::string tics(const std::vector<std::string>& labels, int64_t n) {
  std::string t = "(";
  for (int64_t i = 0; i < n; i++) {
    std::string q;
    for (char ch : labels[i]) q += ch == '\'' ? std::string("''") : ch == ' ' ? std::string("_") : std::string(1, ch);
    t += (i ? ", '" : "'") + q + "' " + std::to_string(i);
  }
  return t + ")";
}

// The rows of a map are its queries, the columns its keys; each axis is the input's positions (cut to its real length)
// or a seq2seq decoder's (target_labels).
static std::vector<HeadMap> attention_maps(const std::vector<NamedWeights>& att, const Subject& s, const std::string& dir,
                                           bool plots) {
  std::vector<HeadMap> out;
  for (const NamedWeights& a : att) {
    Tensor w = a.w.data().to(DType::f64).contiguous();  // (1, NH, T, S)
    const std::vector<std::string>& qlabels = a.target_queries ? s.target_labels : s.labels;
    const std::vector<std::string>& klabels = a.target_keys ? s.target_labels : s.labels;
    const int64_t NH = w.size(1), T = a.target_queries ? w.size(2) : std::min(w.size(2), s.real_len),
                  S = a.target_keys ? w.size(3) : std::min(w.size(3), s.real_len);
    const std::string& cell = s.cell;
    for (int64_t h = 0; h < NH; h++) {
      HeadMap m;
      m.layer = a.layer, m.head = (int)h, m.cross = a.target_queries != a.target_keys;
      m.w.assign(T, std::vector<double>(S));
      std::ostringstream d;
      for (int64_t q = 0; q < T; q++) {
        for (int64_t k = 0; k < S; k++) {
          m.w[q][k] = w.data<double>()[((h * w.size(2)) + q) * w.size(3) + k];
          d << (k ? " " : "") << m.w[q][k];
          // cross-attention: a decoder position and an input position are not on one axis, so the mean input
          // position read instead of a distance
          m.mean_distance += m.w[q][k] * (double)(m.cross ? k : std::abs(q - k)) / (double)T;
        }
        m.on_first += m.w[q][0] / (double)T;
        if (q < S) m.on_self += m.w[q][q] / (double)T;
        d << "\n";
      }
      const std::string name = "attn_" + file_safe(a.layer) + "_head" + std::to_string(h);
      m.png = name + ".png";
      std::ostringstream gp;
      gp << "set title '" << cell << ": " << a.layer << ", head " << h << "'\n"
         << "set xlabel '" << (a.target_keys ? "decoder " : m.cross ? "input " : "") << "key position (read from)'\n"
         << "set ylabel '" << (a.target_queries ? "decoder " : "") << "query position (reading)'\n"
         << "set yrange [" << T - 0.5 << ":-0.5]\nset xrange [-0.5:" << S - 0.5 << "]\nset cbrange [0:*]\n"
         << "set cblabel 'attention weight (each row sums to 1)'\nset palette grey negative\n";
      const bool named = (int64_t)klabels.size() >= S && (int64_t)qlabels.size() >= T && std::max(T, S) <= 96;
      if (named)  // name the positions
        gp << "set xtics " << tics(klabels, S) << " rotate by 90 font ',8'\nset ytics " << tics(qlabels, T) << " font ',8'\n";
      gp << "plot '" << name << ".dat' matrix with image notitle\n";
      write_plot(dir, name, d.str(), gp.str(), plots, named && std::max(T, S) > 24 ? "900,820" : "640,480");
      out.push_back(std::move(m));
    }
  }
  return out;
}

// ---- 4. state-space kernels ----
std::vector<double> frequency_response(const std::vector<double>& k) {
  // Khat[j] = sum_l K[l] exp(-2 pi i j l / L): the gain of the convolution y = K * u on a sinusoid of j / L cycles
  // per step (for a kernel shorter than the input; the FFT convolution pads to 2L, so no wrap-around)
  const size_t L = k.size();
  std::vector<double> mag(L / 2 + 1);
  for (size_t j = 0; j < mag.size(); j++) {
    double re = 0, im = 0;
    for (size_t l = 0; l < L; l++) {
      const double a = -2 * std::numbers::pi * (double)j * (double)l / (double)L;
      re += k[l] * std::cos(a), im += k[l] * std::sin(a);
    }
    mag[j] = std::hypot(re, im);
  }
  return mag;
}

// The channels to plot: with a dt per channel, from the smallest dt (longest memory) to the largest, evenly through
// the sorted order, so the plot shows the layer's range of memories; otherwise the first n.
static std::vector<int> pick_channels(const std::vector<double>& dt, int64_t H, int n) {
  std::vector<int> order(H), out;
  for (int64_t h = 0; h < H; h++) order[h] = (int)h;
  if ((int64_t)dt.size() != H || n >= H) {
    order.resize(std::min<int64_t>(n, H));
    return order;
  }
  std::sort(order.begin(), order.end(), [&](int a, int b) { return dt[a] < dt[b]; });
  for (int i = 0; i < n; i++) out.push_back(order[n == 1 ? 0 : (int64_t)std::llround((double)i * (H - 1) / (n - 1))]);
  return out;
}

// The kernels of a few channels (from the smallest dt to the largest, where dt is per channel) and their frequency
// responses, as <dir>/kernel_<layer> and freq_<layer>.
static void plot_ssm_kernel(KernelInfo& k, const nn::SSMKernel& sk, int n_channels, const std::string& dir,
                            const std::string& cell, bool plots) {
  const std::string& path = k.layer;
  const int64_t H = k.K.size(1), L = k.K.size(2);
  const std::vector<double> dt = sk.dt_per_channel ? sk.dt : std::vector<double>();
  k.channels = pick_channels(dt, H, n_channels);
  auto title = [&](int h) {
    std::ostringstream t;
    t << "channel " << h;
    if ((int64_t)dt.size() == H) t << ", dt " << std::setprecision(2) << dt[h];
    return t.str();
  };
  Tensor K = k.K.to(DType::f64).contiguous();
  std::ostringstream kd, fd, kp, fp;
  const std::string kname = "kernel_" + file_safe(path), fname = "freq_" + file_safe(path);
  for (size_t i = 0; i < k.channels.size(); i++) {
    std::vector<double> v(L);
    for (int64_t l = 0; l < L; l++) v[l] = K.data<double>()[k.channels[i] * L + l];  // kernel channel 0 (forward)
    std::vector<double> f = frequency_response(v);
    kd << "# channel " << k.channels[i] << "\n";
    for (int64_t l = 0; l < L; l++) kd << l << " " << v[l] << "\n";
    fd << "# channel " << k.channels[i] << "\n";
    for (size_t j = 0; j < f.size(); j++) fd << (double)j / (double)L << " " << f[j] << "\n";
    kd << "\n\n", fd << "\n\n";
    kp << (i ? ", " : "plot ") << "'" << kname << ".dat' index " << i << " using 1:2 with lines title '" << title(k.channels[i])
       << "'";
    fp << (i ? ", " : "plot ") << "'" << fname << ".dat' index " << i << " using 1:2 with lines title '" << title(k.channels[i])
       << "'";
  }
  k.kernel_png = kname + ".png", k.freq_png = fname + ".png";
  write_plot(dir, kname, kd.str(),
             "set title '" + cell + ": " + path + " (" + k.type +
                 ") kernel K[l]'\nset xlabel 'lag l (steps back)'\n"
                 "set ylabel 'K[l]: weight of the input l steps ago'\nset grid\n" +
                 kp.str() + "\n",
             plots);
  write_plot(dir, fname, fd.str(),
             "set title '" + cell + ": " + path +
                 " frequency response |DFT(K)|'\nset xlabel 'frequency (cycles per step)'\n"
                 "set ylabel 'gain |K(f)|'\nset logscale y\nset grid\n" +
                 fp.str() + "\n",
             plots);
}

static std::vector<KernelInfo> ssm_kernels(nn::Module& root, int64_t L, int n_channels, const std::string& dir,
                                           const std::string& cell, bool plots) {
  std::vector<KernelInfo> out;
  walk(root, "", [&](const std::string& path, nn::Module& m) {
    nn::SSMKernel sk = m.ssm_kernel(L);
    if (!sk.K.defined()) return;
    KernelInfo k;
    k.layer = path, k.type = m.type_name(), k.K = sk.K, k.dt_source = sk.dt_source;  // K (Cc, H, L)
    if (!sk.dt.empty())
      k.dt_min = *std::min_element(sk.dt.begin(), sk.dt.end()), k.dt_max = *std::max_element(sk.dt.begin(), sk.dt.end());
    plot_ssm_kernel(k, sk, n_channels, dir, cell, plots);
    out.push_back(std::move(k));
  });
  return out;
}

// ---- 5. convolution kernels ----
// Every module that answers conv_taps (nn/inspect.h ConvTaps): y[t] = sum_k w[k] x[t + offset_k], so a tap at a
// negative offset reads the past. Fixed taps are one curve per row; taps predicted from the input were recorded
// during the forward pass (record_conv_taps) and are one heat map per row (position x tap).

// The weighted mean offset of a row, weighted by |w|: where the taps read on average.
static double centre_of(const std::vector<double>& row, const std::vector<int64_t>& off) {
  double num = 0, den = 0;
  for (size_t k = 0; k < row.size(); k++) num += std::abs(row[k]) * (double)off[k], den += std::abs(row[k]);
  return den > 0 ? num / den : 0;
}

static std::vector<std::vector<double>> rows_of(const Tensor& t2) {  // (R, K) -> R rows
  Tensor t = t2.to(DType::f64).contiguous();
  std::vector<std::vector<double>> rows(t.size(0), std::vector<double>(t.size(1)));
  for (int64_t r = 0; r < t.size(0); r++)
    for (int64_t k = 0; k < t.size(1); k++) rows[r][k] = t.data<double>()[r * t.size(1) + k];
  return rows;
}

// Fixed taps: the first n_channels rows of a per-channel layer (every head of a per-head one), one curve each.
static void plot_fixed_taps(ConvKernelInfo& c, const nn::ConvTaps& t, int n_channels, const std::string& dir,
                            const std::string& cell, bool plots) {
  const std::string name = "conv_" + file_safe(c.layer);
  const std::vector<std::vector<double>> all = rows_of(t.taps);
  for (size_t r = 0; r < all.size() && (t.row != "channel" || (int)r < n_channels); r++)
    c.rows.push_back(all[r]), c.row_names.push_back(t.row + " " + std::to_string(r));
  std::ostringstream dat, gp;
  for (size_t r = 0; r < c.rows.size(); r++) {
    c.centre.push_back(centre_of(c.rows[r], c.offsets));
    dat << "# " << c.row_names[r] << "\n";
    for (size_t k = 0; k < c.rows[r].size(); k++) dat << c.offsets[k] << " " << c.rows[r][k] << "\n";
    dat << "\n\n";
    gp << (r ? ", " : "plot ") << "'" << name << ".dat' index " << r << " using 1:2 with linespoints title '" << c.row_names[r]
       << "'";
  }
  write_plot(dir, name, dat.str(),
             "set title '" + cell + ": " + c.layer + " (" + c.type + (c.causal ? ", causal" : "") +
                 ")'\n"
                 "set xlabel 'tap offset (positions; negative = the past)'\nset ylabel '" +
                 t.meaning + "'\nset grid\n" + gp.str() + "\n",
             plots);
  c.pngs.push_back(name + ".png");
}

// Predicted taps w (1, L, R, K) of this input: one heat map per row (head), row t = position t's kernel.
static void plot_predicted_taps(ConvKernelInfo& c, const nn::ConvTaps& t, const Var& recorded, const std::string& dir,
                                const std::string& cell, bool plots) {
  const std::string name = "conv_" + file_safe(c.layer);
  Tensor w = recorded.data().to(DType::f64).contiguous();  // (1, L, R, K)
  const int64_t L = w.size(1), R = w.size(2), K = w.size(3);
  c.maps.assign(R, std::vector<std::vector<double>>(L, std::vector<double>(K)));
  for (int64_t h = 0; h < R; h++) {
    double centre = 0;
    std::ostringstream dat, gp;
    for (int64_t p = 0; p < L; p++) {
      for (int64_t k = 0; k < K; k++) {
        c.maps[h][p][k] = w.data<double>()[((p * R) + h) * K + k];
        dat << (k ? " " : "") << c.maps[h][p][k];
      }
      dat << "\n";
      centre += centre_of(c.maps[h][p], c.offsets) / (double)L;
    }
    c.centre.push_back(centre);
    const std::string png = name + "_" + t.row + std::to_string(h);
    gp << "set title '" << cell << ": " << c.layer << " (" << c.type << "), " << t.row << " " << h << "'\n"
       << "set xlabel 'tap offset (positions; negative = the past)'\nset ylabel 'position t (its own kernel)'\n"
       << "set yrange [" << L - 0.5 << ":-0.5]\nset xrange [-0.5:" << K - 0.5 << "]\nset cbrange [0:*]\n"
       << "set xtics (";
    for (int64_t k = 0; k < K; k++) gp << (k ? ", " : "") << "'" << c.offsets[k] << "' " << k;
    gp << ")\nset cblabel '" << t.meaning << "'\nset palette grey negative\n"
       << "plot '" << png << ".dat' matrix with image notitle\n";
    write_plot(dir, png, dat.str(), gp.str(), plots);
    c.pngs.push_back(png + ".png");
  }
}

// `recorded`: the predicted taps each layer recorded during the forward pass, by path.
static std::vector<ConvKernelInfo> conv_kernels(nn::Module& root, const std::map<std::string, Var>& recorded, int n_channels,
                                                const std::string& dir, const std::string& cell, bool plots) {
  std::vector<ConvKernelInfo> out;
  walk(root, "", [&](const std::string& path, nn::Module& m) {
    const nn::ConvTaps t = m.conv_taps();
    if (!t.defined()) return;
    ConvKernelInfo c;
    c.layer = path, c.type = t.kind, c.kernel_size = t.kernel_size, c.dilation = t.dilation, c.causal = t.causal;
    c.offsets = t.offsets;
    if (t.taps.defined()) {
      plot_fixed_taps(c, t, n_channels, dir, cell, plots);
    } else {
      auto it = recorded.find(path);
      if (it == recorded.end()) return;  // its forward did not run on this input
      plot_predicted_taps(c, t, it->second, dir, cell, plots);
    }
    out.push_back(std::move(c));
  });
  return out;
}

// ---- 6. explain.md ----
static std::string markdown(const Report& r, const std::string& tree, const std::string& graph_text) {
  std::ostringstream md;
  md << "# explain: " << r.cell << " (" << r.app << ")\n\n"
     << "Model file `" << r.model_file << "`; input: " << r.input << ".\n\n"
     << "## Parameters per module\n\nEach line is a module of the tree (indented under its parent), its type, the "
        "parameters of it and everything below it, and its own tensors with their shapes. A parent's count is the sum of "
        "its children's and its own. Total: **" << thousands(r.total_params) << "** parameters.\n\n```\n" << tree << "```\n\n"
     << "## Op graph of one forward pass\n\nOne line per autograd node, the output first: `#id op <- #inputs`; "
        "a parameter enters through an AccumulateGrad node that names it and its shape. Read it bottom-up to follow "
        "the computation from the weights to the output. " << r.graph_nodes << " nodes.\n\n```\n" << graph_text << "```\n\n";
  if (!r.heads.empty()) {
    md << "## Attention maps\n\nOne heat map per head: row q is the softmax over keys of query position q, so each row "
          "sums to 1; a dark cell (q, k) means position q reads a lot from position k. A dark diagonal = the head looks "
          "at the position itself, a dark band just left of it = at its neighbours, a dark first column = at the start "
          "(often a \"no-op\" sink), an even grey row = it averages everything. A causal model's maps are zero above the "
          "diagonal. In a seq2seq model the decoder's rows are its input positions (start, then the target shifted right); "
          "its self-attention is causal and its cross-attention (marked so) reads the input's positions.\n\n";
    md << "| layer | head | mean distance read (positions) | weight on position 0 | weight on itself |\n|---|---:|---:|---:|---:|\n";
    for (const HeadMap& h : r.heads) {  // cross-attention: the mean input position read; "itself" has no meaning
      md << "| " << h.layer << (h.cross ? " (cross: decoder reads input)" : "") << " | " << h.head << " | " << std::fixed
         << std::setprecision(1) << h.mean_distance << (h.cross ? " (mean input position)" : "") << " | "
         << std::setprecision(2) << h.on_first << " | ";
      if (h.cross) md << "- |\n";
      else md << h.on_self << " |\n";
    }
    md << std::defaultfloat << std::setprecision(6) << "\n";
    std::string layer;
    for (const HeadMap& h : r.heads) {
      if (h.layer != layer) md << (layer.empty() ? "" : "\n\n") << "**" << h.layer << "**\n\n", layer = h.layer;
      md << "![" << h.layer << " head " << h.head << "](" << h.png << ") ";
    }
    md << "\n\n";
  }
  if (!r.kernels.empty()) {
    md << "## State-space kernels\n\nAn S4 / S4D / DLR layer computes y = K * u + D u per channel: K[l] is how much "
          "the input l steps ago adds to the output now (the layer's impulse response). A kernel that decays within a "
          "few steps is a short memory; one that stays large for hundreds of steps is a long memory; oscillation means "
          "the layer responds to a rhythm. The frequency response |DFT(K)| says which frequencies of the input pass: "
          "large at 0 = a smoother (low-pass), large at high frequencies = an edge or change detector. dt sets the "
          "time scale: a channel with step dt remembers roughly 1/dt steps (small dt = long memory).\n\n";
    for (const KernelInfo& k : r.kernels) {
      md << "**" << k.layer << "** (" << k.type << ", " << k.K.size(1) << " channels";
      if (k.K.size(0) == 2) md << ", bidirectional: the plots show the forward kernel";
      md << "): dt in [" << k.dt_min << ", " << k.dt_max << "] (" << k.dt_source << "), so memories of about "
         << std::llround(1 / k.dt_max) << " to " << std::llround(1 / k.dt_min) << " steps.\n\n"
         << "![kernel](" << k.kernel_png << ") ![frequency response](" << k.freq_png << ")\n\n";
    }
  }
  if (!r.convs.empty()) {
    md << "## Convolution kernels\n\nA convolution mixer computes y[t] = sum_k w[k] x[t + offset_k]: the plots show the "
          "weight each tap offset gets (negative offsets read the past; a causal layer, as in a decoder, has only offsets "
          "<= 0). A **lightweight** layer has one softmax kernel per head, shared by the head's channels: like an attention "
          "row restricted to a window, but the same at every position and for every input. A **dynamic** layer predicts "
          "such a kernel at every position from the input (one heat map per head: row t is position t's kernel, each row "
          "sums to 1), so it can look further back where the input asks for it. A **dilated** layer's depthwise taps are "
          "d positions apart (raw weights of any sign; a bias and the pointwise mix follow), so a stack of growing "
          "dilations covers a long window with few taps. Mean offset = the |w|-weighted mean of the offsets.\n\n";
    md << "| layer | kind | taps | offsets | mean offset read (per head / channel) |\n|---|---|---:|---|---|\n";
    for (const ConvKernelInfo& c : r.convs) {
      md << "| " << c.layer << " | " << c.type << (c.causal ? ", causal" : "") << " | " << c.kernel_size << " | "
         << c.offsets.front() << " .. " << c.offsets.back() << (c.dilation > 1 ? " (step " + std::to_string(c.dilation) + ")" : "")
         << " |";
      for (size_t i = 0; i < c.centre.size(); i++) md << (i ? ", " : " ") << std::fixed << std::setprecision(2) << c.centre[i];
      md << std::defaultfloat << " |\n";
    }
    md << "\n";
    for (const ConvKernelInfo& c : r.convs) {
      md << "**" << c.layer << "** ";
      for (const std::string& p : c.pngs) md << "![" << c.layer << "](" << p << ") ";
      md << "\n\n";
    }
  }
  if (r.heads.empty() && r.kernels.empty() && r.convs.empty())
    md << "This model has no attention, state-space or convolution layer to picture (its mixers are of another kind).\n";
  return md.str();
}

Report explain_model_file(const std::string& model_file, const Options& o) {
  Subject s = open_subject(model_file, o);
  std::string dir = o.out.empty() ? (fs::path(model_file).parent_path() / "explain").string() : o.out;
  return explain_subject(s, o, model_file, dir.empty() ? "explain" : dir);
}

Report explain_subject(Subject& s, const Options& o, const std::string& model_file, const std::string& out_dir) {
  Report r;
  r.model_file = model_file, r.app = s.app, r.cell = s.cell, r.input = s.input, r.out_dir = out_dir;
  fs::create_directories(r.out_dir);
  std::ostringstream out;
  out << r.cell << " (written by " << r.app << "), input: " << r.input << "\n\n";

  count_modules(*s.model, "", 0, r.modules);
  r.total_params = s.model->num_parameters();
  const std::string tree = module_tree(*s.model, r.modules, o.depth);
  out << "== parameters per module ==\n" << tree << "total " << thousands(r.total_params) << " parameters\n\n";

  // the graph exists only where a parameter requires grad: unfreeze all for this pass (frozen arms of FPT); each
  // parameter is named by its dotted path, so the graph's leaves say which weight they are
  s.model->set_requires_grad([](const std::string&) { return true; }, true);
  for (auto& [n, p] : s.model->named_parameters()) p.set_name(n);
  std::vector<NamedWeights> att;
  std::map<std::string, Var> predicted;  // the convolution taps predicted from this input, by layer path
  Var y;
  {
    Recorders rec(*s.model);
    y = s.run();
    att = rec.attention_weights(s);
    for (auto& [path, ws] : rec.conv_taps)
      if (!ws.empty()) predicted[path] = ws.front();
  }
  r.graph = graph_string(y);
  const std::string graph_text = graph_summary(r.graph, o.graph_lines, &r.graph_nodes);
  out << "== op graph of one forward pass (" << r.graph_nodes << " nodes; output " << shape_str(y.shape()) << ") ==\n"
      << graph_text << "\n";

  r.heads = attention_maps(att, s, r.out_dir, o.plots);
  if (!s.labels.empty()) {
    std::string l;
    for (size_t i = 0; i < s.labels.size() && (int64_t)i < s.real_len; i++) l += (i ? " " : "") + std::to_string(i) + ":" + s.labels[i];
    r.input += "; positions " + l;
  }
  out << "== attention ==\n" << att.size() << " attention layers, " << r.heads.size() << " head maps";
  if (!att.empty()) out << " (" << r.heads.front().w.size() << " x " << r.heads.front().w.front().size() << ")";
  out << "\n";
  for (const HeadMap& h : r.heads) {
    out << "  " << h.layer << " head " << h.head << ": reads " << std::fixed << std::setprecision(1) << h.mean_distance;
    if (h.cross)
      out << " = the input position it reads on average (cross-attention), " << std::setprecision(2) << h.on_first
          << " of its weight on input position 0\n";
    else
      out << " positions away on average, " << std::setprecision(2) << h.on_first << " of its weight on position 0, "
          << h.on_self << " on itself\n";
    out << std::defaultfloat;
  }
  {
    NoGradGuard ng;
    r.kernels = ssm_kernels(*s.model, s.length, o.kernel_channels, r.out_dir, r.cell, o.plots);
  }
  {
    NoGradGuard ng;
    r.convs = conv_kernels(*s.model, predicted, o.kernel_channels, r.out_dir, r.cell, o.plots);
  }
  out << "== state-space kernels ==\n";
  for (const KernelInfo& k : r.kernels)
    out << k.layer << " (" << k.type << "): K " << shape_str(k.K.shape()) << ", dt in [" << k.dt_min << ", " << k.dt_max
        << "] (" << k.dt_source << ")\n";
  if (r.kernels.empty()) out << "none\n";
  out << "== convolution kernels ==\n";
  for (const ConvKernelInfo& c : r.convs) {
    out << c.layer << " (" << c.type << (c.causal ? ", causal" : "") << "): K " << c.kernel_size << ", offsets "
        << c.offsets.front() << " .. " << c.offsets.back() << ", mean offset read";
    for (size_t i = 0; i < c.centre.size(); i++)
      out << (i ? ", " : " ") << (c.maps.empty() ? c.row_names[i] : "head " + std::to_string(i)) << " " << std::fixed
          << std::setprecision(2) << c.centre[i] << std::defaultfloat;
    out << "\n";
  }
  if (r.convs.empty()) out << "none\n";
  harness::write_text_atomic(r.out_dir + "/explain.md", markdown(r, tree, graph_text));
  out << "\nwrote " << r.out_dir << "/explain.md\n";
  r.text = out.str();
  return r;
}

}  // namespace explain

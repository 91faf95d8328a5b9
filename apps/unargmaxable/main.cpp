// apps/unargmaxable - report the classes of a softmax head that no input can make the argmax (unargmaxable.h).
//
//   unargmaxable --file model.safetensors --weight lm_head.weight [--bias NAME] [--transform none|unit_norm|nn_bias]
//                [--patience 2500] [--box 100] [--exact] [--json OUT]
// A tied LM head is its embedding (GPT-2: transformer.wte.weight; the seq2seq models: shared.weight). Without
// --weight the file's 2-D tensors are listed. Prints the count, the unargmaxable class ids and how each class was
// decided; --json writes every class's verdict, method and ball radius.
#include <CLI/CLI.hpp>
#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/common/results.h"
#include "unargmaxable.h"

using namespace unargmax;

int main(int argc, char** argv) {
  CLI::App app{"unargmaxable: which classes of a softmax head can never be the argmax (Grivas et al. 2022)"};
  std::string file, weight, bias, transform = "none", json_out;
  Options o;
  app.add_option("--file", file, "a safetensors file")->required();
  app.add_option("--weight", weight, "the head's weight (classes, features); empty: list the 2-D tensors");
  app.add_option("--bias", bias, "the head's bias (classes), if it has one");
  app.add_option("--transform", transform, "none, unit_norm (rows scaled to 1, bias dropped) or nn_bias (b = -|w|^2/2)")
      ->capture_default_str();
  app.add_option("--patience", o.patience, "reflection steps per class before the exact LP")->capture_default_str();
  app.add_option("--box", o.box, "inputs are searched in |x_k| <= box")->capture_default_str();
  app.add_flag("--exact", o.exact_all, "run the LP for every class (cross-checks the reflection search)");
  app.add_option("--json", json_out, "write every class's verdict here");
  CLI11_PARSE(app, argc, argv);
  try {
    if (weight.empty()) {
      std::cout << file << ": choose the head with --weight; its 2-D tensors: " << matrices_of(file) << "\n";
      return 0;
    }
    Head h = read_head(file, weight, bias);
    if (transform == "unit_norm") h = unit_norm_rows(h);
    else if (transform == "nn_bias") h = nearest_neighbour_bias(h);
    else if (transform != "none")
      throw std::invalid_argument("--transform " + transform + ": expected none, unit_norm or nn_bias");
    Report r = check_head(h, o);
    std::cout << file << " " << weight << (bias.empty() ? "" : " + " + bias) << " (" << r.C << " classes, " << r.d
              << " features, transform " << transform << "): " << r.unargmaxable.size() << " unargmaxable";
    for (size_t k = 0; k < r.unargmaxable.size() && k < 50; k++) std::cout << (k ? ", " : ": ") << r.unargmaxable[k];
    if (r.unargmaxable.size() > 50) std::cout << ", ...";
    std::cout << "\n  decided by reflection " << r.by_reflect << ", by the exact LP " << r.by_lp << ", in " << r.seconds
              << " s\n";
    if (!json_out.empty()) {
      nlohmann::json j = {{"file", file},
                          {"weight", weight},
                          {"bias", bias},
                          {"transform", transform},
                          {"classes", r.C},
                          {"features", r.d},
                          {"unargmaxable", r.unargmaxable},
                          {"by_reflect", r.by_reflect},
                          {"by_lp", r.by_lp},
                          {"seconds", r.seconds},
                          {"verdicts", nlohmann::json::array()}};
      for (auto& c : r.classes)
        j["verdicts"].push_back({{"argmaxable", c.argmaxable}, {"by", c.decided_by}, {"radius", c.radius}});
      dl::harness::write_text_atomic(json_out, j.dump(1) + "\n");
    }
  } catch (const std::exception& e) {
    std::cerr << "unargmaxable: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

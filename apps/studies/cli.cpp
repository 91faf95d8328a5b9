// apps/studies/cli.cpp - see cli.h.
#include "cli.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace studies {

static std::vector<std::string> items(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) v.push_back(item);
  return v;
}

std::vector<int> parse_ints(const std::string& s, const std::string& flag) {
  std::vector<int> v;
  for (const std::string& item : items(s)) {
    try {
      size_t used = 0;
      v.push_back(std::stoi(item, &used));
      if (used != item.size() || v.back() < 1) throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw CLI::ValidationError(flag, "'" + item + "' in \"" + s + "\" is not a positive integer");
    }
  }
  if (v.empty()) throw CLI::ValidationError(flag, "an empty list");
  return v;
}

std::vector<std::string> parse_names(const std::string& s, const std::string& flag, const std::vector<std::string>& known) {
  std::vector<std::string> v = items(s);
  for (const std::string& item : v)
    if (std::find(known.begin(), known.end(), item) == known.end()) {
      std::string k;
      for (const std::string& n : known) k += (k.empty() ? "" : ", ") + n;
      throw CLI::ValidationError(flag, "'" + item + "' is not one of " + k);
    }
  if (v.empty()) throw CLI::ValidationError(flag, "an empty list");
  return v;
}

std::vector<double> parse_reals(const std::string& s, const std::string& flag, bool allow_zero) {
  std::vector<double> v;
  for (const std::string& item : items(s)) {
    try {
      size_t used = 0;
      v.push_back(std::stod(item, &used));
      if (used != item.size() || !std::isfinite(v.back()) || v.back() < 0 || (!allow_zero && v.back() == 0))
        throw std::invalid_argument(item);
    } catch (const std::exception&) {
      throw CLI::ValidationError(flag, "'" + item + "' in \"" + s + "\" is not a " +
                                           (allow_zero ? "non-negative" : "positive") + " number");
    }
  }
  if (v.empty()) throw CLI::ValidationError(flag, "an empty list");
  return v;
}

}  // namespace studies

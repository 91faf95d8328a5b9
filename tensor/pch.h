// tensor/pch.h - the precompiled header of the libraries dl_core, dl_nn and dl_tasks (CMakeLists.txt, DL_PCH): the
// standard library and nlohmann/json, parsed once per library instead of once per file; apps/common/pch.h and
// tests/common/pch.h add CLI11 and GoogleTest to it. Third-party headers only, so that a project header's change does
// not rebuild it and no file gains a project include it did not write (and tasks/, which depends on nothing of the
// tensor library, sees none of it). Measured on a 2-core Zen 5 (2026-12-07): nn/registry.cpp 3.42 -> 2.05 s,
// nn/ssm/s4.cpp 3.95 -> 2.35 s, tensor/reduce.cpp 2.53 -> 2.03 s.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

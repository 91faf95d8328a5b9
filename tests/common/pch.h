// tests/common/pch.h - the precompiled header of the test executables (CMakeLists.txt, DL_PCH): the standard library,
// GoogleTest and nlohmann/json, parsed once per executable instead of once per file. Third-party headers only, so
// that a project header's change does not rebuild it and no test gains a project include it did not write.
// Measured on a 2-core Zen 5 (2026-12-07): a test file compiles in about half the time (tests/nn/test_layers.cpp
// 2.05 -> 0.86 s, tests/apps/test_unargmaxable.cpp 4.47 -> 2.14 s).
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

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

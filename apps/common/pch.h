// apps/common/pch.h - the precompiled header of the harness, the apps' libraries and their executables
// (CMakeLists.txt, DL_PCH): the standard library, nlohmann/json and CLI11, parsed once for all of them instead of once
// per file. Third-party headers only, so that a project header's change does not rebuild it and no file gains a
// project include it did not write. Measured on a 2-core Zen 5 (2026-12-07): apps/studies/positions.cpp 14.8 -> 12.4 s.
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

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

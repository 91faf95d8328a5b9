// apps/common/pch.h - the precompiled header of the harness, the apps' libraries and their executables
// (CMakeLists.txt, DL_PCH): the libraries' (the standard library and json) and CLI11, parsed once for all of them
// instead of once per file. Measured on a 2-core Zen 5 (2026-12-07): apps/studies/positions.cpp 14.8 -> 12.4 s.
#pragma once

#include "tensor/pch.h"

#include <CLI/CLI.hpp>

// tests/common/pch.h - the precompiled header of the test executables (CMakeLists.txt, DL_PCH): the libraries' (the
// standard library and json) and GoogleTest, parsed once per executable instead of once per file. Measured on a
// 2-core Zen 5 (2026-12-07): a test file compiles in about half the time (tests/nn/test_layers.cpp 2.05 -> 0.86 s,
// tests/apps/test_unargmaxable.cpp 4.47 -> 2.14 s).
#pragma once

#include "tensor/pch.h"

#include <gtest/gtest.h>

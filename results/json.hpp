// JSON text helpers of the command's outputs (--json) and the result record (results/record.hpp).
#pragma once
#include <string>

namespace tcsolve {

// A quoted, escaped JSON string.
std::string json_string(const std::string& s);
// A number with 17 significant digits; null for NaN and Inf.
std::string json_number(double v);

}  // namespace tcsolve

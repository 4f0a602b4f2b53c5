// printf into a std::string (messages, reasons and trace lines in every layer).
#pragma once
#include <string>

namespace tcsolve {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace tcsolve

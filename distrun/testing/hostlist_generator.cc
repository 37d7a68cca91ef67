#include "distrun/testing/hostlist_generator.h"

#include <fmt/format.h>

namespace distrun::testing {

std::string HostlistGenerator::name() {
  static const char* kNames[] = {"n",    "node", "gpu-", "nid",   "rack",
                                 "cn-a", "x_",   "b04-", "login", "c"};
  return kNames[uniform(0, 9)];
}

std::string HostlistGenerator::number(int value, int width) {
  return fmt::format("{:0{}}", value, width);
}

std::string HostlistGenerator::range(int maxSpan) {
  int lo = uniform(0, 1) ? uniform(0, 20) : uniform(0, 120000);
  int width = uniform(0, 2) == 0 ? uniform(1, 7) : 1;
  std::string loText = number(lo, width);
  if (uniform(0, 2) == 0) return loText;
  int hi = lo + uniform(0, uniform(0, 3) == 0 ? maxSpan : maxSpan / 20);
  return loText + "-" + number(hi, uniform(0, 3) == 0 ? uniform(1, 8) : 1);
}

std::string HostlistGenerator::group(int maxSpan) {
  std::string out = "[" + range(maxSpan);
  for (int i = uniform(0, 2); i > 0; --i) out += "," + range(maxSpan);
  return out + "]";
}

std::string HostlistGenerator::token() {
  if (uniform(0, 4) == 0) return name() + std::to_string(uniform(0, 99));
  // Spans stay small when groups multiply, so a list stays a few thousand
  // hosts: the test compares outputs, not capacity.
  int extraGroups = uniform(0, 3) == 0 ? uniform(1, 2) : 0;
  int maxSpan = extraGroups == 0 ? 300 : 8;
  std::string out = name() + group(maxSpan);
  for (int i = extraGroups; i > 0; --i) {
    out += (uniform(0, 1) ? "-" : "_") + name() + group(maxSpan);
  }
  return out;
}

std::string HostlistGenerator::next() {
  static const char* kSeparators[] = {",", ",", ",", " ", ",,", "\t"};
  std::string out = token();
  for (int i = uniform(0, 3); i > 0; --i) {
    out += kSeparators[uniform(0, 5)] + token();
  }
  return out;
}

}  // namespace distrun::testing

#pragma once

// What the Supervisor's tests read from the actions it returns: one home
// for the helpers its test files share.

#include <string>
#include <variant>
#include <vector>

#include "distrun/launch/supervisor.h"

namespace distrun::launch::supervisor_testing {

// One line per action (describe()), in order.
inline std::vector<std::string> names(const Actions& actions) {
  std::vector<std::string> out;
  for (const Action& a : actions) out.push_back(describe(a));
  return out;
}

// The text of the Print actions, in order.
inline std::string printed(const Actions& actions) {
  std::string text;
  for (const Action& a : actions) {
    if (const auto* p = std::get_if<Print>(&a)) text += p->text;
  }
  return text;
}

// The events the PublishEvent actions publish, in order.
inline std::vector<JobEvent> publishedEvents(const Actions& actions) {
  std::vector<JobEvent> events;
  for (const Action& a : actions) {
    if (const auto* p = std::get_if<PublishEvent>(&a)) events.push_back(p->event);
  }
  return events;
}

}  // namespace distrun::launch::supervisor_testing

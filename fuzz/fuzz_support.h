#pragma once
// What every fuzz target shares: the rule for what counts as a finding, a
// check that aborts with a message, and scratch files for parsers that read
// paths. A target throws nothing: a distrun error it was meant to throw is
// an expected outcome; anything else (an EnforceError, which marks a broken
// invariant, another exception, a failed check) aborts, and libFuzzer
// reports the input.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace distrun::fuzz {

// The fuzz input as text.
inline std::string_view asText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Aborts with `what` on stderr unless `ok`: an invariant the target checks.
void check(bool ok, std::string_view what);

// Runs `parse`; a distrun::Error other than EnforceError is expected and
// swallowed; an EnforceError or any other exception aborts, naming it.
// Returns true when `parse` returned normally.
template <class Parse>
bool expectingErrors(Parse&& parse);

// A path in this process's own scratch folder (made on first use, removed
// at exit): `name` under it.
std::string scratchPath(std::string_view name);

// Writes `bytes` to `path`, replacing it; aborts when it cannot.
void writeScratch(const std::string& path, std::string_view bytes);

// Reads the whole file `path`; aborts when it cannot.
std::string readScratch(const std::string& path);

[[noreturn]] void unexpected(std::string_view kind, std::string_view what);

}  // namespace distrun::fuzz

#include "distrun/common/error.h"

namespace distrun::fuzz {

template <class Parse>
bool expectingErrors(Parse&& parse) {
  try {
    parse();
    return true;
  } catch (const EnforceError& e) {
    unexpected("EnforceError (a broken invariant)", e.what());
  } catch (const Error&) {
    return false;
  } catch (const std::exception& e) {
    unexpected("an exception that is no distrun::Error", e.what());
  }
}

}  // namespace distrun::fuzz

// Feeds any bytes to a real rendezvous store over a socket: the store never
// crashes, answers only with well-formed reply frames, closes the
// connection once its client ends it, and still serves a fresh client.
#include "fuzz/fuzz_support.h"
#include "fuzz/store_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string replies = distrun::fuzz::exchangeWithStore(distrun::fuzz::asText(data, size));
  distrun::fuzz::checkReplies(replies);
  distrun::fuzz::checkStoreAnswers();
  return 0;
}

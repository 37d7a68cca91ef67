// Feeds a real rendezvous store sequences of valid-looking frames built
// from the fuzz bytes: a hello with the right token, a wrong one or none,
// then set/get/tryGet/add/compareSet/will with odd keys, values, deltas and
// field counts, now and then an unknown opcode or a frame whose length is
// off. A will left set is carried out when the input's connection closes.
// The store never crashes, answers with well-formed reply frames, and still
// serves a fresh client afterwards.
#include <fuzzer/FuzzedDataProvider.h>

#include <string>
#include <vector>

#include "distrun/rdzv/wire.h"
#include "fuzz/fuzz_support.h"
#include "fuzz/store_harness.h"

namespace {

using distrun::rdzv::Frame;
using distrun::rdzv::Op;

std::string key(FuzzedDataProvider& in) {
  static const char* const kKeys[] = {"a", "b", "fuzz/alive", "rdzv/0", ""};
  if (in.ConsumeBool()) return in.PickValueInArray(kKeys);
  return in.ConsumeRandomLengthString(64);
}

// A delta for kAdd: small, at the edges of a long long, or any text.
std::string delta(FuzzedDataProvider& in) {
  static const char* const kDeltas[] = {
      "1",  "-1", "0", "9223372036854775807", "-9223372036854775808", "99999999999999999999", "+3",
      " 2", "2x", ""};
  switch (in.ConsumeIntegralInRange(0, 2)) {
    case 0:
      return in.PickValueInArray(kDeltas);
    case 1:
      return std::to_string(in.ConsumeIntegral<long long>());
    default:
      return in.ConsumeRandomLengthString(24);
  }
}

// The right token three times in four, a third of those in the key space
// "job" (as a job with an --rdzv-id works). The draw takes no more bytes than
// before key spaces, so older inputs (fuzz/regressions) still decode to the
// same requests; a third of their good hellos now name the space.
Frame hello(FuzzedDataProvider& in) {
  const int draw = in.ConsumeIntegralInRange(0, 3);
  const std::string token(distrun::fuzz::kStoreToken);
  if (draw == 3) return {Op::kHello, {token, "job"}};
  if (draw > 0) return {Op::kHello, {token}};
  return {Op::kHello, {in.ConsumeRandomLengthString(32)}};
}

Frame request(FuzzedDataProvider& in) {
  static const Op kOps[] = {Op::kSet, Op::kGet, Op::kTryGet, Op::kAdd, Op::kHello, Op::kCompareSet};
  Frame frame{in.PickValueInArray(kOps), {key(in)}};
  // A hello after the hello only closes the connection: half of them stand
  // for a will (counter, prefix, value; an empty counter clears it). Drawn
  // this way, the will leaves what older inputs (fuzz/regressions) build as
  // it was, except for the hellos among their requests.
  if (frame.op == Op::kHello && in.ConsumeBool()) {
    frame.op = Op::kWill;
    frame.fields.push_back(key(in));
    frame.fields.push_back(in.ConsumeRandomLengthString(256));
  }
  if (frame.op == Op::kSet) frame.fields.push_back(in.ConsumeRandomLengthString(256));
  if (frame.op == Op::kAdd) frame.fields.push_back(delta(in));
  if (frame.op == Op::kCompareSet) {
    frame.fields.push_back(in.ConsumeRandomLengthString(16));  // expected
    frame.fields.push_back(in.ConsumeRandomLengthString(16));  // desired
  }
  if (in.ConsumeIntegralInRange(0, 15) == 0) frame.fields.push_back(key(in));  // one too many
  if (in.ConsumeIntegralInRange(0, 15) == 0) frame.fields.pop_back();          // one too few
  if (in.ConsumeIntegralInRange(0, 31) == 0)
    frame.op = static_cast<Op>(in.ConsumeIntegral<uint8_t>());
  return frame;
}

// The frame's bytes, now and then with its length off by a little.
std::string encode(FuzzedDataProvider& in, const Frame& frame) {
  std::string bytes;
  distrun::rdzv::encodeFrame(frame, bytes);
  if (in.ConsumeIntegralInRange(0, 31) == 0) {
    bytes[0] = static_cast<char>(bytes[0] + in.ConsumeIntegralInRange(-2, 2));
  }
  return bytes;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  std::string bytes;
  if (in.ConsumeIntegralInRange(0, 7) > 0) bytes += encode(in, hello(in));
  while (in.remaining_bytes() > 0) bytes += encode(in, request(in));
  std::string replies = distrun::fuzz::exchangeWithStore(bytes);
  distrun::fuzz::checkReplies(replies);
  distrun::fuzz::checkStoreAnswers();
  return 0;
}

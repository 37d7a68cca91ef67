// Fuzzes the store's frame decoder (distrun/rdzv/wire.h) with any bytes:
// decodeFrame never reads past its buffer (AddressSanitizer), consumes what
// it says, and a frame it decodes encodes back to exactly the bytes read.
#include <string>
#include <string_view>

#include "distrun/rdzv/wire.h"
#include "fuzz/fuzz_support.h"

using distrun::rdzv::DecodeStatus;
using distrun::rdzv::Frame;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The input on the heap, exactly as long as it is: a read past it is caught.
  std::string bytes(distrun::fuzz::asText(data, size));
  std::string_view rest = bytes;
  while (!rest.empty()) {
    Frame frame;
    size_t consumed = 0;
    DecodeStatus status = distrun::rdzv::decodeFrame(rest, frame, consumed);
    if (status != DecodeStatus::kFrame) break;
    distrun::fuzz::check(consumed > 0 && consumed <= rest.size(), "a frame consumed no bytes");
    std::string again;
    distrun::rdzv::encodeFrame(frame, again);
    distrun::fuzz::check(again == rest.substr(0, consumed), "a frame re-encodes differently");
    rest.remove_prefix(consumed);
  }
  return 0;
}

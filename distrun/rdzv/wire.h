#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace distrun::rdzv {

// The store's wire format. Every message is a frame:
//
//   u32 body length (little endian, at most kMaxFrameBody) | body
//   body = u8 opcode | fields...,  field = u32 length | bytes
//
// A client's first frame must be kHello with the job token and, optionally,
// the key space it works in; the server answers kOk, or kRefused and
// closes. Every key a client sends after a hello that named a space (and
// its will's counter and prefix) is taken within that space: jobs that share
// one store (one endpoint and one token, each with its own --rdzv-id) never
// see each other's keys. A hello without one works in the root space.
// Requests, each answered in order (a
// client may send many before reading: StoreBatch; a kGet that waits holds
// back the requests behind it):
//   kSet key value        -> kOk
//   kGet key              -> kValue value, once the key exists (waits)
//   kTryGet key           -> kValue value | kMissing
//   kAdd key delta        -> kValue total   (delta and total as decimal)
//   kCompareSet key expected desired -> kValue current: sets `desired` when
//                           the value is `expected` (an absent key reads as
//                           ""); `current` is the value held afterwards
//   kWill counter prefix value [closed] -> kOk  (this connection's last will)
// A will is kept with its connection, one per connection (a later kWill
// replaces it; an empty counter clears it). When the connection closes
// while the will is set (the client died: EOF, a reset, a keepalive
// time-out; or it just closed without clearing it), the server appends
// `value` to the sequence that `counter` counts (`closed` instead, when
// given, if the peer's kernel ended the connection, EOF or reset: its
// process is gone for sure, where a keepalive time-out may be a host cut
// off and alive), as one client's
// `n = kAdd counter 1` then `kSet prefix<n-1> value` would, waking their
// waiters: the key scheme of the job's event sequence (`r<k>/events`,
// `r<k>/event/<i>`, distrun/launch/job_events.cc). No will fires when the
// store itself stops. `counter` and `prefix` are keys (kMaxKeyBytes each).
// Anything else (an unknown opcode, a field running past its frame, a frame
// over the limit, a request before kHello) closes that connection and
// nothing more: the store keeps serving everyone else.
// When the server itself fails (StoreServer's loop), it sends each
// authenticated client `kFailed cause` in place of any further reply and
// closes every connection.
enum class Op : uint8_t {
  kHello = 1,
  kSet = 2,
  kGet = 3,
  kTryGet = 4,
  kAdd = 5,
  kCompareSet = 6,
  kWill = 7,
  kOk = 100,
  kValue = 101,
  kMissing = 102,
  kRefused = 103,
  kFailed = 104,
};

inline constexpr uint32_t kMaxFrameBody = 16u << 20;

struct Frame {
  Op op;
  std::vector<std::string> fields;
};

// Appends the frame's bytes to `out`.
void encodeFrame(const Frame& frame, std::string& out);

// Result of reading a frame from the front of a buffer.
enum class DecodeStatus { kFrame, kNeedMore, kMalformed };

// Reads one frame from the front of `buffer`. On kFrame, `frame` holds it
// and `consumed` its size in bytes. Never reads past `buffer`.
DecodeStatus decodeFrame(std::string_view buffer, Frame& frame, size_t& consumed);

// The number of fields each request opcode carries (kHello: at most), or
// nullopt for an opcode a client may not send.
std::optional<size_t> requestFieldCount(Op op);

// Whether a request `op` may carry `count` fields: requestFieldCount's, or
// for kHello 1 (the token) or 2 (the token and a key space).
bool fieldCountFits(Op op, size_t count);

}  // namespace distrun::rdzv

#include "distrun/rdzv/wire.h"

#include <cstring>

namespace distrun::rdzv {

namespace {

void putU32(uint32_t v, std::string& out) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint32_t getU32(std::string_view b, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    v |= static_cast<uint32_t>(static_cast<unsigned char>(b[at + static_cast<size_t>(i)]))
         << (8 * i);
  }
  return v;
}

bool knownOp(uint8_t op) { return (op >= 1 && op <= 7) || (op >= 100 && op <= 104); }

}  // namespace

void encodeFrame(const Frame& frame, std::string& out) {
  size_t body = 1;
  for (const std::string& f : frame.fields) body += 4 + f.size();
  putU32(static_cast<uint32_t>(body), out);
  out.push_back(static_cast<char>(frame.op));
  for (const std::string& f : frame.fields) {
    putU32(static_cast<uint32_t>(f.size()), out);
    out += f;
  }
}

DecodeStatus decodeFrame(std::string_view buffer, Frame& frame, size_t& consumed) {
  if (buffer.size() < 4) return DecodeStatus::kNeedMore;
  uint32_t body = getU32(buffer, 0);
  if (body == 0 || body > kMaxFrameBody) return DecodeStatus::kMalformed;
  if (buffer.size() < 4 + static_cast<size_t>(body)) return DecodeStatus::kNeedMore;
  std::string_view b = buffer.substr(4, body);
  uint8_t op = static_cast<uint8_t>(b[0]);
  if (!knownOp(op)) return DecodeStatus::kMalformed;
  frame.op = static_cast<Op>(op);
  frame.fields.clear();
  size_t at = 1;
  while (at < b.size()) {
    if (b.size() - at < 4) return DecodeStatus::kMalformed;
    uint32_t len = getU32(b, at);
    at += 4;
    if (len > b.size() - at) return DecodeStatus::kMalformed;
    frame.fields.emplace_back(b.substr(at, len));
    at += len;
  }
  consumed = 4 + static_cast<size_t>(body);
  return DecodeStatus::kFrame;
}

std::optional<size_t> requestFieldCount(Op op) {
  switch (op) {
    case Op::kGet:
    case Op::kTryGet:
      return 1;
    case Op::kHello:
    case Op::kSet:
    case Op::kAdd:
      return 2;
    case Op::kCompareSet:
    case Op::kWill:
      return 3;
    default:
      return std::nullopt;
  }
}

bool fieldCountFits(Op op, size_t count) {
  std::optional<size_t> fields = requestFieldCount(op);
  if (!fields) return false;
  if (op == Op::kHello) return count == 1 || count == 2;
  if (op == Op::kWill) return count == 3 || count == 4;  // the 4th: its value if closed
  return count == *fields;
}

}  // namespace distrun::rdzv

#include "distrun/rdzv/store.h"

#include "distrun/rdzv/wire.h"

namespace distrun::rdzv {

StoreBatch& StoreBatch::set(const std::string& key, const std::string& value) {
  encodeFrame(Frame{Op::kSet, {key, value}}, bytes_);
  count_++;
  return *this;
}

StoreBatch& StoreBatch::get(const std::string& key) {
  encodeFrame(Frame{Op::kGet, {key}}, bytes_);
  count_++;
  return *this;
}

StoreBatch& StoreBatch::tryGet(const std::string& key) {
  encodeFrame(Frame{Op::kTryGet, {key}}, bytes_);
  count_++;
  return *this;
}

StoreBatch& StoreBatch::add(const std::string& key, long long delta) {
  encodeFrame(Frame{Op::kAdd, {key, std::to_string(delta)}}, bytes_);
  count_++;
  return *this;
}

}  // namespace distrun::rdzv

// Send, recv and sendRecv of the Gloo backend (docs/comm.md): between
// ranks of one node through the node's shared-memory channels (messages_),
// between nodes over Gloo's unbound buffers.
#include <cstdint>
#include <memory>

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>
#include <gloo/types.h>

#include "distrun/comm/gloo/gloo_communicator.h"

namespace distrun::comm {

namespace {

// Point-to-point slots live under their own prefix, clear of the
// collectives' prefixes (gloo/types.h uses 0x01..0x08).
constexpr uint8_t kSendRecvSlotPrefix = 0x40;

uint64_t sendRecvSlot(int tag) {
  return gloo::Slot::build(kSendRecvSlotPrefix, static_cast<uint32_t>(tag));
}

}  // namespace

bool GlooCommunicator::onMessageChannel(int peer) const {
  return messages_ && layout_.nodeOf(peer) == layout_.node();
}

void GlooCommunicator::doSend(const void* data, size_t count, DataType type, int peer, int tag) {
  if (onMessageChannel(peer)) {
    noteAlgorithm("shm");
    guardedShared(
        "send", [&] { messages_->send(data, count, type, layout_.localRankOf(peer), tag); },
        layout_.neighbours());
    return;
  }
  guarded("send", [&] {
    auto buffer =
        mesh_->context().createUnboundBuffer(const_cast<void*>(data), count * sizeOf(type));
    buffer->send(peer, sendRecvSlot(tag));
    buffer->waitSend(options_.timeout);
  });
}

void GlooCommunicator::doRecv(void* data, size_t count, DataType type, int peer, int tag) {
  if (onMessageChannel(peer)) {
    noteAlgorithm("shm");
    guardedShared(
        "recv", [&] { messages_->recv(data, count, type, layout_.localRankOf(peer), tag); },
        layout_.neighbours());
    return;
  }
  guarded("recv", [&] {
    auto buffer = mesh_->context().createUnboundBuffer(data, count * sizeOf(type));
    buffer->recv(peer, sendRecvSlot(tag));
    buffer->waitRecv(options_.timeout);
  });
}

void GlooCommunicator::doSendRecv(const void* sendData, int sendPeer, void* recvData, int recvPeer,
                                  size_t count, DataType type, int tag) {
  if (onMessageChannel(sendPeer) && onMessageChannel(recvPeer)) {
    noteAlgorithm("shm");
    guardedShared(
        "sendrecv",
        [&] {
          messages_->sendRecv(sendData, layout_.localRankOf(sendPeer), recvData,
                              layout_.localRankOf(recvPeer), count, type, tag);
        },
        layout_.neighbours());
    return;
  }
  if (onMessageChannel(sendPeer) || onMessageChannel(recvPeer)) {
    sendRecvAcrossChannels(sendData, sendPeer, recvData, recvPeer, count, type, tag);
    return;
  }
  const uint64_t slot = sendRecvSlot(tag);
  guarded("sendrecv", [&] {
    auto in = mesh_->context().createUnboundBuffer(recvData, count * sizeOf(type));
    auto out =
        mesh_->context().createUnboundBuffer(const_cast<void*>(sendData), count * sizeOf(type));
    in->recv(recvPeer, slot);
    out->send(sendPeer, slot);
    in->waitRecv(options_.timeout);
    out->waitSend(options_.timeout);
  });
}

void GlooCommunicator::sendRecvAcrossChannels(const void* sendData, int sendPeer, void* recvData,
                                              int recvPeer, size_t count, DataType type, int tag) {
  const bool sendingHere = onMessageChannel(sendPeer);
  const size_t bytes = count * sizeOf(type);
  const uint64_t slot = sendRecvSlot(tag);
  std::unique_ptr<gloo::transport::UnboundBuffer> overTcp;
  guarded("sendrecv", [&] {
    if (sendingHere) {
      overTcp = mesh_->context().createUnboundBuffer(recvData, bytes);
      overTcp->recv(recvPeer, slot);
    } else {
      overTcp = mesh_->context().createUnboundBuffer(const_cast<void*>(sendData), bytes);
      overTcp->send(sendPeer, slot);
    }
  });
  guardedShared(
      "sendrecv",
      [&] {
        if (sendingHere) {
          messages_->send(sendData, count, type, layout_.localRankOf(sendPeer), tag);
        } else {
          messages_->recv(recvData, count, type, layout_.localRankOf(recvPeer), tag);
        }
      },
      layout_.neighbours());
  guarded("sendrecv", [&] {
    if (sendingHere) {
      overTcp->waitRecv(options_.timeout);
    } else {
      overTcp->waitSend(options_.timeout);
    }
  });
  noteAlgorithm("shm+tcp");
}

}  // namespace distrun::comm

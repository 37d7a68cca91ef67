#pragma once
// A real rendezvous store (distrun/rdzv/store_server.h) for the store fuzz
// targets: one per process, started on first use on 127.0.0.1 and a free
// port, never stopped. Each input talks to it over a connection of its own;
// afterwards the store must still answer a fresh client.
#include <string>
#include <string_view>

namespace distrun::fuzz {

// The job token the store expects.
inline constexpr std::string_view kStoreToken = "fuzz-token";

// Connects to the store, sends `bytes` (as far as the store reads them),
// ends the sending side and reads until the store closes the connection.
// Returns what the store sent back. Aborts when the store keeps the
// connection open for seconds after its client ended.
std::string exchangeWithStore(std::string_view bytes);

// Aborts unless `replies` is a sequence of reply frames (a last one may be
// cut short by the store closing the connection).
void checkReplies(std::string_view replies);

// Aborts unless the store's loop still runs and a fresh client with the
// right token can set and read back a key.
void checkStoreAnswers();

}  // namespace distrun::fuzz

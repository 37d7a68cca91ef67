#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "distrun/launch/failure_report.h"

namespace distrun::launch {

// Whether a worker's failure is its own error (a cause) or only a
// consequence of losing another rank (an echo), the one home of that
// rule (docs/launcher.md, "Supervision"). A cause always outranks an echo
// as the job's root cause.
//
// An echo is a failure that
// - exited 69 (ExitCode::kPeerLost: distrun's communicator and
//   distrun-train lost a rank) or 76 (ExitCode::kRendezvous: the store
//   that rank 0 hosts went away), or
// - shows a lost peer in its stderr tail, however it ended (PyTorch aborts
//   with SIGABRT on an NCCL remote error): the lines of lostPeerMarkers(),
//   or another rank's error relayed by distrun-train ("distrun: error: rank
//   0: --snapshot ...": rank 0 refused, and every rank stops with its error),
//   or
// - came while another rank of its node, still running, had raised already
//   (afterRaiseOf: PyTorch's @record wrote its TORCHELASTIC_ERROR_FILE):
//   rank 1 raises, its exit handlers take a second, and rank 0's collective
//   fails meanwhile with an error of its own words.
// Everything else (another exit code, a signal, an exception) is a cause.
bool isEcho(const WorkerFailure& failure);

// Whether PyTorch's @record left the worker's own exception (its
// TORCHELASTIC_ERROR_FILE held one when it was reaped).
bool raised(const WorkerFailure& failure);

// torchrun's order of failures, across nodes too: the first exception
// raised is the root cause, by its error file's time (to the millisecond
// where the records have its write time, else to the second); a failure
// without one counts from when its agent reaped it. True when `failure`
// raised before `than` raised or, without an exception of its own, was
// reaped. Clocks of different nodes are compared as they are (NTP keeps
// them within milliseconds; a rank that lost its peer is reaped tens of
// milliseconds after that peer raised at the least).
bool raisedBefore(const WorkerFailure& failure, const WorkerFailure& than);

// The texts that, found in a line of a worker's stderr, show that it lost a
// peer: Gloo's ("Connection closed by peer", "Connection reset by peer"),
// NCCL's through PyTorch ("remote process exited or there was a network
// error"), torch.distributed's store ("Connection was likely closed"), and
// distrun's communicator ("lost rank ").
const std::vector<std::string_view>& lostPeerMarkers();

// The first line of `tail` that shows a lost peer or relays another rank's
// error; empty when none does.
std::string echoLine(const std::vector<std::string>& tail);

}  // namespace distrun::launch

#pragma once

#include <sys/types.h>

#include <cstddef>

namespace distrun {

// SIGPIPE in distrun: one rule, set in one place.
//
// distrun's own writes to sockets use send(..., MSG_NOSIGNAL) (the
// rendezvous store's client and server, distrun/rdzv/), so a peer that
// closed is an error naming it (EPIPE), whatever this process's SIGPIPE
// disposition. Gloo writes to its sockets with writev, which has no such
// flag, so the Gloo backend calls ignoreSigpipe() as it connects
// (GlooCommunicator, for every program that links the library, ours or
// not): a dead peer is then an error naming its rank instead of a silent
// death of this one. That is the only call. The programs' main()s leave
// SIGPIPE alone: an ignored SIGPIPE survives exec, so `distrun run` and
// `distrun exec` would hand it to every worker and every program those
// start, and a program in a shell pipeline would then meet EPIPE errors
// where it expects to end quietly when its reader goes. Writes into a
// tool's standard input (runTool: sbatch reading its script) go through
// writeWithoutSigpipe, which keeps the disposition as it is.
//
// Sets SIGPIPE to ignored when it has its default action; a handler the
// program installed stays (writes fail with EPIPE under it too). Throws
// SystemError when sigaction fails. Thread-safe.
void ignoreSigpipe();

// write(2) that fails with EPIPE instead of raising SIGPIPE when the reader
// has gone: SIGPIPE is blocked for this thread during the call and a
// SIGPIPE the call raised is taken back; one already pending stays.
ssize_t writeWithoutSigpipe(int fd, const void* data, size_t size);

}  // namespace distrun

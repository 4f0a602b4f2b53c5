// The host side of DenseBlockOps' stream (DenseBlockOps::queue()): deferred host results fetched
// together, ordering against operators on other streams, pinned host memory, timing marks.
// CPU (queue.cpp): results are written at once, marks read the host clock. CUDA (queue.cu):
// device → pinned copies, events. Distributed (distributed/distributed_ops.cpp): the deferred
// products are all-reduced before they are downloaded.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/multivector.hpp"

namespace tcsolve {

class DenseQueue {
 public:
  virtual ~DenseQueue() = default;
  // Deferred twins of DenseBlockOps::gram and column_dots: the products are queued and their host
  // results are written by the next fetch(), so that several small results cost one host round
  // trip (CUDA: one device → pinned copy and one stream sync in fetch(); CPU: computed at once).
  // g / out must stay valid until fetch(). gram() and column_dots() fetch as well.
  virtual void gram_deferred(MvView<const double> x, MvView<const double> y, double* g,
                             std::int64_t ldg) = 0;
  virtual void column_dots_deferred(MvView<const double> x, MvView<const double> y,
                                    double* out) = 0;
  // Deferred copy of a backend block (small) to host memory with leading dimension ldh: written
  // by the next fetch() or by the fetch_async() ticket that follows it.
  virtual void download_deferred(MvView<const double> src, double* host, std::int64_t ldh) = 0;
  virtual void fetch() = 0;
  // Non-blocking fetch: queues the copy of everything deferred so far (gram_deferred,
  // column_dots_deferred, download_deferred) and returns a ticket at once; fetch_wait(ticket)
  // blocks until the stream has reached that copy and then writes the host destinations (which
  // must stay valid until then). Tickets are waited in order; at most 4 outstanding (a fifth
  // fetch_async waits for the oldest). CPU: the results are written at once.
  virtual std::uint64_t fetch_async() = 0;
  virtual void fetch_wait(std::uint64_t ticket) = 0;
  // Ordering of an operator apply that runs on the legacy default stream (or on stream()) without
  // a host synchronization: external_begin() makes the default stream wait for this stream's work
  // so far, external_end() makes this stream wait for the default stream's (CUDA events both ways;
  // no-ops on the CPU). See ApplyOrder.
  virtual void external_begin() = 0;
  virtual void external_end() = 0;
  // Page-locks host memory for fast copies (CUDA: cudaHostRegister; false when the driver
  // refuses, then copies are merely slower; CPU: no-op, false). Safe from another thread.
  virtual bool pin_host(void* p, std::size_t bytes) = 0;
  virtual void unpin_host(void* p) = 0;
  // Timing marks in stream order (CUDA events from a pool of 1024; CPU: the host clock): mark()
  // returns an id; elapsed_seconds(a, b) once b has completed (after a fetch or synchronize).
  virtual int mark() = 0;
  virtual double elapsed_seconds(int from, int to) = 0;
};

}  // namespace tcsolve

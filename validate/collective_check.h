// What the NCCL worker (validate/nccl_worker.cc) sends in a correctness pass and what each rank must then
// receive, per collective: nccl-tests' #wrong column, made exact. Element i of the send buffer of the member
// at position p of a call's group is (p + 1) + (i mod 7): small integers, so every sum is exact in float32 in
// any reduction order and a result is either right or wrong. Pure functions, tested without a GPU
// (tests/validate/cuda_plan_test.cc).
#pragma once

#include <cstdint>

#include "sim/collective.h"

namespace strata::validate {

// Element i of the send buffer of the member at `position`.
float check_send_value(int position, std::int64_t i);
// Elements the member at `position` of an `n`-member group sends and receives in `op` over `count` float32
// elements (a call's bytes / 4, nccl-tests' convention: per-rank shares are count / n).
std::int64_t check_send_count(sim::CollectiveOp op, int n, std::int64_t count, int position);
std::int64_t check_recv_count(sim::CollectiveOp op, int n, std::int64_t count, int position);
// The value element i of that member's receive buffer must hold (i < check_recv_count(...)). SendRecv sends
// to position + 1 and receives from position - 1 (mod n), as the MPI worker does; AllToAll sends share j to
// member j; the roots of Reduce and Broadcast are position 0.
float expected_recv_value(sim::CollectiveOp op, int n, std::int64_t count, int position, std::int64_t i);

}  // namespace strata::validate

#include "validate/collective_check.h"

namespace strata::validate {

using sim::CollectiveOp;

float check_send_value(int position, std::int64_t i) {
  return static_cast<float>(position + 1 + i % 7);
}

std::int64_t check_send_count(CollectiveOp op, int n, std::int64_t count, int position) {
  switch (op) {
    case CollectiveOp::kAllGather:
      return count / n;
    case CollectiveOp::kBroadcast:
      return position == 0 ? count : 0;
    default:
      return count;
  }
}

std::int64_t check_recv_count(CollectiveOp op, int n, std::int64_t count, int position) {
  switch (op) {
    case CollectiveOp::kReduceScatter:
      return count / n;
    case CollectiveOp::kReduce:
      return position == 0 ? count : 0;
    default:
      return count;
  }
}

float expected_recv_value(CollectiveOp op, int n, std::int64_t count, int position, std::int64_t i) {
  const std::int64_t share = count / n;
  // The sum over all n members of their element g.
  const auto sum_of = [n](std::int64_t g) {
    return static_cast<float>(static_cast<std::int64_t>(n) * (n + 1) / 2 +
                              static_cast<std::int64_t>(n) * (g % 7));
  };
  switch (op) {
    case CollectiveOp::kAllReduce:
    case CollectiveOp::kReduce:
      return sum_of(i);
    case CollectiveOp::kReduceScatter:
      return sum_of(position * share + i);
    case CollectiveOp::kAllGather:  // block j is member j's whole send buffer
      return check_send_value(static_cast<int>(i / share), i % share);
    case CollectiveOp::kBroadcast:
      return check_send_value(0, i);
    case CollectiveOp::kAllToAll:  // block j is member j's block `position`
      return check_send_value(static_cast<int>(i / share), position * share + i % share);
    case CollectiveOp::kSendRecv:
      return check_send_value((position + n - 1) % n, i);
  }
  return 0;
}

}  // namespace strata::validate

#!/usr/bin/env python3
"""Which per-handoff costs could explain issue 13's one-DGX-A100 errors? (docs/fidelity.md §6.3)

Analysis only: nothing here feeds the simulator, and no constant is taken from it.

Model form tested: an all-reduce ring over 8 A100s with NCCL 2.21's 24 channels and loop/slice
rules (docs/fidelity.md §6.3) costs
    T(S) = F + sum over handoffs of o(b) + S * 1.75 / R
with F a fixed time per call, o(b) the cost of one slice handoff of b bytes (any function that does
not fall as b grows), R the bus rate in busbw GB/s. Per channel, S <= 384 MiB is one loop of 30
handoffs of S / (2 * 24 * 8) bytes; above, full loops of 1 MiB slices and a last, shorter loop.

Measured times are implied from issue 13's rounded errors (predicted / measured - 1) applied to
strata's predictions, which have not changed for this system since the issue was filed. The
script searches F, R and o at the four slice sizes on a grid and prints what is feasible for
several readings of the rounding.

    python3 docs/a100_ring_bounds.py
"""

MIB = 1048576
# strata sim collective --hw configs/hw/dgx-a100.yaml --algo ring, microseconds (docs/fidelity.md §3.1)
PREDICTED_US = {64: 545.3, 128: 1034.7, 256: 2013.3, 512: 3970.7, 1024: 7885.4}
STRATA_PLATEAU_BUSBW = 239.8  # GB/s at 8 GiB
RANKS = 8
BUSBW_FACTOR = 2 * (RANKS - 1) / RANKS  # nccl-tests' all-reduce busbw / algbw


def loop_us(busbw):
    """One full loop (384 MiB of message) at a busbw of `busbw` GB/s, in microseconds."""
    return 384 * MIB * BUSBW_FACTOR / busbw / 1e3


def feasible_points(width, plateau_pct):
    """Grid points (R, F, o170K, o341K, o682K, o1M, error at 1 GiB in %) consistent with the bands."""
    bands = {64: (25, 25), 128: (25, 25), 256: (17, 19), 512: (17, 19)}
    measured = {s: (PREDICTED_US[s] * (1 + (lo - width) / 100), PREDICTED_US[s] * (1 + (hi + width) / 100))
                for s, (lo, hi) in bands.items()}
    plateau = (STRATA_PLATEAU_BUSBW / (1 + plateau_pct / 100), STRATA_PLATEAU_BUSBW / (1 - plateau_pct / 100))
    points = []
    for rate in range(200, 321):
        per_mib = BUSBW_FACTOR * MIB / rate / 1e3  # microseconds of bytes per MiB of message
        for fixed in range(0, 400, 2):
            # per-handoff budget (30 handoffs) left at each size after the fixed time and the bytes
            budget = {s: ((lo - s * per_mib - fixed) / 30, (hi - s * per_mib - fixed) / 30)
                      for s, (lo, hi) in measured.items()}
            o1m_lo = max(0.0, (loop_us(plateau[1]) - 384 * per_mib) / 30)
            o1m_hi = (loop_us(plateau[0]) - 384 * per_mib) / 30
            if o1m_lo > o1m_hi:
                continue
            for i in range(201):
                o1m = o1m_lo + (o1m_hi - o1m_lo) * i / 200
                # 512 MiB: 30 handoffs of 1 MiB and 30 of 341 KiB
                o341_lo = max(budget[128][0], budget[512][0] - o1m, 0.0)
                o341_hi = min(budget[128][1], budget[512][1] - o1m, o1m)
                o170 = max(budget[64][0], 0.0)
                if o341_lo > o341_hi or o170 > min(budget[64][1], o341_hi):
                    continue
                o341 = max(o341_lo, o170)
                o682 = max(budget[256][0], o341)
                if o682 > min(budget[256][1], o1m):
                    continue
                t1g = fixed + 60 * o1m + 30 * o682 + 1024 * per_mib
                points.append((rate, fixed, o170, o341, o682, o1m, (t1g / PREDICTED_US[1024] - 1) * 100))
    return points


def main():
    print("bands widened by, plateau within | feasible | 1 GiB error | o = 0 (fixed time only): R, F | F <= 20 us: R, o(170K), o(1M)")
    for width, plateau_pct in [(0, 5), (3, 5), (3, 8), (3, 10), (4, 8), (4, 10), (5, 8), (5, 10)]:
        pts = feasible_points(width, plateau_pct)
        if not pts:
            print(f"+-{width} points, {plateau_pct}% | none")
            continue
        errors = [p[6] for p in pts]
        no_handoff = [p for p in pts if p[5] <= 0.5]
        launch_only = [p for p in pts if p[1] <= 20]
        cols = [f"+-{width} points, {plateau_pct}%", str(len(pts)), f"{min(errors):+.1f}..{max(errors):+.1f}%"]
        cols.append(f"{min(p[0] for p in no_handoff)}-{max(p[0] for p in no_handoff)} GB/s, "
                    f"{min(p[1] for p in no_handoff)}-{max(p[1] for p in no_handoff)} us" if no_handoff else "none")
        cols.append(f">= {min(p[0] for p in launch_only)} GB/s, >= {min(p[2] for p in launch_only):.1f} us, "
                    f">= {min(p[5] for p in launch_only):.1f} us" if launch_only else "none")
        print(" | ".join(cols))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Issue 45 §5: a model of the distributed solve on 8 GPUs of one node and on two nodes joined by
InfiniBand, built from what was measured on 1, 2 and 4 H200s. Prints the inputs (each marked
measured, derived or assumed), the fit, and the predicted solve phase and efficiency.

The solve phase on p GPUs of one node (NVLink, the exchange overlapped with the interior product):
    T(p) = S + C/p
S: the part that does not shrink with p (per-iteration dense work done alike on every rank, kernel
launch latencies, the all-reduces' latency), C: the rows' share. S and C are fitted per row on the
1- and 4-GPU solve phases; the 2-GPU phase checks the fit. Across nodes the halo of the one slab
cut that crosses them goes over InfiniBand; its time per apply beyond the interior product's
(the overlap window) is added per apply:
    T(p, nodes) = S + C/p + applies * max(0, t_halo_ib - t_interior(p)) + allreduces * (a_ib - a_nvl)
Usage: scaling_model.py   (no arguments; the inputs are below, with their sources)
"""

# ---- measured (sources in docs/performance.md, "Several GPUs ..." and "More than one process") ----
# solve phases (seconds.solve) of the default command, 1 / 2 / 4 GPUs (issue 45's table, 4 x H200
# host, 2026-11-28), and per row its lap3d:200 run: applies, one GPU's solve phase (2026-12-01,
# x2 host), the halo per apply. eigs: 2970 applies, its exchanges profiled (mpirun, 2026-11-26,
# TCSOLVE_COMM_PROFILE: 0.163 s synchronized, 55 us an apply, one neighbour, the 40,000-row plane),
# 484 all-reduces. Block CG: 511 applies of 32 columns (17 iterations), 4 all-reduces an
# iteration (the Gram matrices), the halo 32 columns x 8 bytes x the plane (fp64: an upper bound).
ROWS = {
    "eigs lap3d:300 k16 largest": {"n": 300, "t": {1: 27.05, 2: 14.37, 4: 7.65},
                                   "applies_200": 2970, "t1_200": 3.06, "halo_us_200": 0.163 / 2970 * 1e6,
                                   "allreduces_200": 484},
    "solve lap3d:300 32 rhs": {"n": 300, "t": {1: 6.45, 2: 3.38, 4: 2.15},
                               "applies_200": 511, "t1_200": 1.23, "halo_mib_200": 32 * 8 * 40000 / 2 ** 20,
                               "allreduces_200": 4 * 17},
}
# NCCL on NVLink NV18 (nccl_rates, 2 ranks, 2026-11-24): all-reduce of 256 doubles 15.2 us;
# exchange 8 MiB each way 58.7 us, 32 MiB 146.8 us
A_NVL_US = 15.2
NVL_8MIB_US, NVL_32MIB_US = 58.7, 146.8

# ---- assumed (not measured here: no two-node machine was lent) ----
IB_GBS = 45.0      # NDR 400 Gb/s, one HCA per GPU, ~90 % of 50 GB/s through NCCL's net plugin
A_IB_US = 35.0     # a small all-reduce across two nodes (NCCL tree), against 15.2 us in one node
IB_LAT_US = 10.0   # a halo message's latency across the nodes
SLOPE = (NVL_32MIB_US - NVL_8MIB_US) / 24.0  # us per MiB on NVLink (the line through the two sizes)


def nvl_exchange_us(mib):
    """NVLink exchange time for `mib` each way, the line through the two measured sizes."""
    return NVL_8MIB_US + (mib - 8.0) * SLOPE


def model(name, r):
    t, n = r["t"], r["n"]
    C = (t[1] - t[4]) * 4.0 / 3.0  # the fit on 1 and 4 GPUs
    S = t[1] - C
    per_row = r["t1_200"] / r["applies_200"] / 200 ** 3  # derived: one GPU's seconds per row and apply
    applies = t[1] / (per_row * n ** 3)                    # derived: this size's applies
    mib200 = r.get("halo_mib_200") or 8.0 + (r["halo_us_200"] - NVL_8MIB_US) / SLOPE
    mib = mib200 * (n / 200.0) ** 2                        # the slab's plane: n^2 rows
    allreduces = r["allreduces_200"] * applies / r["applies_200"]
    t_ib = IB_LAT_US + mib * 1.048576 / IB_GBS * 1e3       # us an apply, the one cut between the nodes

    def at(p, nodes):
        interior = per_row * n ** 3 / p * 1e6              # us an apply: the exchange's overlap window
        exposed = max(0.0, t_ib - interior) if nodes > 1 else max(0.0, nvl_exchange_us(mib) - interior)
        extra = applies * exposed * 1e-6 + (allreduces * (A_IB_US - A_NVL_US) * 1e-6 if nodes > 1 else 0.0)
        return S + C / p + extra, exposed, interior

    return S, C, applies, mib, t_ib, at


def main():
    print("inputs: measured (docs/performance.md), derived, assumed")
    print(f"  assumed  InfiniBand {IB_GBS} GB/s per GPU, latency {IB_LAT_US} us; small all-reduce across two nodes "
          f"{A_IB_US} us (one node: {A_NVL_US} us measured)")
    print(f"{'row':28s} {'S s':>6s} {'C s':>6s} {'2 GPUs fit/meas':>16s} " +
          " ".join(f"{h:>18s}" for h in ("8 GPUs, 1 node", "2 nodes x 4", "2 nodes x 8")))
    for name, r in ROWS.items():
        S, C, applies, mib, t_ib, at = model(name, r)
        t1 = r["t"][1]
        cells = [(at(8, 1), 8), (at(8, 2), 8), (at(16, 2), 16)]
        print(f"{name:28s} {S:6.2f} {C:6.2f} {S + C / 2:7.2f}/{r['t'][2]:<7.2f} " +
              " ".join(f"{v[0]:6.2f} s {t1 / v[0]:4.1f}x {100 * t1 / v[0] / p:3.0f}%" for v, p in cells))
        print(f"{'':28s} derived: {applies:.0f} applies, {mib:.1f} MiB a cut and apply each way (NVLink "
              f"{nvl_exchange_us(mib):.0f} us, InfiniBand {t_ib:.0f} us) against the interior product's "
              f"{cells[0][0][2]:.0f} us (8 GPUs) / {cells[2][0][2]:.0f} us (16): exposed "
              f"{cells[1][0][1]:.0f} / {cells[2][0][1]:.0f} us an apply")


if __name__ == "__main__":
    main()

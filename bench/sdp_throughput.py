"""SDP elements per cycle against the configured throughput, on a large offline layer.

    python bench/sdp_throughput.py [preset ...]        # default: nv_small nv_full

Runs one int8 layer (BS ALU with a register operand, BN MUL with a register operand, output
converter; every other stage bypassed) through the SDP unit + MCIF/CVIF + an AXI memory that
never stalls and answers after 0 cycles (Amaranth simulator; the output is checked against
the golden model by ``tb.sdp_unit.run_layers``), and prints elements, cycles from enable to
done, and elements per cycle against ``T`` (the datapath's lanes).
"""

from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from arch.config import NvdlaConfig  # noqa: E402
from arch.registers import register_map  # noqa: E402
from sim.sdp.random_programs import Regs  # noqa: E402


def layer(cfg, W, H, C):
    rmap = register_map(cfg)
    sdp, rdma = Regs(rmap["SDP"]), Regs(rmap["SDP_RDMA"])
    atom = cfg.memory_atom
    surfaces = -(-C // atom)
    line, surf = W * atom, W * H * atom
    src, dst = 0x8000_0000, 0x9000_0000
    for r in (sdp, rdma):
        r.set("D_DATA_CUBE_WIDTH", WIDTH=W - 1)
        r.set("D_DATA_CUBE_HEIGHT", HEIGHT=H - 1)
        r.set("D_DATA_CUBE_CHANNEL", CHANNEL=C - 1)
    rdma.addr("D_SRC_BASE_ADDR_LOW", src)
    rdma.addr("D_SRC_LINE_STRIDE", line)
    rdma.addr("D_SRC_SURFACE_STRIDE", surf)
    rdma.set("D_SRC_DMA_CFG", SRC_RAM_TYPE=1)
    rdma.set("D_FEATURE_MODE_CFG", FLYING_MODE=0, IN_PRECISION=0, PROC_PRECISION=0,
             OUT_PRECISION=0)
    for dma in ("B", "N", "E"):
        if f"D_{dma}RDMA_CFG" in rdma.block:
            rdma.set(f"D_{dma}RDMA_CFG", **{f"{dma}RDMA_DISABLE": 1})
    sdp.addr("D_DST_BASE_ADDR_LOW", dst)
    sdp.addr("D_DST_LINE_STRIDE", line)
    sdp.addr("D_DST_SURFACE_STRIDE", surf)
    sdp.set("D_DST_DMA_CFG", DST_RAM_TYPE=1)
    sdp.set("D_FEATURE_MODE_CFG", FLYING_MODE=0, OUTPUT_DST=0)
    sdp.set("D_DATA_FORMAT", PROC_PRECISION=0, OUT_PRECISION=0)
    sdp.set("D_DP_BS_CFG", BS_BYPASS=0, BS_ALU_BYPASS=0, BS_ALU_ALGO=2, BS_MUL_BYPASS=1,
            BS_MUL_PRELU=0, BS_RELU_BYPASS=0)
    sdp.set("D_DP_BS_ALU_CFG", BS_ALU_SRC=0, BS_ALU_SHIFT_VALUE=0)
    sdp.set("D_DP_BS_ALU_SRC_VALUE", BS_ALU_OPERAND=3)
    sdp.set("D_DP_BN_CFG", BN_BYPASS=0, BN_ALU_BYPASS=1, BN_MUL_BYPASS=0, BN_MUL_PRELU=0,
            BN_RELU_BYPASS=1)
    sdp.set("D_DP_BN_MUL_CFG", BN_MUL_SRC=0, BN_MUL_SHIFT_VALUE=1)
    sdp.set("D_DP_BN_MUL_SRC_VALUE", BN_MUL_OPERAND=3)
    if "D_DP_EW_CFG" in sdp.block:
        sdp.set("D_DP_EW_CFG", EW_BYPASS=1)
    sdp.set("D_CVT_SCALE", CVT_SCALE=1)
    data = np.random.default_rng(1).integers(0, 256, surfaces * surf, dtype=np.uint8)
    return {"sdp": sdp.words, "rdma": rdma.words, "s": {}, "images": [(src, data, 1)],
            "lut": None, "shape": (W, H, C, 0)}


def main(argv):
    from tb.sdp_unit import run_layers
    presets = argv or ["nv_small", "nv_full"]
    print(f"{'build':>10} {'T':>3} {'W x H x C':>12} {'elements':>9} {'cycles':>7} "
          f"{'elem/cycle':>10} {'of T':>6} {'sim s':>6}")
    for name in presets:
        cfg = NvdlaConfig.preset(name)
        W, H, C = (16, 16, 32) if cfg.memory_atom == 8 else (16, 16, 64)
        prog = layer(cfg, W, H, C)
        t0 = time.time()
        cycles = run_layers(cfg, [prog], seed=1, latency=(0, 0), backpressure=0.0,
                            pdp_ready=1.0, max_cycles=200_000)
        T = cfg.sdp_bs_throughput if cfg.sdp_bs else max(cfg.sdp_bn_throughput, 1)
        elems = W * H * (-(-C // cfg.memory_atom) * cfg.memory_atom)
        c = cycles[0]
        print(f"{name:>10} {T:>3} {f'{W}x{H}x{C}':>12} {elems:>9} {c:>7} "
              f"{elems / c:>10.2f} {elems / c / T:>6.1%} {time.time() - t0:>6.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])

"""The Winograd mode of an integer MAC cell: per-position sums of a 4 x 4 tile of 4 channels,
then the POA (CMAC's post-addition) to the tile's 2 x 2 outputs.

Not used by the core, which runs Winograd layers on the direct array
(:mod:`hw.conv.wino_dat`: 4 atoms per tile where this cell takes one); a building block for a
Winograd-mode CMAC at NVDLA's rate, bit for bit what :func:`sim.conv.winograd_math.wino_cell_int`
computes (checked there against NVDLA's ``NV_NVDLA_CMAC_CORE_mac`` with ``cfg_is_wg``).

One operation takes 64 data elements -- the CSC's PRA output for 4 channels of one input tile,
element ``(y x 4 + x) x 4 + c`` -- and the matching 64 stored (transformed) weights of a kernel,
and gives::

    M[y][x] = sum_c data[(y*4 + x)*4 + c] * wt[(y*4 + x)*4 + c]          (16 sums)
    res     = A^T M A,  A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]                (2 x 2, row-major)

exactly, as NVDLA's cell does:

* int8: two kernels per cell, as NVDLA's 16-bit multiplier lanes hold one int8 data element
  twice and two kernels' weights: ``res0`` from ``wt0``, ``res1`` from ``wt1``, 22 bits each
  (products 16, channel sums 18, the POA's 9-term sums 22);
* int16 (builds with int16; the payload's ``int16`` set): one kernel, ``wt0``, ``res0`` in 38
  bits (products 32, sums 34, POA 38); ``res1`` is 0. In int8 operations the data and ``wt0``
  elements are the low 8 bits of their 16-bit fields (int8 values sign-extended work).

The products are plain ``a * b`` of 16 x 16 (int16 builds, kernel 0) or 8 x 8 bits between an
operand register and a product register, the shape FPGA synthesis maps to DSP blocks; int16
builds keep ``wt1``'s 8 x 8 multipliers beside the 16 x 16 ones (int8 only). Cost (yosys
``synth_ecp5`` of one cell on nv_large, int8 only): 128 MULT18X18D (every product), about
8,700 LUT4 and 4,700 FF (yosys builds the channel sums and the POA as LUT compressor trees).

Pipeline (ready-gated: every register advances when the output register is empty or
``o.ready`` is high; one operation a cycle in steady state), :attr:`WinoMac.latency` = 5 cycles
from an ``i`` transfer to ``o.valid``::

    i --> [operands] --> [products] --> [channel sums: 2 adder levels]
      --> [A^T M: 2 adder levels] --> [(A^T M) A: 2 adder levels] = o
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .common import conv_int16, ready_gated_pipeline

__all__ = ["WinoMac", "wino_in_layout", "wino_out_layout", "wino_res_bits"]

#: A^T of F(2x2, 3x3): output row i = sum of M rows with these signs
_AT = ((1, 1, 1, 0), (0, 1, -1, -1))


def _elem_bits(cfg) -> int:
    return 16 if conv_int16(cfg) else 8


def wino_res_bits(cfg) -> int:
    """Width of ``res0``: 38 on builds with int16 (NVDLA's int16 result), 22 otherwise."""
    return 2 * _elem_bits(cfg) + 6


def wino_in_layout(cfg) -> data.StructLayout:
    """An operation: ``data``, ``wt0`` (elements of the build's integer width), ``wt1`` (int8),
    64 each; ``int16`` on builds with int16."""
    w = _elem_bits(cfg)
    fields = {"data": data.ArrayLayout(signed(w), 64), "wt0": data.ArrayLayout(signed(w), 64),
              "wt1": data.ArrayLayout(signed(8), 64)}
    if conv_int16(cfg):
        fields["int16"] = 1
    return data.StructLayout(fields)


def wino_out_layout(cfg) -> data.StructLayout:
    """The 2 x 2 outputs (row-major) of kernel 0 (``res0``) and, int8, kernel 1 (``res1``)."""
    return data.StructLayout({"res0": data.ArrayLayout(signed(wino_res_bits(cfg)), 4),
                              "res1": data.ArrayLayout(signed(22), 4)})


def _signed_sum(terms):
    """sum of (sign, value) terms, the first one's sign positive."""
    acc = None
    for s, v in terms:
        if acc is None:
            acc = v if s > 0 else -v
        else:
            acc = acc + v if s > 0 else acc - v
    return acc


class WinoMac(wiring.Component):
    """An integer MAC cell in Winograd mode (see the module docstring).

    Ports: ``i`` in (:func:`wino_in_layout`), ``o`` out (:func:`wino_out_layout`)."""

    latency = 5

    def __init__(self, cfg):
        self._cfg = cfg
        self._i16 = conv_int16(cfg)
        self._w = _elem_bits(cfg)
        super().__init__({
            "i": In(stream.Signature(wino_in_layout(cfg))),
            "o": Out(stream.Signature(wino_out_layout(cfg))),
        })

    def elaborate(self, platform):
        m = Module()
        w = self._w
        p = self.i.payload

        adv = ready_gated_pipeline(m, self.i, self.o, self.latency)

        def sync(sig, value):
            with m.If(adv):
                m.d.sync += sig.eq(value)

        # ---- operands (int16 builds: int8 elements from the low bytes) ---------------------
        a = [Signal(signed(w), name=f"a{i}") for i in range(64)]
        b0 = [Signal(signed(w), name=f"b0_{i}") for i in range(64)]
        b1 = [Signal(signed(8), name=f"b1_{i}") for i in range(64)]
        for i in range(64):
            if self._i16:
                i16 = p.int16
                sync(a[i], Mux(i16, p.data[i], p.data[i][:8].as_signed()))
                sync(b0[i], Mux(i16, p.wt0[i], p.wt0[i][:8].as_signed()))
                sync(b1[i], Mux(i16, 0, p.wt1[i]))
            else:
                sync(a[i], p.data[i])
                sync(b0[i], p.wt0[i])
                sync(b1[i], p.wt1[i])

        # ---- products: one register after the multipliers ---------------------------------
        p0 = [Signal(signed(2 * w), name=f"p0_{i}") for i in range(64)]
        p1 = [Signal(signed(16), name=f"p1_{i}") for i in range(64)]
        for i in range(64):
            sync(p0[i], a[i] * b0[i])
            sync(p1[i], a[i][:8].as_signed() * b1[i])

        def kernel(prod, pw, res):
            # channel sums per position
            msum = [Signal(signed(pw + 2), name=f"{res}_m{j}") for j in range(16)]
            for j in range(16):
                q = prod[4 * j:4 * j + 4]
                sync(msum[j], (q[0] + q[1]) + (q[2] + q[3]))
            # A^T M: [2][4]
            row = [[Signal(signed(pw + 4), name=f"{res}_r{i}{x}") for x in range(4)]
                   for i in range(2)]
            for i in range(2):
                for x in range(4):
                    sync(row[i][x], _signed_sum([(s, msum[y * 4 + x])
                                                 for y, s in enumerate(_AT[i]) if s]))
            # (A^T M) A: [2][2]
            out = getattr(self.o.payload, res)
            for i in range(2):
                for j in range(2):
                    sync(out[i * 2 + j], _signed_sum([(s, row[i][x])
                                                      for x, s in enumerate(_AT[j]) if s]))

        kernel(p0, 2 * w, "res0")
        kernel(p1, 16, "res1")
        return m

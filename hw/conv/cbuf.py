"""The convolution buffer (CBUF): banked on-chip SRAM between CDMA and CSC (spec
"Convolution Buffer"; layout contract :mod:`hw.conv.common`).

``cfg.cbuf_banks`` banks, each one :class:`amaranth.lib.memory.Memory` of
``cfg.cbuf_bank_depth`` entries x ``cfg.cbuf_bank_width`` bytes (initialised to zero) with one
byte-enabled write port (granularity 8) and one synchronous read port, so that FPGA tools map
every bank to block RAM.

Ports
    ``wr``      in, :func:`hw.conv.common.cbuf_write_layout` -- one write per cycle, always
                accepted: when ``en``, the bytes of ``data`` selected by ``mask`` go to flat
                entry ``addr`` (bank ``addr // DEPTH``, row ``addr % DEPTH``).
    ``dat_rd``  the CSC's data read port (:func:`hw.conv.common.cbuf_read_signature`, seen from
                the CBUF): ``en`` + ``addr`` in, ``data`` out one cycle later and held until the
                next read of that port.
    ``wt_rd``   the CSC's weight read port, the same.
    ``data_banks`` in, ``D_BANK.DATA_BANK + 1``: banks below it are the data region and read
                through ``dat_rd``; banks at or above it belong to the weight region and are
                read through ``wt_rd``. A port reading a bank of the other region gets no
                read (its ``data`` is then undefined).

Each bank has exactly one read port; its address comes from ``dat_rd`` or ``wt_rd`` by the
bank's region, so both ports read every cycle without conflict. A read and a write of the same
entry in one cycle return the old contents (read before write): a producer announces data
(``dat_slices`` / ``wt_bytes`` of :class:`hw.conv.cdma.Cdma`) only the cycle after its last
write is presented.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In

from .common import cbuf_read_signature, cbuf_write_layout

__all__ = ["Cbuf"]


class Cbuf(wiring.Component):
    """``Cbuf(cfg)``: the banked convolution buffer (see the module docstring)."""

    def __init__(self, cfg):
        self._cfg = cfg
        super().__init__({
            "wr": In(cbuf_write_layout(cfg)),
            "dat_rd": In(cbuf_read_signature(cfg)),
            "wt_rd": In(cbuf_read_signature(cfg)),
            "data_banks": In(6),
        })
        #: the bank memories (testbenches may peek at ``banks[b].data[row]``)
        self.banks = [Memory(shape=cfg.cbuf_bank_width * 8, depth=cfg.cbuf_bank_depth, init=[])
                      for _ in range(cfg.cbuf_banks)]

    def elaborate(self, platform):
        m = Module()
        cfg = self._cfg
        nb, depth, bw = cfg.cbuf_banks, cfg.cbuf_bank_depth, cfg.cbuf_bank_width
        rb = (depth - 1).bit_length()          # row bits (depth is a power of two)

        def split(addr):
            return addr[rb:], addr[:rb]        # bank, row

        w_bank, w_row = split(self.wr.addr)
        d_bank, d_row = split(self.dat_rd.addr)
        t_bank, t_row = split(self.wt_rd.addr)
        d_sel = Signal(range(nb), name="dat_sel")     # bank read by each port, last read
        t_sel = Signal(range(nb), name="wt_sel")
        with m.If(self.dat_rd.en):
            m.d.sync += d_sel.eq(d_bank)
        with m.If(self.wt_rd.en):
            m.d.sync += t_sel.eq(t_bank)

        outs = []
        for b in range(nb):
            mem = self.banks[b]
            m.submodules[f"bank{b}"] = mem
            wp = mem.write_port(granularity=8)
            rp = mem.read_port()
            hit = self.wr.en & (w_bank == b)
            m.d.comb += [wp.addr.eq(w_row), wp.data.eq(self.wr.data),
                         wp.en.eq(self.wr.mask & Mux(hit, (1 << bw) - 1, 0))]
            is_data = Signal(name=f"bank{b}_is_data")
            m.d.comb += is_data.eq(b < self.data_banks)
            m.d.comb += [
                rp.addr.eq(Mux(is_data, d_row, t_row)),
                rp.en.eq(Mux(is_data, self.dat_rd.en & (d_bank == b),
                             self.wt_rd.en & (t_bank == b))),
            ]
            outs.append(rp.data)

        d_data = Signal(bw * 8)
        t_data = Signal(bw * 8)
        with m.Switch(d_sel):
            for b in range(nb):
                with m.Case(b):
                    m.d.comb += d_data.eq(outs[b])
        with m.Switch(t_sel):
            for b in range(nb):
                with m.Case(b):
                    m.d.comb += t_data.eq(outs[b])
        m.d.comb += [self.dat_rd.data.eq(d_data), self.wt_rd.data.eq(t_data)]
        return m

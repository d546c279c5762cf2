"""The convolution buffer (CBUF): banked on-chip SRAM between CDMA and CSC (spec
"Convolution Buffer"; layout contract :mod:`hw.conv.common`).

``cfg.cbuf_banks`` banks, each one :class:`amaranth.lib.memory.Memory` of
``cfg.cbuf_bank_depth`` entries x ``cfg.cbuf_bank_width`` bytes (initialised to zero) with one
byte-enabled write port (granularity 8) and one synchronous read port, so that FPGA tools map
every bank to block RAM. A build with ``cfg.cbuf_ram_width`` builds each bank from lanes of
that many bits instead (one memory per lane, all lanes of a bank addressed alike): the same
behaviour, with each block RAM driving fewer read outputs (an FPGA routing choice).

Ports
    ``wr``      in, :func:`hw.conv.common.cbuf_write_layout` -- one write per cycle, always
                accepted: when ``en``, the bytes of ``data`` selected by ``mask`` go to flat
                entry ``addr`` (bank ``addr // DEPTH``, row ``addr % DEPTH``). A build with
                ``cfg.cbuf_write_regs`` registers the write first: it lands a cycle later.
    ``dat_rd``  the CSC's data read port (:func:`hw.conv.common.cbuf_read_signature`, seen from
                the CBUF): ``en`` + ``addr`` in, ``data`` out one cycle later
                (``1 + cfg.cbuf_data_read_regs`` cycles: 1, a register after the
                multiplexer; 2, also one on the read's ``en`` and ``addr`` before the banks)
                and held until the next read's data.
    ``wt_rd``   the CSC's weight read port, the same with one cycle always.
    ``data_banks`` in, ``D_BANK.DATA_BANK + 1``: banks below it are the data region and read
                through ``dat_rd``; banks at or above it belong to the weight region and are
                read through ``wt_rd``. A port reading a bank of the other region gets no
                read (its ``data`` is then undefined).

Each bank has exactly one read port; its address comes from ``dat_rd`` or ``wt_rd`` by the
bank's region, so both ports read every cycle without conflict. Each port's ``data`` is a
binary multiplexer tree over the bank outputs, steered by the bank number of its last read
(registered, 5 bits on nv_small). A port's read enables every bank of its region at the row
``addr % DEPTH``; only the addressed bank's output reaches ``data`` (the others are read for
nothing and are never selected before their next read), which keeps the address decode off
the block RAM enables.

Read during write: a read and a write of the same entry in one cycle return the old contents
(read before write): a producer announces data (``dat_slices`` / ``wt_bytes`` of
:class:`hw.conv.cdma.Cdma`) only the cycle after its last write is presented. When an entry
holds one memory atom (``memory_atom == cbuf_bank_width``, as nv_small), every write fills
a whole entry that no reader uses before it is complete (the CSC's weight read-ahead past
``wt_bytes`` is discarded), so the banks carry Yosys's ``no_rw_check`` attribute: on an FPGA
such a read is then undefined, and Yosys does not emulate read-before-write across the two
block RAM ports (about 135 LUT4 and 80 FF per bank on ECP5). Yosys's Verilog front end
honours the attribute; its RTLIL front end does not, so the board flow marks such memories'
collisions undefined itself after ``read_rtlil``
(:func:`scripts.board.no_rw_check_commands`). Builds with several atoms per entry keep the
emulation: the CSC may read a weight entry for its complete lanes while the
next atom is written into its other lanes. ``Cbuf(cfg, poison_collisions=True)``
(simulation only) returns the inverted contents for a read of the entry written in the same
cycle; :mod:`tests.test_conv_pipeline` runs the nv_small pipeline with it.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In

from .common import cbuf_read_signature, cbuf_write_layout

__all__ = ["Cbuf"]


class Cbuf(wiring.Component):
    """``Cbuf(cfg)``: the banked convolution buffer (see the module docstring)."""

    def __init__(self, cfg, *, poison_collisions=False):
        self._cfg = cfg
        self._poison = poison_collisions
        super().__init__({
            "wr": In(cbuf_write_layout(cfg)),
            "dat_rd": In(cbuf_read_signature(cfg)),
            "wt_rd": In(cbuf_read_signature(cfg)),
            "data_banks": In(6),
        })
        # whole-entry writes (one memory atom per entry): no read of an entry being written
        # is ever used, so the block RAMs need not read before write (module docstring)
        attrs = {"no_rw_check": True} if cfg.memory_atom == cfg.cbuf_bank_width else {}
        bank_bits = cfg.cbuf_bank_width * 8
        lane_bits = cfg.cbuf_ram_width or bank_bits
        #: the memories of each bank, lane 0 (the low bits of an entry) first
        self.lanes = [[Memory(shape=lane_bits, depth=cfg.cbuf_bank_depth, init=[], attrs=attrs)
                       for _ in range(bank_bits // lane_bits)]
                      for _ in range(cfg.cbuf_banks)]

    def peek(self, ctx, flat):
        """The contents of flat entry ``flat`` in a simulation context (testbench helper)."""
        depth = self._cfg.cbuf_bank_depth
        value = 0
        for i, mem in enumerate(self.lanes[flat // depth]):
            value |= ctx.get(mem.data[flat % depth]) << (i * mem.shape)
        return value

    def elaborate(self, platform):
        m = Module()
        cfg = self._cfg
        nb, depth, bw = cfg.cbuf_banks, cfg.cbuf_bank_depth, cfg.cbuf_bank_width
        rb = (depth - 1).bit_length()          # row bits (depth is a power of two)

        def split(addr):
            return addr[rb:], addr[:rb]        # bank, row

        wr = self.wr
        if cfg.cbuf_write_regs:
            # the write registered once more: the nets to every bank's block RAMs start at
            # these flip-flops, with no logic in front of them
            wr = Signal.like(self.wr, name="wr_r")
            m.d.sync += wr.eq(self.wr)
        d_en, d_addr = self.dat_rd.en, self.dat_rd.addr
        if cfg.cbuf_data_read_regs >= 2:
            # the data port's read registered before the banks: the nets to every bank's
            # address start at flip-flops, and the CSC's address arithmetic ends at them
            d_en, d_addr = Signal(name="dat_en_r"), Signal.like(self.dat_rd.addr,
                                                                name="dat_addr_r")
            m.d.sync += [d_en.eq(self.dat_rd.en), d_addr.eq(self.dat_rd.addr)]
        w_bank, w_row = split(wr.addr)
        d_bank, d_row = split(d_addr)
        t_bank, t_row = split(self.wt_rd.addr)
        d_sel = Signal(range(nb), name="dat_sel")     # bank read by each port, last read
        t_sel = Signal(range(nb), name="wt_sel")
        with m.If(d_en):
            m.d.sync += d_sel.eq(d_bank)
        with m.If(self.wt_rd.en):
            m.d.sync += t_sel.eq(t_bank)

        outs = []
        for b in range(nb):
            hit = wr.en & (w_bank == b)
            wen = Signal(bw, name=f"bank{b}_wen")
            m.d.comb += wen.eq(wr.mask & Mux(hit, (1 << bw) - 1, 0))
            is_data = Signal(name=f"bank{b}_is_data")
            m.d.comb += is_data.eq(b < self.data_banks)
            r_addr = Signal(rb, name=f"bank{b}_raddr")
            r_en = Signal(name=f"bank{b}_ren")
            m.d.comb += [
                r_addr.eq(Mux(is_data, d_row, t_row)),
                # every bank of the port's region reads when the port reads (not only the
                # addressed one): the output multiplexer shows the addressed bank only, and
                # the enable stays off the address decode (the FPGA timing path)
                r_en.eq(Mux(is_data, d_en, self.wt_rd.en)),
            ]
            lanes = self.lanes[b]
            lane_bytes = bw // len(lanes)
            data = []
            for i, mem in enumerate(lanes):
                m.submodules[f"bank{b}" if len(lanes) == 1 else f"bank{b}_lane{i}"] = mem
                wp = mem.write_port(granularity=8)
                rp = mem.read_port()
                bits = slice(i * lane_bytes * 8, (i + 1) * lane_bytes * 8)
                m.d.comb += [wp.addr.eq(w_row), wp.data.eq(wr.data[bits]),
                             wp.en.eq(wen[i * lane_bytes:(i + 1) * lane_bytes]),
                             rp.addr.eq(r_addr), rp.en.eq(r_en)]
                data.append(rp.data)
            outs.append(Cat(*data))

        # each port: a binary multiplexer tree over the bank outputs, steered by the
        # registered bank number of its last read (one level per select bit)
        def select(sel):
            level = list(outs)
            for bit in range(len(sel)):
                level = [Mux(sel[bit], level[i + 1], level[i]) if i + 1 < len(level)
                         else level[i] for i in range(0, len(level), 2)]
            return level[0]

        data = {"dat": select(d_sel), "wt": select(t_sel)}
        if self._poison:
            # simulation check: a read of the entry written in the same cycle returns its
            # inverted contents, standing for the block RAM's undefined result
            for name, en, addr in (("dat", d_en, d_addr),
                                   ("wt", self.wt_rd.en, self.wt_rd.addr)):
                hit = Signal(name=f"{name}_collided")
                with m.If(en):
                    m.d.sync += hit.eq(wr.en & (wr.addr == addr))
                data[name] = Mux(hit, ~data[name], data[name])
        if cfg.cbuf_data_read_regs:
            # the data port's output registered after the multiplexer: data 1 +
            # cbuf_data_read_regs cycles after the read, held until the next read's data
            dat_en1 = Signal(name="dat_en1")
            dat_r = Signal.like(self.dat_rd.data, name="dat_r")
            m.d.sync += dat_en1.eq(d_en)
            with m.If(dat_en1):
                m.d.sync += dat_r.eq(data["dat"])
            data["dat"] = dat_r
        m.d.comb += [self.dat_rd.data.eq(data["dat"]), self.wt_rd.data.eq(data["wt"])]
        return m

"""DmaInterfaces: the memory side of the core, the MCIF on the DBBIF and the CVIF on the SRAMIF
(spec: Memory interface, MCIF / CVIF; System interconnect, DBBIF / SRAMIF).

Every unit's read and write client ports (:mod:`hw.mem.dma`) end here. A request goes to the MCIF
when its ``ram_type`` is MC (1) and to the CVIF when it is CV (0). A build without an SRAMIF
has no CVIF: its CV requests are served by the MCIF (same addresses, on the DBBIF) instead of
hanging, so a unit programmed for CV still completes.

With both interfaces, each client has an order FIFO of its requests (interface and word count):
read words are returned, and write words are taken from the client, in request order even
when consecutive requests go to different interfaces; a client's write ``done`` is the sum of
the two interfaces' completions (0..2 per cycle). A write request for the other interface
waits until every word of the client's earlier write requests has been taken (the two in-order
W channels could otherwise wait on each other through two clients). The order FIFO holds
``order_depth`` requests per client (``min(64, max(16, cfg.outstanding))``); a client with that
many requests in flight waits.

Members (``nr``/``nw`` = number of read/write clients, positions = AXI IDs):

* ``rd_<client>: In(DmaReadPort(geom))``, ``wr_<client>: In(DmaWritePort(geom))``; connect a
  unit's ``Out`` port with ``wiring.connect``.
* ``axi_members("dbb", cfg.address_width, cfg.dbbif_width)`` and, with an SRAMIF,
  ``axi_members("sram", cfg.address_width, cfg.sramif_width)``.
* ``mcif_rd_weight: In(ArrayLayout(8, nr))``, ``mcif_wr_weight: In(ArrayLayout(8, nw))``
  (register fields ``RD_WEIGHT_<CLIENT>`` / ``WR_WEIGHT_<CLIENT>``, reset 1),
  ``mcif_rd_os_cnt: In(8)``, ``mcif_wr_os_cnt: In(8)`` (``CFG_OUTSTANDING_CNT``, reset 255),
  ``mcif_idle: Out(1)`` (``STATUS.IDLE``); the same ``cvif_*`` members with an SRAMIF.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from .axi import axi_members
from .dma import RAM_MC, REQUEST_ATOMS_BITS, DmaGeometry, DmaReadPort, DmaWritePort
from .mcif import Mcif

__all__ = ["DmaInterfaces", "READ_CLIENTS", "WRITE_CLIENTS", "weight_field"]

#: Every client name the core may use, in register-field spelling order.
READ_CLIENTS = ("cdma_dat", "cdma_wt", "sdp", "sdp_b", "sdp_n", "sdp_e", "pdp", "cdp", "bdma",
                "rbk")
WRITE_CLIENTS = ("sdp", "pdp", "cdp", "bdma", "rbk")


def weight_field(client: str, write: bool = False) -> str:
    """The register field holding a client's weight, e.g. ``RD_WEIGHT_SDP_B``."""
    return f"{'WR' if write else 'RD'}_WEIGHT_{client.upper()}"


class DmaInterfaces(wiring.Component):
    """MCIF (+ CVIF) behind the DMA client ports of ``read_clients`` / ``write_clients``."""

    def __init__(self, cfg, read_clients, write_clients):
        self._cfg = cfg
        self._geom = geom = DmaGeometry(cfg)
        self._read_clients, self._write_clients = list(read_clients), list(write_clients)
        self.order_depth = min(64, max(16, cfg.outstanding))
        nr, nw = len(self._read_clients), len(self._write_clients)
        members = {}
        for name in self._read_clients:
            members[f"rd_{name}"] = In(DmaReadPort(geom))
        for name in self._write_clients:
            members[f"wr_{name}"] = In(DmaWritePort(geom))
        members.update(axi_members("dbb", cfg.address_width, cfg.dbbif_width))
        if cfg.sramif:
            members.update(axi_members("sram", cfg.address_width, cfg.sramif_width))
        for iface in ("mcif", "cvif") if cfg.sramif else ("mcif",):
            members.update({
                f"{iface}_rd_weight": In(data.ArrayLayout(8, nr), init=[1] * nr),
                f"{iface}_wr_weight": In(data.ArrayLayout(8, nw), init=[1] * nw),
                f"{iface}_rd_os_cnt": In(8, init=0xff),
                f"{iface}_wr_os_cnt": In(8, init=0xff),
                f"{iface}_idle": Out(1),
            })
        super().__init__(members)

    @property
    def geometry(self) -> DmaGeometry:
        return self._geom

    @property
    def read_clients(self):
        return list(self._read_clients)

    @property
    def write_clients(self):
        return list(self._write_clients)

    def elaborate(self, platform):
        m = Module()
        cfg, geom = self._cfg, self._geom
        ifaces = {"mcif": Mcif(cfg, geom, cfg.dbbif_width, self._read_clients,
                               self._write_clients, prefix="dbb", latency=cfg.dbbif_latency)}
        buses = {"mcif": ("dbb", cfg.dbbif_width)}
        if cfg.sramif:
            ifaces["cvif"] = Mcif(cfg, geom, cfg.sramif_width, self._read_clients,
                                  self._write_clients, prefix="sram", latency=cfg.sramif_latency)
            buses["cvif"] = ("sram", cfg.sramif_width)
        for name, mcif in ifaces.items():
            m.submodules[name] = mcif
            prefix, width = buses[name]
            for member, flow in axi_members(prefix, cfg.address_width, width).items():
                ours, theirs = getattr(self, member), getattr(mcif, member)
                if flow.flow == wiring.Flow.Out:
                    m.d.comb += ours.eq(theirs)
                else:
                    m.d.comb += theirs.eq(ours)
            m.d.comb += [
                mcif.rd_weight.eq(getattr(self, f"{name}_rd_weight")),
                mcif.wr_weight.eq(getattr(self, f"{name}_wr_weight")),
                mcif.rd_os_cnt.eq(getattr(self, f"{name}_rd_os_cnt")),
                mcif.wr_os_cnt.eq(getattr(self, f"{name}_wr_os_cnt")),
                getattr(self, f"{name}_idle").eq(mcif.idle),
            ]

        mc = ifaces["mcif"]
        if not cfg.sramif:
            for name in self._read_clients:
                wiring.connect(m, client=wiring.flipped(getattr(self, f"rd_{name}")),
                               mcif=getattr(mc, f"rd_{name}"))
            for name in self._write_clients:
                wiring.connect(m, client=wiring.flipped(getattr(self, f"wr_{name}")),
                               mcif=getattr(mc, f"wr_{name}"))
            return m

        cv = ifaces["cvif"]
        for name in self._read_clients:
            port, mp, cp = (getattr(x, f"rd_{name}") for x in (self, mc, cv))
            order = self._order(m, f"rd_order_{name}", port, mp, cp)
            ok, to_mc = order.r_rdy, order.to_mc
            m.d.comb += [
                port.resp.valid.eq(ok & Mux(to_mc, mp.resp.valid, cp.resp.valid)),
                port.resp.payload.eq(Mux(to_mc, mp.resp.payload, cp.resp.payload)),
                mp.resp.ready.eq(port.resp.ready & ok & to_mc),
                cp.resp.ready.eq(port.resp.ready & ok & ~to_mc),
            ]
            order.advance(m, port.resp.valid & port.resp.ready)
        for name in self._write_clients:
            port, mp, cp = (getattr(x, f"wr_{name}") for x in (self, mc, cv))
            order = self._order(m, f"wr_order_{name}", port, mp, cp, one_iface=True)
            ok, to_mc = order.r_rdy, order.to_mc
            m.d.comb += [
                mp.dat.payload.eq(port.dat.payload), cp.dat.payload.eq(port.dat.payload),
                mp.dat.valid.eq(port.dat.valid & ok & to_mc),
                cp.dat.valid.eq(port.dat.valid & ok & ~to_mc),
                port.dat.ready.eq(ok & Mux(to_mc, mp.dat.ready, cp.dat.ready)),
                port.done.eq(mp.done + cp.done),
            ]
            order.advance(m, port.dat.valid & port.dat.ready)
        return m

    def _order(self, m, name, port, mp, cp, one_iface=False):
        """Steer ``port.req`` by ram type and queue (interface, words - 1) in request order.

        ``one_iface`` (writes): a request for the other interface waits until the words of
        every earlier request have left. Otherwise an interface could queue a burst whose data
        is stuck behind the other interface's, while the other waits the same way for another
        client: each AXI W channel is in order, so the two would deadlock.
        """
        geom = self._geom
        lane_bits = geom.word_shift - geom.atom_shift
        m.submodules[name] = fifo = SyncFIFOBuffered(width=REQUEST_ATOMS_BITS + 2,
                                                     depth=self.order_depth)
        req = port.req
        to_mc = req.payload.ram_type == RAM_MC
        lane0 = req.payload.addr[geom.atom_shift:geom.word_shift] if lane_bits else 0
        words_m1 = Signal(REQUEST_ATOMS_BITS + 1, name=f"{name}_words")
        room = Signal(name=f"{name}_room")
        if one_iface:
            last_mc = Signal(name=f"{name}_last_mc")
            with m.If(fifo.w_en):
                m.d.sync += last_mc.eq(to_mc)
            m.d.comb += room.eq(fifo.w_rdy & ((fifo.level == 0) | (last_mc == to_mc)))
        else:
            m.d.comb += room.eq(fifo.w_rdy)
        m.d.comb += [
            words_m1.eq((lane0 + req.payload.atoms) >> lane_bits),
            mp.req.payload.eq(req.payload), cp.req.payload.eq(req.payload),
            mp.req.valid.eq(req.valid & room & to_mc),
            cp.req.valid.eq(req.valid & room & ~to_mc),
            req.ready.eq(room & Mux(to_mc, mp.req.ready, cp.req.ready)),
            fifo.w_en.eq(req.valid & req.ready),
            fifo.w_data.eq(Cat(words_m1, to_mc)),
        ]
        return _OrderHead(fifo, name)


class _OrderHead:
    """The head of a client's order FIFO: which interface, and the word count within it."""

    def __init__(self, fifo, name):
        self.fifo = fifo
        self.r_rdy = fifo.r_rdy
        self.to_mc = fifo.r_data[REQUEST_ATOMS_BITS + 1]
        self.count = Signal(REQUEST_ATOMS_BITS + 1, name=f"{name}_count")
        self.last = self.count == fifo.r_data[:REQUEST_ATOMS_BITS + 1]

    def advance(self, m, moved):
        """One word of the head request moved; the request leaves after its last word."""
        with m.If(moved):
            m.d.sync += self.count.eq(Mux(self.last, 0, self.count + 1))
        m.d.comb += self.fifo.r_en.eq(moved & self.last)

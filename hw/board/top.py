"""Board tops for amaranth-boards platforms.

:class:`BoardCore` is everything on the chip, with three pins: the core (:class:`NvdlaCore`),
the UART serial bridge (:class:`hw.bridge.UartRx` / :class:`hw.bridge.UartTx` /
:class:`hw.bridge.SerialHost`, protocol in :mod:`hw.bridge.serial_host`) on ``uart_rx`` /
``uart_tx``, and ``mem_bytes`` of block RAM as the AXI4 slave behind the DBBIF
(:class:`hw.bridge.AxiRam`, shared with the bridge's memory commands). ``irq`` is the core's
interrupt. The bridge's ``RESET`` command resets the core and the memories' AXI side (their
contents stay). The SRAMIF, when the build has one, gets its own block RAM of the same size.

:class:`BoardTop` puts it on a platform: the board's default clock (and reset, where the board
has one) make the ``sync`` domain -- on ECP5 boards, with ``clock_hz`` other than the board's,
through a PLL (:class:`hw.board.pll.Ecp5Pll`) whose lock releases the global reset -- UART 0
carries the bridge, LED 0 shows the interrupt and LED 1 (if any) blinks at about 1 Hz as a
sign of life; on boards with only RGB LEDs (ECPIX-5) red is the interrupt and green the
blink.
"""


from amaranth.hdl import ClockDomain, ClockSignal, DomainRenamer, Elaboratable, Instance, \
    Module, Signal
from amaranth.lib import io, wiring
from amaranth.lib.wiring import In, Out

from ..bridge import AxiRam, SerialHost, UartRx, UartTx, connect_csb
from ..mem.axi import axi_members

__all__ = ["BoardCore", "BoardTop"]


def _connect_axi(m, core, ram, prefix, cfg_width, addr_width):
    for name, member in axi_members(prefix, addr_width, cfg_width).items():
        if member.flow == Out:
            m.d.comb += getattr(ram, name).eq(getattr(core, name))
        else:
            m.d.comb += getattr(core, name).eq(getattr(ram, name))


class BoardCore(wiring.Component):
    """``BoardCore(cfg, mem_bytes, divisor, timeout=None, core=None)``.
    ``divisor`` = clock cycles per UART bit; ``timeout`` (clock cycles of silence that drop a
    partial frame) defaults to 20 byte times; ``core`` replaces the NvdlaCore (tests use a
    small stand-in with the same ports).

    The core and the memories' AXI side run in a local ``core`` domain: the ``sync`` clock,
    and a reset that is one flip-flop (so a register, not a gate, drives its loads: about 16k
    on nv_small), set by the ``sync`` reset and by the bridge's ``RESET`` command, one cycle
    later than either."""

    uart_rx: In(1, init=1)
    uart_tx: Out(1, init=1)
    irq: Out(1)

    def __init__(self, cfg, mem_bytes: int, divisor: int, timeout: int | None = None,
                 core=None):
        self._cfg, self._mem_bytes, self._divisor = cfg, mem_bytes, divisor
        self._timeout = timeout or 200 * divisor
        self._core = core
        super().__init__()

    def elaborate(self, platform):
        from ..core import NvdlaCore
        m = Module()
        cfg = self._cfg
        core = self._core if self._core is not None else NvdlaCore(cfg)
        m.submodules.uart_rx = rx = UartRx(self._divisor)
        m.submodules.uart_tx = tx = UartTx(self._divisor)
        m.submodules.host = host = SerialHost(self._timeout)
        ram = AxiRam(self._mem_bytes, cfg.dbbif_width, cfg.address_width)
        # the bridge's RESET command: a fresh core (the memories keep their contents); the
        # reset is registered so that one flip-flop drives all its loads
        core_rst = Signal(init=1)
        m.d.sync += core_rst.eq(host.core_reset)
        m.domains.core = cd = ClockDomain("core", local=True)
        m.d.comb += [cd.clk.eq(ClockSignal("sync")), cd.rst.eq(core_rst)]
        m.submodules.core = DomainRenamer("core")(core)
        m.submodules.dbb_ram = DomainRenamer("core")(ram)
        m.d.comb += [rx.rx.eq(self.uart_rx), self.uart_tx.eq(tx.tx),
                     host.rx_error.eq(rx.frame_error),
                     host.irq.eq(core.nvdla2core_interrupt),
                     self.irq.eq(core.nvdla2core_interrupt)]
        wiring.connect(m, uart=rx.o, host=host.rx)
        wiring.connect(m, host=host.tx, uart=tx.i)
        connect_csb(m, host, core)
        _connect_axi(m, core, ram, "nvdla_core2dbb", cfg.dbbif_width, cfg.address_width)
        for name in ("mem_valid", "mem_write", "mem_addr", "mem_wdata"):
            m.d.comb += getattr(ram, name).eq(getattr(host, name))
        for name in ("mem_done", "mem_rdata", "mem_error"):
            m.d.comb += getattr(host, name).eq(getattr(ram, name))
        if cfg.sramif:
            sram = AxiRam(self._mem_bytes, cfg.sramif_width, cfg.address_width,
                          prefix="nvdla_core2sram")
            m.submodules.sram_ram = DomainRenamer("core")(sram)
            _connect_axi(m, core, sram, "nvdla_core2sram", cfg.sramif_width, cfg.address_width)
            m.d.comb += sram.mem_valid.eq(0)
        return m


class BoardTop(Elaboratable):
    """``BoardTop(cfg, mem_bytes=65536, baud=115200, bridge_only=False, clock_hz=None)`` on any
    amaranth-boards platform with a ``uart`` and a ``led`` resource. ``bridge_only`` puts
    :class:`hw.board.stub.CsbScratch` in place of the core (host-link bring-up).
    ``clock_hz`` (ECP5 boards): the clock everything runs at, from the board's through an
    ``EHXPLLL`` (the closest setting within 1 %: :func:`hw.board.pll.pll_dividers`; the UART
    divisor and the blink follow it); ``None`` or the board's own frequency: no PLL."""

    def __init__(self, cfg, mem_bytes: int = 65536, baud: int = 115200,
                 bridge_only: bool = False, clock_hz: float | None = None):
        self._cfg, self._mem_bytes, self._baud = cfg, mem_bytes, baud
        self._bridge_only = bridge_only
        self._clock_hz = clock_hz

    def _pll_domain(self, m, platform) -> float:
        """The ``sync`` domain from the board clock through the PLL; returns its frequency.
        As amaranth's own ECP5 ``sync`` domain, it has no reset net: the global set/reset
        (``SGSR``, clocked by the domain) resets every flip-flop while the PLL has not locked
        (or the board's reset button, where it has one, is pressed), through two flip-flops
        on the PLL clock. (A reset net to every flip-flop instead crowded the routing of even
        the bridge-only board: router2 did not converge.)"""
        from .pll import Ecp5Pll
        if getattr(platform, "family", None) != "ecp5":
            raise ValueError(f"clock_hz: a PLL clock is built for ECP5 boards only, not "
                             f"{type(platform).__name__}")
        clk = platform.request(platform.default_clk, dir="-")
        m.submodules.clk_buf = clk_buf = io.Buffer("i", clk)
        m.submodules.pll = pll = Ecp5Pll(platform.default_clk_frequency, self._clock_hz)
        m.d.comb += pll.clk_in.eq(clk_buf.i)
        m.domains.sync = cd = ClockDomain("sync", reset_less=True)
        m.d.comb += cd.clk.eq(pll.clk_out)
        run = pll.locked
        if platform.default_rst is not None:
            button = platform.request(platform.default_rst, dir="-")
            m.submodules.rst_buf = rst_buf = io.Buffer("i", button)
            run = run & ~rst_buf.i
        gsr0, gsr1 = Signal(), Signal()
        m.submodules.gsr_sync0 = Instance("FD1S3AX", p_GSR="DISABLED", i_CK=cd.clk, i_D=run,
                                          o_Q=gsr0)
        m.submodules.gsr_sync1 = Instance("FD1S3AX", p_GSR="DISABLED", i_CK=cd.clk, i_D=gsr0,
                                          o_Q=gsr1)
        m.submodules.sgsr = Instance("SGSR", i_CLK=cd.clk, i_GSR=gsr1)
        return pll.f_out_hz

    def elaborate(self, platform):
        m = Module()
        freq = platform.default_clk_frequency
        if self._clock_hz is not None and self._clock_hz != freq:
            freq = self._pll_domain(m, platform)
        divisor = round(freq / self._baud)
        core = None
        if self._bridge_only:
            from .stub import CsbScratch
            core = CsbScratch(self._cfg)
        m.submodules.board = board = BoardCore(self._cfg, self._mem_bytes, divisor, core=core)

        uart = platform.request("uart", 0, dir={"rx": "-", "tx": "-"})
        m.submodules.rx_buf = rx_buf = io.Buffer("i", uart.rx)
        m.submodules.tx_buf = tx_buf = io.Buffer("o", uart.tx)
        m.d.comb += [board.uart_rx.eq(rx_buf.i), tx_buf.o.eq(board.uart_tx)]

        names = {res[0] for res in platform.resources}
        if "led" in names:
            irq_pin = platform.request("led", 0, dir="-")
            try:
                blink_pin = platform.request("led", 1, dir="-")
            except Exception:                 # boards with a single LED
                blink_pin = None
        else:                                 # RGB LEDs only (ECPIX-5): red = irq, green = blink
            rgb = platform.request("rgb_led", 0, dir={"r": "-", "g": "-", "b": "-"})
            irq_pin, blink_pin = rgb.r, rgb.g
        m.submodules.led_irq = irq_buf = io.Buffer("o", irq_pin)
        m.d.comb += irq_buf.o.eq(board.irq)
        if blink_pin is not None:
            m.submodules.led_blink = blink_buf = io.Buffer("o", blink_pin)
            count = Signal(range(int(freq)))
            blink = Signal()
            with m.If(count == int(freq) // 2 - 1):
                m.d.sync += [count.eq(0), blink.eq(~blink)]
            with m.Else():
                m.d.sync += count.eq(count + 1)
            m.d.comb += blink_buf.o.eq(blink)
        # ULX3S: its FTDI's TX buffer enable
        if ("uart_tx_enable", 0) in platform.resources:
            en = platform.request("uart_tx_enable", 0, dir="-")
            m.submodules.uart_tx_en = en_buf = io.Buffer("o", en)
            m.d.comb += en_buf.o.eq(1)
        return m

"""The convolution pipeline as one golden-core unit: CDMA -> CBUF -> CSC -> CMAC -> CACC, with
the result flying into SDP (and from there into PDP when SDP's output goes there).

A direct-convolution layer starts when the consumer groups of CDMA, CSC, CMAC_A, CMAC_B,
CACC and SDP are enabled (SDP_RDMA too when it is enabled, for SDP operands read from memory).
It completes all of them at once: CDMA raises CDMA_DAT and CDMA_WT done, CACC its done and
SDP its done, as NVDLA does when the layer's last output leaves SDP.
"""

from __future__ import annotations

from sim.core import Launch, UnitModel, Wait

from .cacc import accumulate_fp16, deliver
from .cdma import CbufState, load_cbuf
from .cmac import convolve, convolve_fp16
from .program import FP16, INT8, ConvProgramError, check_batch_delivery, decode
from .winograd import winograd_fp16_psums, winograd_sums

__all__ = ["ConvUnit", "run_conv", "run_conv_fp16_cacc", "check_sdp_precision",
           "check_sdp_winograd"]

BLOCKS = ("CDMA", "CSC", "CMAC_A", "CMAC_B", "CACC")


_PREC_NAMES = ("INT8", "INT16", "FP16")


def check_sdp_precision(p, sdp) -> None:
    """The SDP layer a convolution flies into must process the convolution's precision
    (``sdp``: SDP's register view).

    CACC delivers int32 sums of an integer layer and fp32 values of an fp16 one, in atoms of
    the layer's precision: an int8 layer's 32-channel atom as two 16-element payloads, an
    int16 layer's 16-channel atom as one. SDP groups the payloads by its own
    ``PROC_PRECISION`` (NVDLA's C model, ``SdpDataOperationDC``: 32 elements per atom for INT8,
    16 otherwise), so an int8 layer into an int16 SDP layer (or the reverse) would put the
    channels in the wrong atoms: NVDLA runs no such program meaningfully, and this model
    rejects it rather than compute a result NVDLA would not produce."""
    sdp_prec = sdp.D_DATA_FORMAT.PROC_PRECISION
    if sdp_prec == p.precision:
        return
    if p.precision == FP16 or sdp_prec == FP16:
        kind = "an fp16 convolution delivers fp32" if p.precision == FP16 else \
            "an integer convolution delivers int32 sums"
        rule = "FP16" if p.precision == FP16 else "INT8 or INT16"
    else:
        kind = (f"an {_PREC_NAMES[p.precision].lower()} convolution delivers atoms of "
                f"{32 if p.precision == INT8 else 16} channels, SDP groups them by its own "
                f"precision")
        rule = _PREC_NAMES[p.precision]
    name = _PREC_NAMES[sdp_prec] if sdp_prec < 3 else str(sdp_prec)
    raise ConvProgramError(f"SDP.D_DATA_FORMAT.PROC_PRECISION={name}: {kind}; SDP's "
                           f"processing precision must be {rule}")


def check_sdp_winograd(p, sdp) -> None:
    """SDP's ``D_FEATURE_MODE_CFG.WINOGRAD`` must say what the convolution is: CACC delivers
    a Winograd layer in 2 x 2 tiles, which SDP's Winograd mode puts in place."""
    on = bool(sdp.D_FEATURE_MODE_CFG.WINOGRAD)
    if on != (p.winograd is not None):
        raise ConvProgramError(
            f"SDP.D_FEATURE_MODE_CFG.WINOGRAD={'ON' if on else 'OFF'}: must be "
            f"{'OFF for a direct' if on else 'ON for a Winograd'} convolution "
            "(CDMA.D_MISC_CFG.CONV_MODE)")


def run_conv(core, state: CbufState):
    """Run the convolution of the consumer groups; returns (the cube CACC delivers [B, K, Ho,
    Wo]: int32 sums, or fp32 codes of an fp16 layer; hardware-written fields of the conv
    blocks)."""
    p = decode(core.cfg, *(core.view(b) for b in BLOCKS))
    check_sdp_precision(p, core.view("SDP"))
    check_sdp_winograd(p, core.view("SDP"))
    if p.batches > 1:
        check_batch_delivery(core.cfg, p, core.view("CACC"), core.view("SDP"))
    if p.precision == FP16:
        # the fp cells have no saturation count
        out, sat = _fp16_cacc(core, p, state), 0
    else:
        cube, weights = load_cbuf(core, core.cfg, p, state)
        sums = winograd_sums(p, cube, weights) if p.winograd else convolve(p, cube, weights)
        out, sat = deliver(sums, p.clip_truncate)
    # CDMA's fp16 NaN / infinity input counts (0 in integer layers)
    (dnan, dinf), (wnan, winf) = state.stats["data"], state.stats["weight"]
    written = {
        "CACC": {"D_OUT_SATURATION": {"SAT_COUNT": min(sat, 0xFFFFFFFF)}},
        "CDMA": {"D_NAN_INPUT_DATA_NUM": {"NAN_DATA_NUM": dnan & 0xFFFFFFFF},
                 "D_NAN_INPUT_WEIGHT_NUM": {"NAN_WEIGHT_NUM": wnan & 0xFFFFFFFF},
                 "D_INF_INPUT_DATA_NUM": {"INF_DATA_NUM": dinf & 0xFFFFFFFF},
                 "D_INF_INPUT_WEIGHT_NUM": {"INF_WEIGHT_NUM": winf & 0xFFFFFFFF}},
    }
    return out, written


def _fp16_cacc(core, p, state):
    cube, weights = load_cbuf(core, core.cfg, p, state)
    if p.winograd is not None:
        # CACC folds each output's 4-channel blocks in channel order
        return accumulate_fp16(winograd_fp16_psums(p, cube, weights)[0])
    # one atom of 16-bit elements fills a CBUF entry (Atomic-C of them with two-column
    # entries, as NVDLA's 64-channel fp16 MAC cell on nv_full); a channel group is Atomic-C
    # channels (two entries on bank-row builds)
    atom_c = core.cfg.cbuf_entry_bytes // 2
    psums, _ = convolve_fp16(p, cube, weights, atom_c, max(1, core.cfg.atomic_c // atom_c))
    return accumulate_fp16(psums)


def run_conv_fp16_cacc(core, state: CbufState):
    """An fp16 layer of the consumer groups up to CACC's output: the fp32 codes (int64
    [B, K, Ho, Wo]) CACC delivers to SDP (what :func:`run_conv` hands SDP for such a layer).

    CDMA fetches fp16 features and weights in the int16 layout (2-byte elements; compressed
    weights decompressed at the fetch: CSC's weight decoder marks an element by its value, so
    zeros, packed or not, take no part); with ``D_NAN_FLUSH_TO_ZERO.NAN_TO_ZERO`` the fetched
    NaN features become +0 (:func:`sim.conv.cdma.fetch_feature`)."""
    p = decode(core.cfg, *(core.view(b) for b in BLOCKS))
    if p.precision != FP16:
        raise ConvProgramError("CDMA.D_MISC_CFG.PROC_PRECISION: not an fp16 layer")
    return _fp16_cacc(core, p, state)


class ConvUnit(UnitModel):
    """Golden model of the convolution pipeline (registered as ``"CONV"``)."""

    name = "CONV"
    blocks = BLOCKS

    def install(self, core):
        self.state = CbufState()

    def plan(self, core):
        if not core.has_block("CDMA") or not core.enabled("CDMA"):
            return None
        sdp_unit = core.units.get("SDP")
        if sdp_unit is None:
            return Wait("a convolution layer delivers into SDP, which has no golden model")
        blocks = list(BLOCKS) + ["SDP"]
        if core.has_block("SDP_RDMA") and core.enabled("SDP_RDMA"):
            blocks.append("SDP_RDMA")
        pdp = None
        if core.enabled("SDP"):
            sdp = core.view("SDP")
            if not sdp.D_FEATURE_MODE_CFG.FLYING_MODE:
                return Wait(f"group {core.consumer('CDMA')}: the convolution result flies into "
                            "SDP, but SDP's D_FEATURE_MODE_CFG.FLYING_MODE is OFF")
            if sdp.D_FEATURE_MODE_CFG.OUTPUT_DST:
                pdp = core.units.get("PDP")
                if pdp is None or not hasattr(pdp, "run_flying"):
                    return Wait("SDP's D_FEATURE_MODE_CFG.OUTPUT_DST=PDP needs the PDP golden "
                                "model, which does not exist yet")
                blocks.append("PDP")

        def run():
            out, written = run_conv(core, self.state)
            # one batch flies in as [K, Ho, Wo], several as [B, K, Ho, Wo] (SDP's batch mode)
            sdp_written = sdp_unit.run_layer(core, pdp,
                                             flying_input=out[0] if out.shape[0] == 1 else out)
            # SDP_RDMA's counters count only when it took part (operands from memory)
            written.update({b: f for b, f in sdp_written.items() if b in blocks})
            return written

        return Launch(tuple(blocks), run, "convolution layer")

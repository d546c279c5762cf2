"""Golden model of compressed weights (``D_WEIGHT_FORMAT.WEIGHT_FORMAT=COMPRESSED``): a layer
whose weights come as WGS + WMB + packed non-zero elements convolves exactly as the same layer
with the uncompressed surface (single layers, weight reuse across a pair, int8 and int16),
and every program whose compressed surfaces or registers break a rule is rejected naming the
register field (data-format spec "Sparse Compression option"; NVDLA v1's CDMA rules)."""

from __future__ import annotations

import numpy as np
import pytest

from arch.config import NvdlaConfig
from sim.conv import random_programs as rp
from sim.random_traces import set_fields

NV_LARGE = NvdlaConfig.preset("nv_large")
NV_FULL = NvdlaConfig.preset("nv_full")
NV_SMALL = NvdlaConfig.preset("nv_small")


def _crcs(cfg, directory, name, layers):
    path = rp.write_trace(str(directory), name, layers)
    return rp._golden_crcs(cfg, path, len(layers))


def _geometry(cfg, rng, prec):
    kh, kw = (int(v) for v in rng.integers(1, 5, 2))
    W, H = int(rng.integers(kw, 12)), int(rng.integers(kh, 10))
    ce = cfg.atomic_c // (1 + prec)
    C = int(rng.integers(1, 2 * ce + 5))
    K = int(rng.integers(1, 2 * rp._group_k(cfg, prec) + 5))
    stride = tuple(int(v) for v in rng.integers(1, 3, 2))
    pad = tuple(int(v) for v in rng.integers(0, 2, 4))
    return dict(W=W, H=H, C=C, K=K, kh=kh, kw=kw, stride=stride, pad=pad, prec=prec,
                pad_value=int(rng.integers(-5, 6)) & 0xFFFF)


def _sparse(rng, shape, prec, zeros):
    hi = 1 << (8 * (1 + prec) - 1)
    w = rng.integers(-hi, hi, shape)
    w[rng.random(shape) < zeros] = 0
    if not w.any():
        w.flat[0] = 3
    return w


@pytest.mark.parametrize("cfg", [NV_LARGE, NV_FULL], ids=lambda c: c.name)
def test_compressed_layer_equals_uncompressed(tmp_path, cfg):
    rng = np.random.default_rng(11)
    precs = [0, 1] if "int16" in cfg.data_types else [0]
    sizes = []
    for i in range(12):
        g = _geometry(cfg, rng, precs[i % len(precs)])
        zeros = (0.0, 0.5, 0.9, 0.99)[i % 4]
        hi = 1 << (8 * (1 + g["prec"]) - 1)
        data = rng.integers(-hi, hi, (g["C"], g["H"], g["W"]))
        w = _sparse(rng, (g["K"], g["C"], g["kh"], g["kw"]), g["prec"], zeros)
        clip = 8 * (1 + g["prec"])
        got = {}
        for compress in (False, True):
            layer = rp.conv_layer(cfg, data=data, weights=w, clip=clip, compress=compress, **g)
            crcs, err = _crcs(cfg, tmp_path, f"l{i}_{int(compress)}", [layer])
            assert err is None, err
            got[compress] = crcs
            if compress:
                sizes.append((zeros, layer["info"]["wbytes"],
                              -(-w.size * (1 + g["prec"]) // 128) * 128))
        assert got[True] == got[False], (i, g)
    # compression took place: the sparsest weights are much smaller than the dense surface
    assert all(c < d // 4 or d <= 256 for z, c, d in sizes if z >= 0.99)
    assert all(c <= d for z, c, d in sizes)


def test_compressed_weight_reuse_equals_uncompressed(tmp_path):
    """A compressed first layer keeps its weights (SKIP_WEIGHT_RLS); the second reuses them."""
    cfg = NV_LARGE
    rng = np.random.default_rng(5)
    g = _geometry(cfg, rng, 0)
    d1 = rng.integers(-128, 128, (g["C"], g["H"], g["W"]))
    d2 = rng.integers(-128, 128, (g["C"], g["H"], g["W"]))
    w = _sparse(rng, (g["K"], g["C"], g["kh"], g["kw"]), 0, 0.7)
    got = {}
    for compress in (False, True):
        first = rp.conv_layer(cfg, data=d1, weights=w, clip=8, compress=compress,
                              reuse=(0, 0, 0, 1), **g)
        second = rp.conv_layer(cfg, data=d2, weights=None, emit_weights=False, clip=8,
                               compress=compress, reuse=(0, 1, 0, 0), slot=1,
                               weight_base=first["info"]["weight_base"],
                               weight_bytes=first["info"]["wbytes"],
                               banks=first["info"]["banks"], **g)
        crcs, err = _crcs(cfg, tmp_path, f"pair{int(compress)}", [first, second])
        assert err is None, err
        got[compress] = crcs
    assert got[True] == got[False]


def test_random_compressed_programs_pass_on_golden(tmp_path):
    """The generator's compressed programs (single layers and reuse pairs, int8 and int16 on
    nv_full) are valid: the golden model accepts every one."""
    rng = np.random.default_rng(2)
    n = 0
    while n < 24:
        cfg = (NV_LARGE, NV_FULL)[n % 2]
        try:
            layers = rp.random_pair(cfg, rng, 60_000, compress=True) if n % 3 else \
                [rp.random_program(cfg, rng, 60_000, 0, compress=True)]
        except rp._Redraw:
            continue
        assert all(layer["info"]["compress"] for layer in layers)
        crcs, err = _crcs(cfg, tmp_path, f"r{n}", layers)
        assert err is None, err
        n += 1


# ------------------------------------------------------------------------------------------
# invalid compressed programs: the golden model names the field and the rule
# ------------------------------------------------------------------------------------------
def _base(cfg=NV_LARGE, **over):
    rng = np.random.default_rng(3)
    spec = dict(W=5, H=4, C=70, K=40, kh=2, kw=2, prec=0)
    spec.update(over)
    data = rng.integers(-128, 128, (spec["C"], spec["H"], spec["W"]))
    w = _sparse(rng, (spec["K"], spec["C"], spec["kh"], spec["kw"]), spec["prec"], 0.6)
    return rp.conv_layer(cfg, data=data, weights=w, clip=6, compress=True, **spec)


def _image(layer, base):
    return next(img for a, img, _ in layer["images"] if a == base)


def _wgs_corrupt(cfg, layers):
    _image(layers[0], rp._BASES["wgs"])[0] ^= 1


def _wmb_corrupt(cfg, layers):
    _image(layers[0], rp._BASES["wmb"])[0] ^= 1


def _wmb_tail_bit(cfg, layers):
    wmb = _image(layers[0], rp._BASES["wmb"])
    wmb[-1] |= 0x80


def _weight_bytes_short(cfg, layers):
    n = layers[0]["info"]["wbytes"]
    for b in ("CDMA", "CSC"):
        set_fields(cfg, layers[0], b, "D_WEIGHT_BYTES", WEIGHT_BYTES=0)
    assert n


def _fields(block, reg, **f):
    def m(cfg, layers):
        set_fields(cfg, layers[0], block, reg, **f)
    return m


def _both(reg, **f):
    def m(cfg, layers):
        for b in ("CDMA", "CSC"):
            set_fields(cfg, layers[0], b, reg, **f)
    return m


def _all_banks(cfg, layers):
    d, _ = layers[0]["info"]["banks"]
    for b in ("CDMA", "CSC"):
        set_fields(cfg, layers[0], b, "D_BANK", DATA_BANK=d - 1, WEIGHT_BANK=cfg.cbuf_banks - d - 1)


INVALID = {
    "wgs_mismatch": (_wgs_corrupt, "CDMA.D_WGS_ADDR_LOW.WGS_ADDR_LOW"),
    "wmb_mismatch": (_wmb_corrupt, "CDMA.D_WGS_ADDR_LOW.WGS_ADDR_LOW"),
    "wmb_tail_bit": (_wmb_tail_bit, "CDMA.D_WMB_ADDR_LOW.WMB_ADDR_LOW"),
    "wmb_bytes": (_both("D_WMB_BYTES", WMB_BYTES=0), "CDMA.D_WMB_BYTES.WMB_BYTES"),
    "csc_wmb_bytes": (_fields("CSC", "D_WMB_BYTES", WMB_BYTES=0), "CDMA.D_WMB_BYTES.WMB_BYTES"),
    "csc_format": (_fields("CSC", "D_WEIGHT_FORMAT", WEIGHT_FORMAT=0),
                   "CDMA.D_WEIGHT_FORMAT.WEIGHT_FORMAT"),
    "no_weight_bytes": (_weight_bytes_short, "CDMA.D_WEIGHT_BYTES.WEIGHT_BYTES=0"),
    "mask_bank": (_all_banks, "CDMA.D_BANK.WEIGHT_BANK"),
    "wgs_unaligned": (_fields("CDMA", "D_WGS_ADDR_LOW", WGS_ADDR_LOW=(rp._BASES["wgs"] + 32) >> 5),
                      "CDMA.D_WGS_ADDR_LOW.WGS_ADDR_LOW"),
}


@pytest.mark.parametrize("name", sorted(INVALID))
def test_invalid_compressed_program_names_the_field(tmp_path, name):
    mutate, field = INVALID[name]
    layers = [_base()]
    ok, err = _crcs(NV_LARGE, tmp_path, "base", layers)
    assert err is None, err
    mutate(NV_LARGE, layers)
    crcs, err = _crcs(NV_LARGE, tmp_path, name, layers)
    assert crcs is None and field in err, err


def test_compressed_on_a_build_without_compression_is_rejected(tmp_path):
    layer = _base(NV_SMALL, C=10, K=9)
    crcs, err = _crcs(NV_SMALL, tmp_path, "small", [layer])
    assert crcs is None
    assert "CDMA.D_WEIGHT_FORMAT.WEIGHT_FORMAT=COMPRESSED" in err and "no weight compression" in err


def test_weight_reuse_across_formats_is_rejected(tmp_path):
    """NVDLA's CDMA: reusing kept weights across a change of weight format is a config error."""
    cfg = NV_LARGE
    rng = np.random.default_rng(9)
    g = dict(W=4, H=3, C=40, K=8, kh=1, kw=1, prec=0)
    w = _sparse(rng, (8, 40, 1, 1), 0, 0.5)
    for first_c in (False, True):
        first = rp.conv_layer(cfg, data=rng.integers(-9, 9, (40, 3, 4)), weights=w, clip=4,
                              compress=first_c, reuse=(0, 0, 0, 1), banks=(1, 4), **g)
        second = rp.conv_layer(cfg, data=rng.integers(-9, 9, (40, 3, 4)), weights=None,
                               emit_weights=False, clip=4, compress=not first_c,
                               reuse=(0, 1, 0, 0), slot=1, banks=first["info"]["banks"],
                               weight_base=first["info"]["weight_base"],
                               weight_bytes=first["info"]["wbytes"], **g)
        crcs, err = _crcs(cfg, tmp_path, f"x{int(first_c)}", [first, second])
        assert crcs is None and "WEIGHT_REUSE=ENABLE" in err and "D_WEIGHT_FORMAT" in err, err


def test_compressed_groups_need_only_their_compressed_size(tmp_path):
    """NVDLA keeps compressed kernel groups in the CBUF: a group of 4608 bytes uncompressed
    whose compressed size fits one 4096-byte weight bank is valid and convolves as the
    uncompressed layer on more banks. This core's RTL expands the weights into the CBUF, so
    :func:`check_core_limits` (not the golden model) rejects it, naming the bank field; a
    compressed group over the banks is rejected by both, at the fetch."""
    from arch.registers import register_map
    from sim.conv.core_limits import check_core_limits
    from sim.conv.program import ConvProgramError, decode
    from sim.regs import GroupView
    cfg = NV_SMALL.replace(name="nv_small_wc", weight_compression=True)
    rng = np.random.default_rng(4)
    g = dict(W=3, H=3, C=64, K=16, kh=3, kw=3, prec=0)       # groups of 8 x 576 bytes
    data = rng.integers(-128, 128, (g["C"], g["H"], g["W"]))
    crcs = {}
    for zeros, compress, banks in ((0.9, True, (1, 1)), (0.9, False, (1, 3)),
                                   (0.0, True, (1, 1))):
        w = _sparse(np.random.default_rng(7), (g["K"], g["C"], 3, 3), 0, zeros)
        layer = rp.conv_layer(cfg, data=data, weights=w, clip=6, compress=compress,
                              banks=banks, **g)
        crcs[zeros, compress], err = _crcs(cfg, tmp_path, f"z{zeros}_{compress}", [layer])
        if zeros == 0.0:
            assert crcs[zeros, compress] is None and "WEIGHT_BANK=0: compressed kernel group" in err
            continue
        assert err is None, err
        if compress:
            rmap = register_map(cfg)
            views = [GroupView(rmap[b], layer["regs"][b])
                     for b in ("CDMA", "CSC", "CMAC_A", "CMAC_B", "CACC")]
            with pytest.raises(ConvProgramError, match=r"CDMA\.D_BANK\.WEIGHT_BANK=0: "
                               r"compressed weights are expanded.*limit of this core"):
                check_core_limits(cfg, decode(cfg, *views))
    assert crcs[0.9, True] == crcs[0.9, False]

"""CFGROM: the read-only capability block of the small register layout, computed from a build.

The ROM is a list of unit descriptors walked by software: HW version, then for each sub-unit
a descriptor word ``(payload length << 16) | unit id`` followed by its payload (capability
bits and sizing parameters), then an end-of-list word. Units the build does not have are
left out of the list; a second CIF descriptor describes the SRAMIF when the build has one.
For the nv_small preset the result equals NVDLA's nv_small ROM register for register
(checked against ../shared/nvdla/registers/nv_small.json by tests/test_registers.py).
"""

from __future__ import annotations

from .config import PACKED_IMAGE_FORMATS, SEMI_PLANAR_IMAGE_FORMATS

__all__ = ["cfgrom_entries", "cfgrom_block", "UNIT_IDS"]

UNIT_IDS = {"GLB": 1, "CIF": 2, "CDMA": 3, "CBUF": 4, "CSC": 5, "CMAC": 6, "CACC": 7,
            "SDP_RDMA": 8, "SDP": 9, "PDP_RDMA": 10, "PDP": 11, "CDP_RDMA": 12, "CDP": 13,
            "BDMA": 14, "RUBIK": 15}

# Payload lengths as NVDLA's ROM states them in each descriptor (bytes).
_PAYLOAD_LEN = {"GLB": 0, "CIF": 0x18, "CDMA": 0x34, "CBUF": 0x18, "CSC": 0x30, "CMAC": 0x1C,
                "CACC": 0x20, "SDP_RDMA": 0x0E, "SDP": 0x20, "PDP_RDMA": 0x0E, "PDP": 0x10,
                "CDP_RDMA": 0x0E, "CDP": 0x10, "BDMA": 0x04, "RUBIK": 0x04}

# Data-type capability bits (INT8 is bit 4 in NVDLA's ROM; the others keep its order).
_TYPE_BITS = {"int8": 1 << 4, "int16": 1 << 6, "fp16": 1 << 10}


def _types(cfg):
    v = 0
    for t in cfg.data_types:
        v |= _TYPE_BITS[t]
    return v


def _mask(names, chosen):
    return sum(1 << i for i, n in enumerate(names) if n in chosen)


def cfgrom_entries(cfg):
    """[(register name, field name, msb, lsb, value)] in ROM order, offsets 0, 4, 8, ..."""
    from .registers import raw_table
    small_base = {name: entry[1] for name, entry in raw_table().items()}

    def slot(block):                      # "CDMA_ID": the 4 KiB slot of a unit's registers
        return small_base[block] >> 12

    image_in = bool(cfg.image_packed_formats or cfg.image_semi_formats)
    conv_compat = (int(cfg.winograd) | int(cfg.batching) << 1 | int(cfg.weight_compression) << 3
                   | int(image_in) << 4)
    batch_max = cfg.max_batch if cfg.batching else 0
    types = _types(cfg)
    out = []

    def add(name, value, msb=31, lsb=0, field=None):
        out.append((f"CFGROM_{name}", field or name, msb, lsb, value))

    def desc(prefix, unit):
        add(f"{prefix}_DESC", _PAYLOAD_LEN[unit] << 16 | UNIT_IDS[unit])
        add(f"{prefix}_CAP_INCOMPAT", 0)

    add("HW_VERSION", 0x00010001)
    add("GLB_DESC", UNIT_IDS["GLB"])
    cifs = [("CIF", False, cfg.dbbif_width, cfg.dbbif_latency)]
    if cfg.sramif:
        cifs.append(("CIF1", True, cfg.sramif_width, cfg.sramif_latency))
    for prefix, is_sram, width, latency in cifs:
        desc(prefix, "CIF")
        add(f"{prefix}_CAP_COMPAT", int(is_sram))
        add(f"{prefix}_BASE_WIDTH", width // 8, 7, 0)
        add(f"{prefix}_BASE_LATENCY", latency)
        add(f"{prefix}_BASE_BURST_LENGTH_MAX", cfg.max_burst_length, 31, 5,
            "BASE_BURST_LENGTH_MAX")
        add(f"{prefix}_BASE_MEM_ADDR_WIDTH", cfg.address_width, 31, 5)
    desc("CDMA", "CDMA")
    add("CDMA_CAP_COMPAT", conv_compat)
    add("CDMA_BASE_FEATURE_TYPES", types, 11, 0)
    add("CDMA_BASE_WEIGHT_TYPES", types, 11, 0)
    add("CDMA_BASE_ATOMIC_C", cfg.atomic_c)
    add("CDMA_BASE_ATOMIC_K", cfg.atomic_k)
    add("CDMA_BASE_ATOMIC_M", cfg.memory_atom)
    add("CDMA_BASE_CBUF_BANK_NUM", cfg.cbuf_banks)
    add("CDMA_BASE_CBUF_BANK_WIDTH", cfg.cbuf_bank_width)
    add("CDMA_BASE_CBUF_BANK_DEPTH", cfg.cbuf_bank_depth)
    add("CDMA_MULTI_BATCH_MAX", batch_max)
    add("CDMA_IMAGE_IN_FORMATS_PACKED", _mask(PACKED_IMAGE_FORMATS, cfg.image_packed_formats))
    add("CDMA_IMAGE_IN_FORMATS_SEMI", _mask(SEMI_PLANAR_IMAGE_FORMATS, cfg.image_semi_formats))
    desc("CBUF", "CBUF")
    add("CBUF_CAP_COMPAT", 0)
    add("CBUF_BASE_CBUF_BANK_NUM", cfg.cbuf_banks)
    add("CBUF_BASE_CBUF_BANK_WIDTH", cfg.cbuf_bank_width)
    add("CBUF_BASE_CBUF_BANK_DEPTH", cfg.cbuf_bank_depth)
    add("CBUF_BASE_CDMA_ID", slot("CDMA"))
    desc("CSC", "CSC")
    add("CSC_CAP_COMPAT", conv_compat)
    add("CSC_BASE_FEATURE_TYPES", types, 11, 0)
    add("CSC_BASE_WEIGHT_TYPES", types, 11, 0)
    add("CSC_BASE_ATOMIC_C", cfg.atomic_c)
    add("CSC_BASE_ATOMIC_K", cfg.atomic_k)
    add("CSC_BASE_ATOMIC_M", cfg.memory_atom)
    add("CSC_BASE_CBUF_BANK_NUM", cfg.cbuf_banks)
    add("CSC_BASE_CBUF_BANK_WIDTH", cfg.cbuf_bank_width)
    add("CSC_BASE_CBUF_BANK_DEPTH", cfg.cbuf_bank_depth)
    add("CSC_BASE_CDMA_ID", slot("CDMA"))
    add("CSC_MULTI_BATCH_MAX", batch_max)
    for cmac in ("CMAC_A", "CMAC_B"):
        desc(cmac, "CMAC")
        add(f"{cmac}_CAP_COMPAT", conv_compat)
        add(f"{cmac}_BASE_FEATURE_TYPES", types, 11, 0)
        add(f"{cmac}_BASE_WEIGHT_TYPES", types, 11, 0)
        add(f"{cmac}_BASE_ATOMIC_C", cfg.atomic_c)
        add(f"{cmac}_BASE_ATOMIC_K", cfg.atomic_k)
        add(f"{cmac}_BASE_CDMA_ID", slot("CDMA"))
    desc("CACC", "CACC")
    add("CACC_CAP_COMPAT", int(cfg.winograd) | int(cfg.batching) << 1)
    add("CACC_BASE_FEATURE_TYPES", types, 11, 0)
    add("CACC_BASE_WEIGHT_TYPES", types, 11, 0)
    add("CACC_BASE_ATOMIC_C", cfg.atomic_c)
    add("CACC_BASE_ATOMIC_K", cfg.atomic_k)
    add("CACC_BASE_CDMA_ID", slot("CDMA"))
    add("CACC_MULTI_BATCH_MAX", batch_max)
    desc("SDP_RDMA", "SDP_RDMA")
    add("SDP_RDMA_CAP_COMPAT", 0)
    add("SDP_RDMA_BASE_ATOMIC_M", cfg.memory_atom)
    add("SDP_RDMA_BASE_SDP_ID", slot("SDP"))
    desc("SDP", "SDP")
    add("SDP_CAP_COMPAT", int(cfg.winograd) | int(cfg.batching) << 1 | int(cfg.sdp_lut) << 2
        | int(cfg.sdp_bs) << 3 | int(cfg.sdp_bn) << 4 | int(cfg.sdp_ew) << 5)
    add("SDP_BASE_FEATURE_TYPES", types, 11, 0)
    add("SDP_BASE_WEIGHT_TYPES", types, 11, 0)
    add("SDP_BASE_CDMA_ID", slot("CDMA"))
    add("SDP_MULTI_BATCH_MAX", batch_max)
    add("SDP_BS_THROUGHPUT", cfg.sdp_bs_throughput)
    add("SDP_BN_THROUGHPUT", cfg.sdp_bn_throughput)
    add("SDP_EW_THROUGHPUT", cfg.sdp_ew_throughput)
    for unit, tp in (("PDP", cfg.pdp_throughput), ("CDP", cfg.cdp_throughput)):
        if not tp:
            continue
        desc(f"{unit}_RDMA", f"{unit}_RDMA")
        add(f"{unit}_RDMA_CAP_COMPAT", 0)
        add(f"{unit}_RDMA_BASE_ATOMIC_M", cfg.memory_atom)
        add(f"{unit}_RDMA_BASE_{unit}_ID", slot(unit))
        desc(unit, unit)
        add(f"{unit}_CAP_COMPAT", 0)
        add(f"{unit}_BASE_FEATURE_TYPES", types, 11, 0)
        add(f"{unit}_BASE_THROUGHPUT", tp)
    if cfg.bdma:
        desc("BDMA", "BDMA")
    if cfg.rubik:
        desc("RUBIK", "RUBIK")
    add("END_OF_LIST", 0)
    return out


def cfgrom_block(cfg):
    """The CFGROM as a :class:`arch.registers.Block` of constant registers at 0x0."""
    from .registers import Block, Field, Register
    regs = tuple(Register(name, 4 * i, (Field(fname, msb, lsb, "const", value),))
                 for i, (name, fname, msb, lsb, value) in enumerate(cfgrom_entries(cfg)))
    return Block("CFGROM", 0, regs)

"""Register fields as the byte values the DMAs take: address and stride fields (the full
register layout stores them from bit 5, the small one from bit 0), base addresses split into
``_LOW`` / ``_HIGH`` registers, and a cube's base address with its line and surface strides.

    base, line_stride, surface_stride = cube_address(R, rmap["SDP_RDMA"], "SRC", addr_width)

``view`` is a unit's view of its register group (``fields_layout`` of the block's
registers), ``block`` the block's register table entry (for the field positions).
"""

from amaranth.hdl import Cat, Const

__all__ = ["byte_value", "base_address", "cube_address"]


def byte_value(view, block, reg, fld):
    """Field ``fld`` of register ``reg`` as a byte value: a field stored from bit ``lsb > 0``
    gets its ``lsb`` zero bits back."""
    f = block[reg][fld]
    v = view[reg][fld]
    return Cat(Const(0, f.lsb), v) if f.lsb else v


def split_address(view, block, low_reg, low_fld, high_reg, high_fld, addr_width):
    """The byte address in field ``low_fld`` of ``low_reg``, with ``high_fld`` of ``high_reg``
    above it on builds with more than 32 address bits."""
    low = byte_value(view, block, low_reg, low_fld)
    return Cat(low, view[high_reg][high_fld]) if addr_width > 32 else low


def base_address(view, block, name, addr_width):
    """The byte address ``D_<name>_BASE_ADDR_LOW``, with ``D_<name>_BASE_ADDR_HIGH`` above it
    on builds with more than 32 address bits."""
    return split_address(view, block, f"D_{name}_BASE_ADDR_LOW", f"{name}_BASE_ADDR_LOW",
                         f"D_{name}_BASE_ADDR_HIGH", f"{name}_BASE_ADDR_HIGH", addr_width)


def cube_address(view, block, name, addr_width):
    """``(base address, line stride, surface stride)`` in bytes of the cube the registers
    ``D_<name>_BASE_ADDR_*``, ``D_<name>_LINE_STRIDE`` and ``D_<name>_SURFACE_STRIDE``
    describe."""
    return (base_address(view, block, name, addr_width),
            byte_value(view, block, f"D_{name}_LINE_STRIDE", f"{name}_LINE_STRIDE"),
            byte_value(view, block, f"D_{name}_SURFACE_STRIDE", f"{name}_SURFACE_STRIDE"))

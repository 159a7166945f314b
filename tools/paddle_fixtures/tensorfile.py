"""Fluid's LoDTensor stream format (one record), written and read with numpy
alone, so fixtures do not depend on Paddle's private helpers."""
import struct
import numpy as np

# Fluid's VarType codes
DTYPES = {np.dtype('bool'): 0, np.dtype('int16'): 1, np.dtype('int32'): 2, np.dtype('int64'): 3,
          np.dtype('float16'): 4, np.dtype('float32'): 5, np.dtype('float64'): 6,
          np.dtype('uint8'): 20, np.dtype('int8'): 21}
CODES = {v: k for k, v in DTYPES.items()}


def _varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tensor_desc(dtype_code, dims):
    # TensorDesc { required Type data_type = 1; repeated int64 dims = 2; }
    out = b'\x08' + _varint(dtype_code)
    for d in dims:
        out += b'\x10' + _varint(int(d))
    return out


def record(arr, lod=None):
    arr = np.require(arr, requirements='C')   # ascontiguousarray would make a 0-D array 1-D
    out = struct.pack('<I', 0)
    levels = lod or []
    out += struct.pack('<Q', len(levels))
    for level in levels:
        out += struct.pack('<Q', 8 * len(level)) + struct.pack('<%dQ' % len(level), *level)
    out += struct.pack('<I', 0)
    desc = tensor_desc(DTYPES[arr.dtype], arr.shape)
    out += struct.pack('<i', len(desc)) + desc
    return out + arr.tobytes()


def write(path, arr, lod=None):
    with open(path, 'wb') as f:
        f.write(record(arr, lod))


def _read_varint(b, i):
    n = shift = 0
    while True:
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return n, i


def read_records(data):
    """Every record of a file (a combined file holds several), as (array, lod)."""
    out, at = [], 0
    while at < len(data):
        (ver,) = struct.unpack_from('<I', data, at); at += 4
        assert ver == 0, 'record version %d' % ver
        (levels,) = struct.unpack_from('<Q', data, at); at += 8
        lod = []
        for _ in range(levels):
            (nbytes,) = struct.unpack_from('<Q', data, at); at += 8
            lod.append(list(struct.unpack_from('<%dQ' % (nbytes // 8), data, at))); at += nbytes
        at += 4
        (dlen,) = struct.unpack_from('<i', data, at); at += 4
        desc, i, code, dims = data[at:at + dlen], 0, None, []
        while i < len(desc):
            key, i = _read_varint(desc, i)
            if key >> 3 == 1:
                code, i = _read_varint(desc, i)
            elif key & 7 == 2:   # packed dims
                ln, i = _read_varint(desc, i)
                end = i + ln
                while i < end:
                    d, i = _read_varint(desc, i); dims.append(d)
            else:
                d, i = _read_varint(desc, i); dims.append(d)
        at += dlen
        dt = CODES[code]
        n = int(np.prod(dims)) if dims else 1
        arr = np.frombuffer(data, dtype=dt, count=n, offset=at).reshape(dims)
        at += n * dt.itemsize
        if data[at:at + 4] == b'OARC':   # oar's checksum trailer (files of one record)
            at += 12
        out.append((arr, lod))
    return out

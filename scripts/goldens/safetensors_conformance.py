"""Which crafted safetensors headers the reference implementation (the Rust crate, through the
Python `safetensors` package) accepts and which it refuses; test/unit/safetensors_conformance.test.ts
holds the same cases with the verdicts printed here. Not run by CI:

    python3 scripts/goldens/safetensors_conformance.py

Each case is a header text and a data section length; a verdict is 'accept' when safe_open
opens the file (the header passes validation), else 'refuse' with the reference's message.
"""
import json
import os
import struct
import sys
import tempfile

import safetensors
from safetensors import safe_open

# (label, header text, data bytes)
CASES = [
    ('plain F32', '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', 8),
    ('shape 2.0', '{"a":{"dtype":"F32","shape":[2.0],"data_offsets":[0,8]}}', 8),
    ('shape 2e0', '{"a":{"dtype":"F32","shape":[2e0],"data_offsets":[0,8]}}', 8),
    ('shape 2E0', '{"a":{"dtype":"F32","shape":[2E0],"data_offsets":[0,8]}}', 8),
    ('shape -0', '{"a":{"dtype":"F32","shape":[-0],"data_offsets":[0,0]}}', 0),
    ('shape -1', '{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}}', 0),
    ('offset 8.0', '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8.0]}}', 8),
    ('offset 8e0', '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8e0]}}', 8),
    ('offset -0', '{"a":{"dtype":"F32","shape":[2],"data_offsets":[-0,8]}}', 8),
    ('offset 0.0', '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0.0,8]}}', 8),
    ('BOM before header', '\ufeff{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', 8),
    ('leading space', ' {"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', 8),
    ('trailing spaces', '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}   ', 8),
    ('duplicate __metadata__', '{"__metadata__":{"x":"1"},"__metadata__":{"y":"2"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', 8),
    ('duplicate tensor name', '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', 8),
    ('duplicate field in an entry', '{"a":{"dtype":"F32","dtype":"F32","shape":[2],"data_offsets":[0,8]}}', 8),
    ('__metadata__ null', '{"__metadata__":null,"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', 8),
    ('__metadata__ number value', '{"__metadata__":{"x":1},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', 8),
    ('extra field in an entry', '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":1}}', 8),
    ('unknown dtype', '{"a":{"dtype":"F12","shape":[2],"data_offsets":[0,8]}}', 8),
    ('C64 [1]', '{"a":{"dtype":"C64","shape":[1],"data_offsets":[0,8]}}', 8),
    ('F8_E8M0 [3]', '{"a":{"dtype":"F8_E8M0","shape":[3],"data_offsets":[0,3]}}', 3),
    ('F8_E4M3FNUZ [3]', '{"a":{"dtype":"F8_E4M3FNUZ","shape":[3],"data_offsets":[0,3]}}', 3),
    ('F8_E5M2FNUZ [3]', '{"a":{"dtype":"F8_E5M2FNUZ","shape":[3],"data_offsets":[0,3]}}', 3),
    ('F4 [2]', '{"a":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}}', 1),
    ('F4 [4, 2]', '{"a":{"dtype":"F4","shape":[4,2],"data_offsets":[0,4]}}', 4),
    ('F4 [3]', '{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}', 2),
    ('F4 [3] one byte', '{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,1]}}', 1),
    ('F6_E2M3 [4]', '{"a":{"dtype":"F6_E2M3","shape":[4],"data_offsets":[0,3]}}', 3),
    ('F6_E3M2 [4]', '{"a":{"dtype":"F6_E3M2","shape":[4],"data_offsets":[0,3]}}', 3),
    ('F6_E2M3 [2]', '{"a":{"dtype":"F6_E2M3","shape":[2],"data_offsets":[0,2]}}', 2),
    ('F6_E3M2 [4] four bytes', '{"a":{"dtype":"F6_E3M2","shape":[4],"data_offsets":[0,4]}}', 4),
    ('lone surrogate escape', '{"__metadata__":{"x":"\\ud800"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', 8),
    ('paired surrogate escape', '{"__metadata__":{"x":"\\ud83d\\ude00"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', 8),
    ('duplicate key inside __metadata__', '{"__metadata__":{"x":"1","x":"2"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', 8),
    ('missing data_offsets', '{"a":{"dtype":"F32","shape":[2]}}', 8),
    ('empty header', '{}', 0),
    ('NUL padding after the JSON', '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}\x00\x00', 8),
    ('tab and newline padding', '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}\t\n', 8),
    ('nested too deep in metadata', '{"__metadata__":{"x":' + '[' * 200 + ']' * 200 + '},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}', 8),
    ('F4 [0]', '{"a":{"dtype":"F4","shape":[0],"data_offsets":[0,0]}}', 0),
    ('F4 beside F32', '{"q":{"dtype":"F4","shape":[2],"data_offsets":[0,1]},"w":{"dtype":"F32","shape":[1],"data_offsets":[1,5]}}', 5),
]


def verdict(header: str, data: int):
    raw = header.encode('utf-8')
    with tempfile.NamedTemporaryFile(suffix='.safetensors', delete=False) as f:
        f.write(struct.pack('<Q', len(raw)) + raw + bytes(data))
        path = f.name
    try:
        with safe_open(path, framework='numpy') as st:
            return ['accept', sorted(st.keys()), st.metadata()]
    except Exception as e:  # the reference's refusal, whatever its type
        return ['refuse', str(e).splitlines()[0][:120]]
    finally:
        os.unlink(path)


if __name__ == '__main__':
    print(f'# safetensors {safetensors.__version__}', file=sys.stderr)
    for label, header, data in CASES:
        print(json.dumps([label, *verdict(header, data)]))

#!/usr/bin/python3
"""Writes a large .xmd for an existing array (made by `drx create A --type u8
--shape 1 --chunk 1`), the way a user who can write the store could:

  xmd_gen.py hostile FILE [BYTES]   attrs list with ~1.2 million tiny entries
                                    (invalid: more than 1024 attributes)
  xmd_gen.py junk FILE [BYTES]      same entries under an unknown key
  xmd_gen.py values FILE [BYTES]    valid: u8 attributes of 65536 values "0",
                                    as many as BYTES holds (the most libconfig
                                    elements a valid file can have)
  xmd_gen.py strings FILE           valid: 1024 string attributes, each as long
                                    as fits (the 64 MiB bound holds the file)
  xmd_gen.py records FILE N         valid: N growth records, rank 2 (create
                                    it --shape 1x1 --chunk 1x1), no two merged

BYTES defaults to 64 MiB minus 4 KiB (under DRX_XMD_MAX_BYTES)."""
import sys

MAX = (64 << 20) - 4096
HEAD = '''version = 2;
type = "u8";
rank = 1;
chunk = [ 1L ];
bounds = [ 1L ];
initial = [ 1L ];
dims = [ "" ];
fill = "0";
'''
TAIL = '''chunk_count = 1L;
history = ( );
axial = ( ( { start = 0L; addr = 0L; coef = [ 1L ]; } ) );
'''


def entries(key, budget):
    one = '{name="a";type="u8";value=["1"];},\n'
    n = (budget - 64) // len(one)
    return key + ' = (\n' + one * (n - 1) + one[:-2] + '\n);\n'


def values(budget):
    row = ', '.join(['"0"'] * 65536)
    parts, used, i = [], 0, 0
    while True:
        p = '  { name = "v%d"; type = "u8"; value = [ %s ]; }' % (i, row)
        if used + len(p) + 2 > budget:
            break
        parts.append(p)
        used += len(p) + 2
        i += 1
    return 'attrs = (\n' + ',\n'.join(parts) + '\n);\n'


def strings(budget):
    each = min(65536, (budget // 1024) - 48)
    parts = ['  { name = "s%d"; type = "string"; value = "%s"; }' % (i, 'x' * each)
             for i in range(1024)]
    return 'attrs = (\n' + ',\n'.join(parts) + '\n);\n'


def main():
    mode, path = sys.argv[1], sys.argv[2]
    arg = int(sys.argv[3]) if len(sys.argv) > 3 else MAX
    budget = arg - len(HEAD) - len(TAIL) - 4096
    with open(path, 'w') as f:
        if mode == 'records':
            # rank 2, the dimensions in turn: no two growths merge, each
            # one a history entry and an axial record in a reader's handle
            f.write(HEAD.replace('rank = 1', 'rank = 2').replace('[ 1L ]', '[ 1L, 1L ]')
                    .replace('[ "" ]', '[ "", "" ]'))
            f.write('chunk_count = 1L;\nhistory = ( );\naxial = ( ( { start = 0L; addr = 0L; '
                    'coef = [ 1L, 1L ]; } ), ( { start = 0L; addr = -1L; coef = [ 0L, 0L ]; } ) );\n')
            ext = [1, 1]
            for i in range(arg):
                d = i % 2
                f.write('#+ grow dim=%d from=%d to=%d chunk_count=%d\n'
                        % (d, ext[d], ext[d] + 1, (ext[d] + 1) * ext[1 - d]))
                ext[d] += 1
            return
        body = {'hostile': lambda: entries('attrs', budget),
                'junk': lambda: entries('junk', budget),
                'values': lambda: values(budget),
                'strings': lambda: strings(budget)}[mode]()
        f.write(HEAD + body + TAIL)


main()

"""The kernel's instructions per function of a profiling run: RUN_DIR/insn.txt
("ADDR COUNT" per translation block, from the TCG plugin
qemu-run/boot/plugin/insn_by_tb.c, "#" lines are comments), each block
given to the text symbol of System.map (next to the image its meta names,
image=) at or below its address.  db/ingest.py stores it, and
reports/insn_profile.py tables and compares it."""
import bisect
import os

from records import read_meta


class ProfileError(Exception):
    pass


def symbols(run_dir):
    """(sorted addresses, their names) of System.map's text symbols."""
    image = read_meta(os.path.join(run_dir, 'meta')).get('image')
    if not image:
        raise ProfileError(f'{run_dir}/meta names no image (image=): boot it with qemu-run/jobs/insn-profile.sh')
    smap = os.path.join(image.split('/arch/x86/boot/bzImage')[0], 'System.map')
    if not os.path.exists(smap):
        raise ProfileError(f'{smap} is missing: the image {image} the profile ran was rebuilt or removed')
    addrs, names = [], []
    with open(smap) as f:
        for line in f:
            a, t, name = line.split()[:3]
            if t in 'tTwW':
                addrs.append(int(a, 16))
                names.append(name)
    order = sorted(range(len(addrs)), key=addrs.__getitem__)
    return [addrs[i] for i in order], [names[i] for i in order]


def per_function(run_dir):
    """{function: instructions} of RUN_DIR/insn.txt."""
    addrs, names = symbols(run_dir)
    out = {}
    path = os.path.join(run_dir, 'insn.txt')
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if line.startswith('#'):
                continue
            try:
                a, c = line.split()
                addr, count = int(a, 16), int(c)
            except ValueError:
                raise ProfileError(f'{path}:{n}: want "ADDR COUNT", got {line.strip()[:60]!r}')
            i = bisect.bisect_right(addrs, addr) - 1
            name = names[i] if i >= 0 else '?'
            out[name] = out.get(name, 0) + count
    return out

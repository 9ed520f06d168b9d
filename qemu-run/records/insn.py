"""The kernel's instructions and calls per function of a profiling run:
RUN_DIR/insn.txt ("ADDR COUNT RUNS" per translation block, from the TCG
plugin qemu-run/boot/plugin/insn_by_tb.c; "#" lines are comments; profiles
from before the plugin counted runs have "ADDR COUNT"), each block given to
the text symbol of System.map (next to the image its meta names, image=) at
or below its address.  A profile counted from a mark (meta profile_from=,
boot.sh FROM_SYNC) whose mark the guest never reached is refused; with
PROFILE_USER=1 user space's blocks count too, as one entry, "(user)".
With EVERY_SYNC=1 (boot.sh) the plugin wrote each window between two
marks to insn.txt.N and the last one, to the end, to insn.txt: the
profile is their sum, and windows() gives them one by one.  A function's
calls are the runs of the blocks that start at its first instruction (a jump back to it counts as a call too);
functions of one name (static ones of several files) add up.
db/ingest.py stores it, and reports/insn_profile.py tables and compares
it."""
import bisect
import os

from records import read_meta


# Blocks below the kernel's half of the address space (a profile with
# PROFILE_USER=1, boot.sh) are user space's: one entry, without calls.
KERNEL_SPACE = 0xffff800000000000
USER = '(user)'


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


def window_paths(run_dir):
    """The files of a profile: insn.txt.1, insn.txt.2, ... (EVERY_SYNC=1,
    each window between two marks) and insn.txt (the last window, or the
    whole profile).  A gap in the numbers is an error: a window lost."""
    base = os.path.join(run_dir, 'insn.txt')
    nums = sorted(int(f[len('insn.txt.'):]) for f in os.listdir(run_dir)
                  if f.startswith('insn.txt.') and f[len('insn.txt.'):].isdigit())
    if nums != list(range(1, len(nums) + 1)):
        raise ProfileError(f'{run_dir}: the windows insn.txt.N are {nums}, not 1 to {len(nums)}: one is missing')
    return [f'{base}.{n}' for n in nums] + [base]


def profile(run_dir):
    """{function: (instructions, calls)} of RUN_DIR's profile, all its
    windows added up; calls is None for a profile without runs."""
    symtab = symbols(run_dir)
    total = {}
    for path in window_paths(run_dir):
        for k, (v, c) in profile_file(path, symtab).items():
            v0, c0 = total.get(k, (0, None if c is None else 0))
            total[k] = (v0 + v, None if c is None else (c0 or 0) + c)
    return total


def windows(run_dir):
    """[{function: (instructions, calls)}] of each window of an EVERY_SYNC=1
    profile, in order, the last (to the end) included."""
    symtab = symbols(run_dir)
    return [profile_file(p, symtab) for p in window_paths(run_dir)]


def profile_file(path, symtab):
    """{function: (instructions, calls)} of one file the plugin wrote."""
    addrs, names = symtab
    insns, calls = {}, {}
    counted = None
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if line.startswith('#'):
                # FROM_SYNC (boot.sh): the plugin counted from its mark on,
                # or, if the guest never got there, the whole run.
                if line.startswith('# mark ') and 'never reached' in line:
                    raise ProfileError(f'{path}:{n}: the profile was to count from a mark the guest never '
                                       f'reached ({line[2:].strip()}): it counts the whole run')
                continue
            fields = line.split()
            try:
                if len(fields) not in (2, 3) or (counted is not None and counted != (len(fields) == 3)):
                    raise ValueError
                addr, count = int(fields[0], 16), int(fields[1])
                runs = int(fields[2]) if len(fields) == 3 else None
            except ValueError:
                raise ProfileError(f'{path}:{n}: want "ADDR COUNT RUNS" (or "ADDR COUNT" on every line), '
                                   f'got {line.strip()[:60]!r}')
            counted = runs is not None
            i = bisect.bisect_right(addrs, addr) - 1
            if addr < KERNEL_SPACE:
                name, i = USER, -1
            else:
                name = names[i] if i >= 0 else '?'
            insns[name] = insns.get(name, 0) + count
            if counted:
                calls.setdefault(name, 0)
                if i >= 0 and addrs[i] == addr:
                    calls[name] += runs
    return {k: (v, calls.get(k) if counted else None) for k, v in insns.items()}


def per_function(run_dir):
    """{function: instructions} of RUN_DIR/insn.txt."""
    return {k: v for k, (v, _) in profile(run_dir).items()}

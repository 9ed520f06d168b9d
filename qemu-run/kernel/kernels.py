"""The kernels and kselftests the harness knows, read from lib.sh (the one list)."""
import os
import re

_LIB = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'lib.sh')
with open(_LIB) as _f:
    _text = _f.read()
    KERNELS = re.search(r'^KERNELS="([^"]*)"', _text, re.M).group(1).split()
    # The kselftests a full run runs (make kselftest without TESTS).
    KSELFTESTS = re.search(r'^KSELFTESTS="([^"]*)"', _text, re.M).group(1).split()
    # The ones that run on a boot with the memory controller on cgroup v1.
    KSELFTESTS_V1 = re.search(r'^KSELFTESTS_V1="([^"]*)"', _text, re.M).group(1).split()
    # The ones that run on a boot with two NUMA nodes (numa=fake=2).
    KSELFTESTS_NUMA = re.search(r'^KSELFTESTS_NUMA="([^"]*)"', _text, re.M).group(1).split()

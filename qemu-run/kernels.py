"""The kernels the harness knows, read from lib.sh (the one list)."""
import os
import re

_LIB = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'lib.sh')
with open(_LIB) as _f:
    KERNELS = re.search(r'^KERNELS="([^"]*)"', _f.read(), re.M).group(1).split()

#!/usr/bin/env bash
# Run one LAVA job here, end to end, as a lab would (make lava-run): write
# the job (qemu-run/lab/lava.py), run it with LAVA's own dispatcher (lava-run,
# Debian's lava-dispatcher, on a QEMU device dictionary made here), then
# store its log in the runs database as a local run (db/lava_collect.py).
#
#   qemu-run/lab/lava-run.sh [JOB] [KERNEL]        JOB: soak (default), kselftest, kselftest-v1, kselftest-numa, stress, bench
#
# Environment: knobs as for lava.py (SOAK, STRESS, BENCH, STRESS_SECS, MEM,
# SMP, CLOCK); LAVA_JOB_ID (default: the time) names the run folder;
# NOBUILD=1 uses the kernel and guest that are there.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"

job=${1:-soak}
kernel=${2:-patched}
check_kernel_name "$kernel"
case "$job" in kselftest | kselftest-v1 | kselftest-numa | soak | stress | bench) ;; *) die "JOB is kselftest, kselftest-v1, kselftest-numa, soak, stress or bench, not '$job'" ;; esac
"$TOP/qemu-run/deps.sh" lava-run
if [ "${NOBUILD:-0}" != 1 ]; then
	"$TOP/qemu-run/kernel/build.sh" "$kernel"
	"$TOP/qemu-run/guest/image.sh"
fi
[ -f "${GUEST_DISK:-$BUILD/guest/disk}/lava-demux.awk" ] ||
	die "the guest in ${GUEST_DISK:-$BUILD/guest/disk} predates LAVA support: run qemu-run/guest/image.sh (without NOBUILD)"

id=${LAVA_JOB_ID:-$(date +%s)}
work=$BUILD/lava/run-$id
mkdir -p "$work"
python3 "$TOP/qemu-run/lab/lava.py" write --jobs "$job" --kernels "$kernel" --out "$BUILD/lava/jobs" >/dev/null
def=$BUILD/lava/jobs/$job-$kernel.yaml

# The device dictionary a lava-server renders from its qemu device type;
# here the job's context (memory, vCPUs, clock) goes into it directly.
python3 - "$def" "$work/device.yaml" <<'PY'
import sys
sys.path.append('/usr/lib/python3/dist-packages')
import yaml
job = yaml.safe_load(open(sys.argv[1]))
ctx = job['context']
options = ['-cpu qemu64', f'-m {ctx["memory"]}', '-nographic', '-nic none'] + \
    [' '.join(ctx['extra_options'][i:i + 2]) if ctx['extra_options'][i] in ('-smp', '-icount') else ctx['extra_options'][i]
     for i in range(len(ctx['extra_options'])) if i == 0 or ctx['extra_options'][i - 1] not in ('-smp', '-icount')]
device = {
    'device_type': 'qemu',
    'available_architectures': ['amd64', 'x86_64'],
    'constants': {'failure_retry': 1, 'boot_retry': 1, 'spawn_maxread': '4092',
                  'shutdown-message': 'The system is going down for reboot NOW',
                  'kernel-start-message': 'Linux version [0-9]', 'default-shell-prompt': 'lava-test: # ',
                  'posix': {'lava_test_sh_cmd': '/bin/sh', 'lava_test_results_dir': '/lava-%s',
                            'lava_test_shell_file': '~/.bashrc'}},
    'actions': {'deploy': {'connections': {'serial': None},
                           'methods': {'tmpfs': None, 'image': {'parameters': {'guest': {
                               'size': 512, 'interface': 'ide', 'driveid': 'lavatest'}}}}},
                'boot': {'connections': {'serial': None},
                         'methods': {'qemu': {'parameters': {'command': 'qemu-system-x86_64',
                                                             'options': options, 'extra': []}}}}},
    'timeouts': {'actions': {}, 'connections': {}},
}
yaml.safe_dump(device, open(sys.argv[2], 'w'), sort_keys=False)
PY

say "lava-run: job $job on $kernel (LAVA job $id, files in $work)"
t0=$(date +%s)
rc=0
# lava-run prints its log, one {dt, lvl, msg} a line, on stderr.
lava-run --job-id "$id" --output-dir "$work/out" --device "$work/device.yaml" "$def" >"$work/log.jsonl" 2>&1 || rc=$?
result=$(grep -o '"case": "job", "definition": "lava"[^}]*"result": "[a-z]*"' "$work/log.jsonl" | tail -1 | grep -o '"result": "[a-z]*"' || true)
say "lava-run ended rc=$rc in $(elapsed "$t0") (LAVA's job result: ${result:-none}; log $work/log.jsonl)"
python3 "$TOP/db/lava_collect.py" --job "$def" --log "$work/log.jsonl" --job-id "$id" || exit 1
[ "$rc" = 0 ] || die "lava-run failed (rc=$rc): see the end of $work/log.jsonl"

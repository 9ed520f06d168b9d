#!/usr/bin/env python3
"""Load the dashboard in headless Chromium: every plot shows, every link resolves.

usage: reports/tests/browser_check.py [PAGE] [--screenshot PNG]
       reports/tests/browser_check.py --self-test [--screenshot PNG]

With PAGE (an index.html rendered by reports/report.py): load it, check
that every <img> loaded (naturalWidth > 0) and that every link resolves (an
in-page anchor exists, a relative file exists and is not empty; the page
must not point outside itself), and take a full-page screenshot.  With
--self-test: render fake databases (both kernels; original only; no
database at all) into a temporary folder and check each.

Chromium is Debian's package "chromium"; as root it is installed when
missing, otherwise the apt-get line is printed.
"""
import argparse
import html.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
FLAGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
         '--disable-background-networking', '--disable-component-update', '--disable-sync',
         '--hide-scrollbars']

# Runs in the page after load: what loaded, what the links and anchors are.
PROBE = """<script>
window.addEventListener('load', function () {
  var imgs = Array.prototype.slice.call(document.images);
  var r = {
    images: imgs.map(function (i) { return [i.getAttribute('src'), i.complete && i.naturalWidth > 0, i.naturalWidth]; }),
    links: Array.prototype.map.call(document.querySelectorAll('a[href]'), function (a) { return a.getAttribute('href'); }),
    ids: Array.prototype.map.call(document.querySelectorAll('[id]'), function (e) { return e.id; }),
    height: document.documentElement.scrollHeight,
    text: document.body.innerText.slice(0, 100000)
  };
  var pre = document.createElement('pre');
  pre.id = 'browser-check-result';
  pre.textContent = JSON.stringify(r);
  document.body.appendChild(pre);
});
</script>"""


class Fail(Exception):
    pass


def chromium():
    exe = shutil.which('chromium')
    if exe:
        return exe
    if os.geteuid() != 0:
        raise Fail("Chromium is missing: install Debian's package with: "
                   "sudo apt-get update && sudo apt-get install -y --no-install-recommends chromium")
    print('==> installing Debian\'s chromium for the browser check', file=sys.stderr)
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    for cmd in (['apt-get', 'update', '-qq'], ['apt-get', 'install', '-y', '-qq', '--no-install-recommends', 'chromium']):
        if subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL).returncode != 0:
            raise Fail(f'{" ".join(cmd)} failed: check the network or the apt sources')
    return shutil.which('chromium')


def run_chromium(args, timeout=120):
    with tempfile.TemporaryDirectory(prefix='chromium-profile-') as profile:
        p = subprocess.run([chromium()] + FLAGS + [f'--user-data-dir={profile}'] + args,
                           capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise Fail(f'chromium failed (exit {p.returncode}):\n{p.stderr[-2000:]}')
    return p.stdout


class ImgCount(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.imgs = 0

    def handle_starttag(self, tag, attrs):
        self.imgs += tag == 'img'


def check_page(page, screenshot=None):
    """Load page; return (result dict, [problems])."""
    page = os.path.abspath(page)
    folder = os.path.dirname(page)
    with open(page) as f:
        text = f.read()
    probe = os.path.join(folder, '.browser-check.html')
    with open(probe, 'w') as f:
        f.write(text.replace('</body>', PROBE + '</body>') if '</body>' in text else text + PROBE)
    try:
        dom = run_chromium(['--virtual-time-budget=10000', '--dump-dom', 'file://' + probe])
    finally:
        os.remove(probe)
    m = re.search(r'<pre id="browser-check-result">(.*?)</pre>', dom, re.S)
    if not m:
        return None, ['the page never finished loading (no probe result in the DOM)']
    r = json.loads(html.unescape(m.group(1)))
    problems = []
    counter = ImgCount()
    counter.feed(text)
    if len(r['images']) != counter.imgs:
        problems.append(f'{counter.imgs} <img> in the HTML, {len(r["images"])} in the browser')
    for src, ok, width in r['images']:
        if not ok:
            problems.append(f'image did not load: {src} (naturalWidth {width})')
    ids = set(r['ids'])
    for href in r['links']:
        if href.startswith('#'):
            if href[1:] not in ids:
                problems.append(f'link to a missing anchor: {href}')
        elif re.match(r'^[a-z]+:', href):
            problems.append(f'link outside the page\'s folder: {href}')
        else:
            target = os.path.join(folder, href.split('#', 1)[0])
            if not os.path.isfile(target) or os.path.getsize(target) == 0:
                problems.append(f'link does not resolve: {href}')
    if screenshot:
        height = min(max(int(r['height']), 600), 16000)
        run_chromium([f'--window-size=1200,{height}', f'--screenshot={os.path.abspath(screenshot)}',
                      'file://' + page])
        if not os.path.isfile(screenshot):
            problems.append(f'no screenshot written to {screenshot}')
    return r, problems


def self_test(screenshot=None):
    """Render fake databases and check each page; return the problems."""
    sys.path.insert(0, os.path.join(TOP, 'db', 'tests'))
    sys.path.insert(0, os.path.join(TOP, 'reports'))
    import fake_run
    import report
    problems = []
    with tempfile.TemporaryDirectory(prefix='report-browser-') as tmp:
        cases = [('both kernels', ('original', 'patched'), 'Per period, as in the 2019 cover letter', 7),
                 ('original only', ('original',), 'No soak run of patched in the database yet', 5),
                 ('no database', None, 'There is no runs database', 0)]
        for name, kernels, must_say, images in cases:
            t0 = time.monotonic()
            db = os.path.join(tmp, name.replace(' ', '-') + '.sqlite')
            out = os.path.join(tmp, name.replace(' ', '-'))
            if kernels:
                fake_run.fill_db(db, os.path.join(tmp, 'runs-' + name.replace(' ', '-')), kernels,
                                 nights=3, gens=400, sample_every=20)
            bad, _ = report.render(db, out)
            problems += [f'{name}: {b}' for b in bad]
            r, probs = check_page(os.path.join(out, 'index.html'), screenshot if kernels and len(kernels) == 2 else None)
            problems += [f'{name}: {p}' for p in probs]
            if r is not None:
                if len(r['images']) != images:
                    problems.append(f'{name}: {len(r["images"])} images on the page, expected {images}')
                if must_say not in r['text'] and must_say not in open(os.path.join(out, 'index.html')).read():
                    problems.append(f'{name}: the page does not say "{must_say}"')
            print(f'{name}: {len(r["images"]) if r else "?"} images, {len(r["links"]) if r else "?"} links, '
                  f'{len(probs)} problems ({time.monotonic() - t0:.1f} s)')
    return problems


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('page', nargs='?', help='the index.html to check')
    ap.add_argument('--self-test', action='store_true', help='render fake databases and check them')
    ap.add_argument('--screenshot', help='write a full-page screenshot here')
    args = ap.parse_args(argv)
    t0 = time.monotonic()
    try:
        if args.self_test:
            problems = self_test(args.screenshot)
        elif args.page:
            r, problems = check_page(args.page, args.screenshot)
            if r:
                print(f'{args.page}: {len(r["images"])} images, {len(r["links"])} links')
        else:
            ap.error('give a PAGE or --self-test')
    except (Fail, subprocess.TimeoutExpired) as e:
        print(f'browser check: error: {e}', file=sys.stderr)
        return 1
    for p in problems:
        print(f'browser check: {p}', file=sys.stderr)
    shot = f'; screenshot {args.screenshot}' if args.screenshot else ''
    print(f'browser check: {"FAILED, " + str(len(problems)) + " problems" if problems else "passed"} '
          f'in {time.monotonic() - t0:.1f} s{shot}')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

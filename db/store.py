"""The runs database: where it is, how to open it, its schema version.

The schema is the ordered list of migrations in db/schema/NNN-*.sql;
PRAGMA user_version says how many have been applied.  connect() applies
the missing ones, each in its own transaction, so every program that opens
the database sees the current schema.

Where: $RUNS_DB, else $BUILD/db/runs.sqlite (BUILD defaults to ./build at
the top of the repository, as in qemu-run/lib.sh).
"""
import glob
import hashlib
import os
import re
import sqlite3

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA_DIR = os.path.join(TOP, 'db', 'schema')


def migrations():
    """[(version, path)] of db/schema/NNN-*.sql, in order, numbered 1, 2, ..."""
    found = []
    for path in sorted(glob.glob(os.path.join(SCHEMA_DIR, '[0-9]*.sql'))):
        found.append((int(re.match(r'(\d+)', os.path.basename(path)).group(1)), path))
    for want, (got, path) in enumerate(found, 1):
        if got != want:
            raise SystemExit(f'{path}: migration {got} found where {want} was due')
    return found


SCHEMA_VERSION = len(migrations())


# A kernel as every comparison sees it: its name and, for a build of the
# series, the first 8 digits of the series hash (of the patches/ it was built
# from; kernels.series_hash), so that two versions of the series never mix
# under "patched".  original has no series; "?" is a run that did not
# record it.  Needs the kernels table as "k".
KERNEL_LABEL_SQL = ("CASE WHEN k.name = 'original' OR k.series_hash = '' THEN k.name "
                    "ELSE k.name || '@' || coalesce(substr(k.series_hash, 1, 8), '?') END")


def series_patches():
    """The contents of this checkout's series patches, in order: patches/
    but the cover letter (qemu-run/lib.sh series_patches)."""
    pdir = os.path.join(TOP, 'patches')
    out = []
    for name in sorted(os.listdir(pdir)):
        if name.endswith('.patch') and not name.startswith('0000-'):
            with open(os.path.join(pdir, name), 'rb') as f:
                out.append(f.read())
    return out


def current_series():
    """This checkout's series key, as qemu-run/lib.sh series_key_of gives
    it: sha256 of the series patches, 16 digits."""
    return hashlib.sha256(b''.join(series_patches())).hexdigest()[:16]


def kernel_label(name, series_hash):
    """KERNEL_LABEL_SQL in Python."""
    if name == 'original' or series_hash == '':
        return name
    return f'{name}@{(series_hash or "?")[:8]}'


def default_path():
    if os.environ.get('RUNS_DB'):
        return os.environ['RUNS_DB']
    return os.path.join(os.environ.get('BUILD') or os.path.join(TOP, 'build'), 'db', 'runs.sqlite')


def connect(path=None, create=True):
    """Open (and create or migrate) the database; autocommit mode: the
    callers say BEGIN and COMMIT themselves."""
    path = path or default_path()
    if not create and not os.path.exists(path):
        raise FileNotFoundError(path)
    if os.path.isdir(path):
        raise SystemExit(f'runs database {path} is a directory: point RUNS_DB at a file')
    folder = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError as e:
        raise SystemExit(f'runs database {path}: cannot create {folder}: {e.strerror}')
    # The mode bits, not access(): root may write anything, but a database
    # made read-only says it is not to be written.
    if os.path.exists(path) and not (os.stat(path).st_mode & 0o222 and os.access(path, os.W_OK)):
        raise SystemExit(f'runs database {path} is read-only: make it writable or point RUNS_DB elsewhere')
    try:
        db = sqlite3.connect(path, isolation_level=None, timeout=60)
        db.execute('PRAGMA journal_mode = WAL')
        db.execute('PRAGMA synchronous = NORMAL')
        db.execute('PRAGMA cache_size = -65536')   # KiB: the hot pages of a 1M-sample load
        migrate(db, path)
    except sqlite3.OperationalError as e:
        raise SystemExit(f'runs database {path}: {e}')
    except sqlite3.DatabaseError as e:
        raise SystemExit(f'runs database {path}: {e} (not an sqlite database, or damaged: '
                         f'point RUNS_DB at another file, or move this one away)')
    return db


def open_existing(path, tool, hint):
    """(path, db) of an existing runs database (path None: the default);
    a missing one is an error that names the tool and what to run (hint)."""
    path = path or default_path()
    if not os.path.exists(path):
        raise SystemExit(f'{tool}: no runs database at {path}: {hint}')
    return path, connect(path)


def migrate(db, path='the database'):
    version = db.execute('PRAGMA user_version').fetchone()[0]
    if version > SCHEMA_VERSION:
        raise SystemExit(f'{path} has schema version {version}, newer than this '
                         f'checkout knows ({SCHEMA_VERSION}): update the checkout')
    for n, script in migrations()[version:]:
        with open(script) as f:
            sql = f.read()
        # One transaction per migration: a kill leaves the previous version.
        db.execute('BEGIN IMMEDIATE')
        try:
            # executescript() would commit first; run the statements one by one.
            for stmt in split_sql(sql):
                db.execute(stmt)
            db.execute(f'PRAGMA user_version = {n}')
            db.execute('COMMIT')
        except BaseException:
            db.execute('ROLLBACK')
            raise


def split_sql(sql):
    """The statements of an SQL script (no triggers in the schema)."""
    stmts, cur = [], ''
    for line in sql.splitlines(keepends=True):
        if line.lstrip().startswith('--'):
            continue
        cur += line
        if sqlite3.complete_statement(cur):
            stmts.append(cur.strip())
            cur = ''
    if cur.strip():
        raise SystemExit(f'unterminated SQL statement in the schema: {cur.strip()[:60]}...')
    return stmts

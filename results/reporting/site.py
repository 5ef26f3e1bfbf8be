"""What the report needs from a site configuration: each partition's sweep extras (the
defaults a tuning stage starts from, the node-hour price and its currency)."""

from __future__ import annotations

import contextlib
import io
import os
import runpy
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def config_path(system: str) -> Path:
    return REPO / 'site-configs' / f'{system}.py'


def partition_extras(system: str, path: Path | None = None) -> tuple[dict, str | None]:
    """{partition: extras} of ``system`` from its site configuration, and why there are
    none when the file is missing or does not load (the report says it)."""
    path = path or config_path(system)
    if not path.exists():
        return {}, f'no site configuration {path}: defaults and prices unknown'
    # TOPOFOAM_LIST_ALL: list partitions whose daemons are not running (local.py).
    env = dict(os.environ)
    os.environ['TOPOFOAM_LIST_ALL'] = '1'
    try:
        with contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            config = runpy.run_path(str(path))['site_configuration']
    except (Exception, SystemExit) as e:     # a broken config must not stop the report
        return {}, f'{path} does not load ({e}): defaults and prices unknown'
    finally:
        os.environ.clear()
        os.environ.update(env)
    extras = {}
    for sys_ in config.get('systems', []):
        if sys_.get('name') == system:
            for part in sys_.get('partitions', []):
                extras[part['name']] = part.get('extras', {})
    return extras, None

"""Publish the performance history (``benchmarks/history``) as HTML that works offline.

    python -m benchmarks.publish_history [--html DIR]      # default .asv/history-html

``asv publish`` writes pages that load jQuery, flot, Bootstrap and three small plugins from
CDNs; without a network (CI, a cluster's login node) the graphs never draw. This runs it,
then serves those files from the HTML folder: each comes from its npm package (the registry
tarball, checked against its pinned SHA-512, kept under ``~/.cache/gpuensembles/asv-assets``)
and the pages point at the copies. A page that asks for a file not listed here is an error,
so a new asv cannot publish pages that half work. Open ``DIR/index.html`` through a web
server (``python -m http.server -d DIR``): the pages fetch their data with requests.
"""

import argparse
import base64
import hashlib
import io
import os
import re
import subprocess
import sys
import tarfile
import urllib.request
from pathlib import Path

CONFIG = Path(__file__).parent / "history" / "asv.conf.json"
HTML = Path(__file__).parent.parent / ".asv" / "history-html"
REGISTRY = "https://registry.npmjs.org"

#: npm package -> (version, SHA-512 of its registry tarball, base64 as npm's ``integrity``).
PACKAGES = {
    "jquery": ("3.3.1", "Ubldcmxp5np52/ENotGxlLe6aGMvmF4R8S6tZjsP6Knsaxd/xp3Zrh50cG93lR6nPXyUFwzN3ZSOQI0wRJNdGg=="),
    "flot": ("0.8.3", "xg2otcTJDvS+ERK+my4wxG/ASq90QURXtoM4LhacCq0jQW2jbyjdttbRNqU2cPykrpMvJ6b2uSp6SAgYAzj9tQ=="),
    "bootstrap": ("3.1.1", "TAzqS8E/ISpVHP29gYhy+1NSV+FJwApDVQhDfgLYsIuUDJiqJzH2DfORN5tiu+Ie2iBLrzEG34t4Rf465cigqg=="),
    "flot-orderbars": ("1.0.0",
                       "Jv51fvzevUjNXEeozpwEKfPjhiZhfiJddv0WHjduUTCmSF+7T5K7C9c9Y1wIVmUhDBv5fLMjgbwKecT0GIKPZA=="),
    "blueimp-md5": ("2.19.0",
                    "DRQrD6gJyy8FbiE4s+bDoXS9hiW3Vbx5uCdwvcCf3zLHL+Iv7LtGHLpr+GZV8rHG8tK766FGYBwRbu8pELTt+w=="),
    # 1.0.1, which asv names, is not on npm; 1.1.3 keeps its API (table.stupidtable())
    "stupid-table-plugin": ("1.1.3",
                            "2Vk7XouQPxUQPRe9w0Fu7ZZ8kHLK7rDoLMsCgtKxRNJ7f4dSOGvW9CkHsq5wD6QsaEnWoyLBYH3xOEsrK3yWBg=="),
}
#: The tail of each URL asv's pages load -> (npm package, its folder or file to copy).
#: Folders keep their layout (Bootstrap's CSS finds its fonts at ../fonts).
ASSETS = {
    "jquery-3.3.1.min.js": ("jquery", "dist/jquery.min.js"),
    "flot/0.8.3/jquery.flot.min.js": ("flot", "jquery.flot.js"),
    "flot/0.8.3/jquery.flot.time.min.js": ("flot", "jquery.flot.time.js"),
    "flot/0.8.3/jquery.flot.selection.min.js": ("flot", "jquery.flot.selection.js"),
    "flot/0.8.3/jquery.flot.categories.min.js": ("flot", "jquery.flot.categories.js"),
    "flot-orderbars@1.0.0/js/jquery.flot.orderBars.js": ("flot-orderbars", "js/jquery.flot.orderBars.js"),
    "blueimp-md5/2.19.0/js/md5.min.js": ("blueimp-md5", "js/md5.min.js"),
    "stupidtable/1.0.1/stupidtable.min.js": ("stupid-table-plugin", "stupidtable.min.js"),
    "bootstrap@3.1.1/dist/css/bootstrap.min.css": ("bootstrap", "dist/css/bootstrap.min.css"),
    "bootstrap@3.1.1/dist/js/bootstrap.min.js": ("bootstrap", "dist/js/bootstrap.min.js"),
}
_TAG = re.compile(r"<(?:script|link)\b[^>]*>")
_LOADED = re.compile(r'\b(src|href)="(https?://[^"]+)"')
_INTEGRITY = re.compile(r'\s+(?:integrity|crossorigin)="[^"]*"')


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gpuensembles" / "asv-assets"


def tarball(package: str) -> bytes:
    """The registry tarball of ``package`` at its pinned version, checked (downloaded once)."""
    version, integrity = PACKAGES[package]
    path = cache_dir() / f"{package}-{version}.tgz"
    data = path.read_bytes() if path.exists() else None
    if data is None:
        url = f"{REGISTRY}/{package}/-/{package}-{version}.tgz"
        with urllib.request.urlopen(url, timeout=60) as response:
            data = response.read()
    if base64.b64encode(hashlib.sha512(data).digest()).decode() != integrity:
        raise RuntimeError(f"{package}-{version}.tgz does not match its pinned SHA-512 (a changed or broken download)")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return data


def localize(html: Path) -> int:
    """Copy every CDN file the pages in ``html`` load into ``html/vendor`` and point the pages
    at the copies. Returns the number of tags changed."""
    changed = 0
    for page in sorted(html.glob("*.html")):
        text = page.read_text()
        tags = {t for t in _TAG.findall(text) if _LOADED.search(t) and (t.startswith("<script") or "stylesheet" in t)}
        for tag in tags:
            # the copies are checked against the tarballs' SHA-512; flot's are its unminified
            # files, so the tag's subresource integrity (the CDN's minified ones') goes
            local = _LOADED.sub(lambda match, name=page.name: _copy(match, name, html), tag)
            text = text.replace(tag, _INTEGRITY.sub("", local))
        page.write_text(text)
        changed += len(tags)
    return changed


def _copy(match, page: str, html: Path) -> str:
    url = match.group(2)
    tail = next((t for t in ASSETS if url.endswith(t)), None)
    if tail is None:
        raise RuntimeError(f"{page} loads {url}, which publish_history does not know: add it to ASSETS")
    package, member = ASSETS[tail]
    _extract(package, member, html / "vendor" / package)
    return f'{match.group(1)}="vendor/{package}/{member}"'


def _extract(package: str, member: str, into: Path):
    """``member`` of the package (and, for a file of a ``dist`` folder, that whole folder)."""
    prefix = "package/" + ("dist/" if member.startswith("dist/") else member)
    with tarfile.open(fileobj=io.BytesIO(tarball(package)), mode="r:gz") as archive:
        for entry in archive.getmembers():
            if entry.isfile() and entry.name.startswith(prefix):
                out = into / entry.name[len("package/"):]
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_bytes(archive.extractfile(entry).read())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--html", type=Path, default=HTML, help="folder of the pages")
    html = parser.parse_args(argv).html.resolve()
    subprocess.run([sys.executable, "-m", "asv", "publish", "--config", str(CONFIG), "--html-dir", str(html)],
                   check=True, cwd=CONFIG.parent)
    count = localize(html)
    print(f"{html}: {count} references to CDN files now served from {html / 'vendor'}")


if __name__ == "__main__":
    main()

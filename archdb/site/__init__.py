"""A static web site of the catalogue: ``archdb site -o DIR`` (see ``build.build_site``).

Pages are plain HTML with one stylesheet and one small script of our own: they work
offline, from file:// or any static host (GitHub Pages), and need no server.
"""

from __future__ import annotations

from .build import SiteBuild, SiteError, build_site

__all__ = ["SiteBuild", "SiteError", "build_site"]

"""Bundled data files (see README.md in this folder for origin and licence)."""

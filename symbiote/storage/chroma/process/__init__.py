"""The process link: the embedded Chroma store in a child process of its own (`host`, the server's
side, and `Remote`, the reach of a store there), and the child's loop (`child`).

This is the link's door. The child imports nothing above storage (tests/test_layers.py checks):
it unpickles none of Symbiote's classes but storage's and the errors'.
"""

from symbiote.storage.chroma.process.host import Remote, StoreProcess, for_path, prestart

__all__ = ["Remote", "StoreProcess", "for_path", "prestart"]

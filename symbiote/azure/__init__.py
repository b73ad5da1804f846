"""Running on an Azure Files share: the share interface, the writer lease and snapshots.

This is the package's door: other packages import from `symbiote.azure`, never from a module inside
it (tests/test_layers.py checks). The Azure SDK itself is imported only when a share is opened.
"""

from symbiote.azure.guard import LeaseGuard, WriteGate
from symbiote.azure.local_share import LocalDirectoryShare
from symbiote.azure.services import ShareServices, open_share_services
from symbiote.azure.share import FileShare

__all__ = [
    "FileShare",
    "LeaseGuard",
    "LocalDirectoryShare",
    "ShareServices",
    "WriteGate",
    "open_share_services",
]

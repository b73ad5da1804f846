"""Answering a client sooner after a start: the HTTP and stdio handshake caches, the stdio relay, the
boot app that answers from the cache while the real app is built.

This is the package's door: other packages import these modules through it, never another one
(tests/test_layers.py checks). It imports nothing itself: the start imports each module when it
reaches it, and `import symbiote.fastboot` stays free.
"""

__all__ = ["boot_app", "handshake", "recording", "stdio_handshake", "stdio_relay"]

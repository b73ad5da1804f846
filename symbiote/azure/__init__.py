"""Running on an Azure Files share: the share interface, the writer lease and snapshots."""

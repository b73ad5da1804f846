"""Where memories live: the store interface, Chroma, the keyword index and the store's own process."""

"""Ranking: how keyword and meaning candidates become one list of scored results."""

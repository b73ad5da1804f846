"""The memory engine: what a memory is, the rules for storing and finding it, conversation history."""

"""Graph memory (episodes, entities, relations, traces; spreading-activation recall). Empty for now:
its code lands here (see the graph memory issues)."""

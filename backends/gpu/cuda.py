"""Target "cuda" (placeholder replaced below)."""
def missing_compiler():
    return None

"""jitc's runtime around compiled calls: asynchronous dispatch (`Jitted.submit`, futures)."""

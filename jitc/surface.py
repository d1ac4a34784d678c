"""Deprecated: `python -m jitc.surface` is now `python -m jitc.numpy_api.surface`."""

import sys
import warnings

from jitc.numpy_api.surface import main

if __name__ == "__main__":
    warnings.warn(
        "python -m jitc.surface is now python -m jitc.numpy_api.surface",
        DeprecationWarning,
        stacklevel=1,
    )
    sys.exit(main())

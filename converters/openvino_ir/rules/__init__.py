"""Import rules, grouped by kind of op. Importing this package registers them all."""
from . import (attention, dialect, elementwise, io, layout, nn, reduce, resample, selection,  # noqa: F401
               tensor)

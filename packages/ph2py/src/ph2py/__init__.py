"""Convert Phobos ``.ph`` files to the Python spelling, keeping comments and layout.

``convert_source(ph_text, ph_file, existing=None)`` returns the Python module
(merged into ``existing``, a .py's text, when given); the ``ph2py`` command
converts files and folders.
"""

from ph2py.convert import Conversion, convert_source

__all__ = ["Conversion", "convert_source"]

"""``python -m phobos.launch``: whether launches take the native fast path here, and if not, why."""

from phobos.launch.native import native_status

print(native_status())

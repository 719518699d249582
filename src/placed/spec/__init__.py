"""Input formats: the native YAML/JSON spec, read into the model with precise errors."""

from placed.spec.errors import SpecError
from placed.spec.load import load_spec, load_spec_text, load_specs, load_specs_text

__all__ = ["SpecError", "load_spec", "load_spec_text", "load_specs", "load_specs_text"]

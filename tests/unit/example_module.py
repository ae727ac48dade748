"""Import a script of examples/ as a module (the example tests call its functions)."""
import importlib.util
import os

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples")


def load_example(relative_path):
    """The module of examples/<relative_path>, executed once."""
    name = os.path.splitext(relative_path.replace("/", "_"))[0]
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, relative_path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module

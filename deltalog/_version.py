__version__ = "0.1.0"
ENGINE_INFO = f"deltalog/{__version__}"

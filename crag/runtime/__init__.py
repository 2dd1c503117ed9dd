"""The running process's own matters: caches of loaded models, where files are kept, which extras are
installed, shared errors."""

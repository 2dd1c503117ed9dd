"""The process's own matters: model caches, file locations, installed extras, shared errors."""

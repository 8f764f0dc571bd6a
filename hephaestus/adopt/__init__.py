"""The import feature (`hephaestus import`; `import` is a Python keyword): adopt live connectors into git."""

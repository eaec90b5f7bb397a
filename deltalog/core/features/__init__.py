"""Table features: one module per feature, and the protocol, properties and obligations they share."""

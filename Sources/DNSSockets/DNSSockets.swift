// DNSSockets module.

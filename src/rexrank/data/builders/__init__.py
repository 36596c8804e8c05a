"""One `datasets` builder per ReXrank test set. Each module holds a functional core (locate the local copy,
list what is missing, yield Study records) and a thin GeneratorBasedBuilder subclass."""

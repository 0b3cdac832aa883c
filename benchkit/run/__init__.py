"""Running pilots: planning them, one pilot stage by stage, launching a batch, the
baseline at base, and recovery of the runs a killed benchkit left."""

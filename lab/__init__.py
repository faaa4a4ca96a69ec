"""What exists to demonstrate or test sluice; never shipped in the product."""

// The `httpdns` command; replaced by the real entry point.
print("httpdns: not built yet")

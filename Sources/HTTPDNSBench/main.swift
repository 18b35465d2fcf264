print("httpdns-bench: not built yet")

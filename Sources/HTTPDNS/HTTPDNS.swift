// HTTPDNS module.

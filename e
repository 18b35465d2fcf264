httpdns stub: warning: cache file /tmp/smoke/notadir/engine.cache cannot be opened (errno 20); ignored
httpdns stub: warning: stub cache file /tmp/smoke/notadir/stub.cache cannot be opened (errno 20); ignored
httpdns stub: warning: stub cache file /tmp/smoke/notadir/stub.cache could not be written: transport: cannot create /tmp/smoke/notadir/.stub.cache.tmp-494-2779010979 (errno 20)
httpdns stub: warning: cache file /tmp/smoke/notadir/engine.cache could not be written: transport: cannot create /tmp/smoke/notadir/.engine.cache.tmp-494-2219980091 (errno 20)

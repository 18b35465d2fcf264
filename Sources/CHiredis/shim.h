#ifndef CHIREDIS_SHIM_H
#define CHIREDIS_SHIM_H

// Debian's hiredis (libhiredis-dev, 0.14), the Redis client under the server's shared report state.
// Swift calls only its non-variadic entry points (redisAppendCommandArgv, redisGetReply), so nothing
// needs wrapping here.
#include <hiredis/hiredis.h>

#endif

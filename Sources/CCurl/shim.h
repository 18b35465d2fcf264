#ifndef HTTPDNS_CCURL_SHIM_H
#define HTTPDNS_CCURL_SHIM_H
#include <curl/curl.h>
#endif

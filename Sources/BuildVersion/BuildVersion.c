#include "BuildVersion.h"

// A C define, not a generated Swift file: the manifest turns VPNEXEC_VERSION into a
// compiler flag, so the tree stays untouched and a changed version rebuilds only this file.
#ifndef VPNEXEC_VERSION
#define VPNEXEC_VERSION "0.0.0-dev (unknown commit)"
#endif

const char *vpnexec_build_version(void) { return VPNEXEC_VERSION; }

#ifndef VPNEXEC_BUILD_VERSION_H
#define VPNEXEC_BUILD_VERSION_H

/// The version this build answers to --version: `git describe` of the tree it was built
/// from, when the build was given one (VPNEXEC_VERSION in the environment of swift build).
const char *vpnexec_build_version(void);

#endif

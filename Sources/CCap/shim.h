#pragma once
#include <sys/capability.h>
#include <sys/prctl.h>

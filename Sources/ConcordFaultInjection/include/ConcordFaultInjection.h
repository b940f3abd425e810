// ConcordFaultInjection has no API: it is loaded with LD_PRELOAD and configured by the
// environment (see FaultInjection.c). This header only gives the C target its module.
#ifndef CONCORD_FAULT_INJECTION_H
#define CONCORD_FAULT_INJECTION_H
#endif

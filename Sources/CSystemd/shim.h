#pragma once
#include <systemd/sd-daemon.h>
#include <systemd/sd-bus.h>
#include <stdint.h>

/* sd-bus's message building and reading are variadic, which Swift cannot call: the few
   calls vpnd makes, spelled out. */

/* StartTransientUnit: a scope holding one process, in a slice, collected once it is done. */
static inline int vx_start_scope(sd_bus *bus, sd_bus_slot **slot, const char *unit, const char *slice, uint32_t pid,
                                 const char *description, sd_bus_message_handler_t callback, void *userdata) {
    return sd_bus_call_method_async(bus, slot, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                    "org.freedesktop.systemd1.Manager", "StartTransientUnit", callback, userdata,
                                    "ssa(sv)a(sa(sv))", unit, "fail", 4,
                                    "PIDs", "au", 1, pid,
                                    "Slice", "s", slice,
                                    "Description", "s", description,
                                    "CollectMode", "s", "inactive-or-failed",
                                    0);
}

/* Subscribe, so that systemd sends job signals. */
static inline int vx_subscribe(sd_bus *bus) {
    return sd_bus_call_method_async(bus, NULL, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                    "org.freedesktop.systemd1.Manager", "Subscribe", NULL, NULL, "");
}

static inline int vx_match_job_removed(sd_bus *bus, sd_bus_slot **slot, sd_bus_message_handler_t callback, void *userdata) {
    return sd_bus_match_signal(bus, slot, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                               "org.freedesktop.systemd1.Manager", "JobRemoved", callback, userdata);
}

/* The object path a method returned, or NULL. */
static inline const char *vx_read_object_path(sd_bus_message *message) {
    const char *path = NULL;
    return sd_bus_message_read(message, "o", &path) >= 0 ? path : NULL;
}

/* JobRemoved(u id, o job, s unit, s result): the job and its result. */
static inline int vx_read_job_removed(sd_bus_message *message, const char **job, const char **result) {
    uint32_t id;
    const char *unit;
    return sd_bus_message_read(message, "uoss", &id, job, &unit, result);
}

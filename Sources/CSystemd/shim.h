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

/* systemd-resolved's servers for a link (ResolvedLinkBus). Each call waits `usec` at most and
   does not start resolved (no auto-start): one that is not running is not asked into being. */
static inline int vx_resolved_call(sd_bus *bus, const char *path, const char *interface, const char *member,
                                   uint64_t usec, sd_bus_error *error, sd_bus_message **reply,
                                   const char *argument_type, const void *argument) {
    sd_bus_message *m = NULL;
    int r = sd_bus_message_new_method_call(bus, &m, "org.freedesktop.resolve1", path, interface, member);
    if (r < 0) return r;
    r = sd_bus_message_set_auto_start(m, 0);
    if (r >= 0 && argument_type != NULL) {
        r = argument_type[0] == 'i' ? sd_bus_message_append_basic(m, 'i', argument)
                                    : sd_bus_message_append(m, "ss", ((const char *const *)argument)[0], ((const char *const *)argument)[1]);
    }
    if (r >= 0) r = sd_bus_call(bus, m, usec, error, reply);
    sd_bus_message_unref(m);
    return r;
}

/* Manager.GetLink(ifindex): the link's object path. */
static inline int vx_resolved_get_link(sd_bus *bus, int32_t ifindex, uint64_t usec, sd_bus_error *error, sd_bus_message **reply) {
    return vx_resolved_call(bus, "/org/freedesktop/resolve1", "org.freedesktop.resolve1.Manager", "GetLink", usec, error, reply, "i", &ifindex);
}

/* The Link's property `name` (DNSEx or DNS), as a variant. */
static inline int vx_resolved_get_servers(sd_bus *bus, const char *path, const char *name, uint64_t usec, sd_bus_error *error, sd_bus_message **reply) {
    const char *arguments[2] = { "org.freedesktop.resolve1.Link", name };
    return vx_resolved_call(bus, path, "org.freedesktop.DBus.Properties", "Get", usec, error, reply, "ss", arguments);
}

/* Into the variant's array: DNSEx a(iayqs) when `extended`, else DNS a(iay). */
static inline int vx_enter_servers(sd_bus_message *m, int extended) {
    int r = sd_bus_message_enter_container(m, 'v', extended ? "a(iayqs)" : "a(iay)");
    if (r < 0) return r;
    return sd_bus_message_enter_container(m, 'a', extended ? "(iayqs)" : "(iay)");
}

/* The array's next server: 1, or 0 at its end. `bytes` points into the message. */
static inline int vx_read_server(sd_bus_message *m, int extended, int32_t *family, const void **bytes, size_t *size,
                                 uint16_t *port, const char **name) {
    int r = sd_bus_message_enter_container(m, 'r', extended ? "iayqs" : "iay");
    if (r <= 0) return r;
    if ((r = sd_bus_message_read_basic(m, 'i', family)) < 0) return r;
    if ((r = sd_bus_message_read_array(m, 'y', bytes, size)) < 0) return r;
    *port = 0;
    *name = "";
    if (extended && (r = sd_bus_message_read(m, "qs", port, name)) < 0) return r;
    if ((r = sd_bus_message_exit_container(m)) < 0) return r;
    return 1;
}

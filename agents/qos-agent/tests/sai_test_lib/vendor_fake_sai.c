/*
 * VendorFakeSai: a FAKE vendor SAI library, for the qos-agent `sai` feature tests only.
 *
 * The SAI backend is tested against SONiC's real virtual SAI, libsaivs (tests/saivs.rs, and
 * the agent binary through SONiC's sairedis in tests/realsonic/). This fake stays for what
 * libsaivs never does and a vendor SAI may: refuse queue stats it does not support (libsaivs
 * answers every queue stat) and refuse a WRED attribute with an attribute-indexed status
 * (libsaivs never does for WRED).
 *
 * It is compiled against the same SAI headers the agent's bindings are generated from
 * (SAI_INCLUDE_DIR), so every type and method table is the headers' own, and it answers the
 * calls the agent makes with values a test can work out by hand:
 *  - create_switch: only a connection (SAI_SWITCH_ATTR_INIT_SWITCH = false, alone), switch
 *    0x2100; anything else is SAI_STATUS_INVALID_PARAMETER (the agent never initialises);
 *  - sai_object_type_query: 0x15xx is a queue, 0x13xx a WRED profile, 0x2100 the switch
 *    (the loader resolves every SAI call the agent makes, used here or not);
 *  - get_queue_stats: queue object q, stat s: (q & 0xff) * 1000 + the stat's rank below
 *    (PACKETS 1, BYTES 2, DROPPED_PACKETS 3, DROPPED_BYTES 4, CURR_OCCUPANCY_BYTES 5,
 *    WATERMARK_BYTES 6, WRED_ECN_MARKED_PACKETS 7, WRED_ECN_MARKED_BYTES 8); any other stat,
 *    and on queue 0x1504 the two WRED_ECN ones, is SAI_STATUS_NOT_SUPPORTED for the whole call,
 *    as a platform without them answers;
 *  - set/get_wred_attribute: the six green/yellow/red min/max threshold attributes of WRED
 *    objects 0x1301..0x1304, starting at 0 (the SAI default); 0x1304 is a profile on a platform
 *    without red WRED: a red threshold is SAI_STATUS_ATTR_NOT_SUPPORTED_0 + its index in the
 *    call's list; anything else is SAI_STATUS_INVALID_PARAMETER.
 */
#include <stddef.h>

#include <sai.h>

#define SWITCH_OID 0x2100
#define WRED_OBJECTS 4
#define WRED_BASE 0x1301
#define WRED_WITHOUT_RED 0x1304

static uint32_t thresholds[WRED_OBJECTS][6];
static int initialized;

static int stat_rank(sai_stat_id_t id) {
    switch (id) {
    case SAI_QUEUE_STAT_PACKETS: return 1;
    case SAI_QUEUE_STAT_BYTES: return 2;
    case SAI_QUEUE_STAT_DROPPED_PACKETS: return 3;
    case SAI_QUEUE_STAT_DROPPED_BYTES: return 4;
    case SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES: return 5;
    case SAI_QUEUE_STAT_WATERMARK_BYTES: return 6;
    case SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS: return 7;
    case SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES: return 8;
    default: return 0;
    }
}

static int threshold_slot(sai_attr_id_t id) {
    switch (id) {
    case SAI_WRED_ATTR_GREEN_MIN_THRESHOLD: return 0;
    case SAI_WRED_ATTR_GREEN_MAX_THRESHOLD: return 1;
    case SAI_WRED_ATTR_YELLOW_MIN_THRESHOLD: return 2;
    case SAI_WRED_ATTR_YELLOW_MAX_THRESHOLD: return 3;
    case SAI_WRED_ATTR_RED_MIN_THRESHOLD: return 4;
    case SAI_WRED_ATTR_RED_MAX_THRESHOLD: return 5;
    default: return -1;
    }
}

static int wred_index(sai_object_id_t wred) {
    return (wred >= WRED_BASE && wred < WRED_BASE + WRED_OBJECTS) ? (int)(wred - WRED_BASE) : -1;
}

/* The status for attribute `i` of a call on `wred`, or SUCCESS with its slot in *slot. */
static sai_status_t threshold_of(sai_object_id_t wred, sai_attr_id_t id, uint32_t i, int *slot) {
    *slot = threshold_slot(id);
    if (wred_index(wred) < 0 || *slot < 0) {
        return SAI_STATUS_INVALID_PARAMETER;
    }
    if (wred == WRED_WITHOUT_RED && *slot >= 4) {
        return SAI_STATUS_ATTR_NOT_SUPPORTED_0 + (sai_status_t)i;
    }
    return SAI_STATUS_SUCCESS;
}

static sai_status_t create_switch(sai_object_id_t *id, uint32_t n, const sai_attribute_t *attrs) {
    if (n != 1 || attrs[0].id != SAI_SWITCH_ATTR_INIT_SWITCH || attrs[0].value.booldata) {
        return SAI_STATUS_INVALID_PARAMETER;
    }
    *id = SWITCH_OID;
    return SAI_STATUS_SUCCESS;
}

static sai_status_t get_queue_stats(
    sai_object_id_t queue, uint32_t n, const sai_stat_id_t *ids, uint64_t *out) {
    for (uint32_t i = 0; i < n; i++) {
        int rank = stat_rank(ids[i]);
        if (rank == 0 || (queue == 0x1504 && rank >= 7)) {
            return SAI_STATUS_NOT_SUPPORTED;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        out[i] = (queue & 0xff) * 1000 + (uint64_t)stat_rank(ids[i]);
    }
    return SAI_STATUS_SUCCESS;
}

static sai_status_t set_wred_attribute(sai_object_id_t wred, const sai_attribute_t *attr) {
    int slot;
    sai_status_t status = threshold_of(wred, attr->id, 0, &slot);
    if (status == SAI_STATUS_SUCCESS) {
        thresholds[wred_index(wred)][slot] = attr->value.u32;
    }
    return status;
}

static sai_status_t get_wred_attribute(sai_object_id_t wred, uint32_t n, sai_attribute_t *attrs) {
    for (uint32_t i = 0; i < n; i++) {
        int slot;
        sai_status_t status = threshold_of(wred, attrs[i].id, i, &slot);
        if (status != SAI_STATUS_SUCCESS) {
            return status;
        }
        attrs[i].value.u32 = thresholds[wred_index(wred)][slot];
    }
    return SAI_STATUS_SUCCESS;
}

static sai_switch_api_t switch_api = {.create_switch = create_switch};
static sai_queue_api_t queue_api = {.get_queue_stats = get_queue_stats};
static sai_wred_api_t wred_api = {
    .set_wred_attribute = set_wred_attribute,
    .get_wred_attribute = get_wred_attribute,
};

sai_status_t sai_api_initialize(uint64_t flags, const sai_service_method_table_t *services) {
    if (flags != 0 || services == NULL || services->profile_get_value == NULL) {
        return SAI_STATUS_INVALID_PARAMETER;
    }
    initialized = 1;
    return SAI_STATUS_SUCCESS;
}

sai_status_t sai_api_query(sai_api_t api, void **table) {
    if (!initialized) {
        return SAI_STATUS_UNINITIALIZED;
    }
    switch (api) {
    case SAI_API_SWITCH: *table = &switch_api; return SAI_STATUS_SUCCESS;
    case SAI_API_WRED: *table = &wred_api; return SAI_STATUS_SUCCESS;
    case SAI_API_QUEUE: *table = &queue_api; return SAI_STATUS_SUCCESS;
    default: return SAI_STATUS_NOT_SUPPORTED;
    }
}

sai_object_type_t sai_object_type_query(sai_object_id_t id) {
    if (id == SWITCH_OID) {
        return SAI_OBJECT_TYPE_SWITCH;
    }
    switch (id >> 8) {
    case 0x15: return SAI_OBJECT_TYPE_QUEUE;
    case 0x13: return SAI_OBJECT_TYPE_WRED;
    default: return SAI_OBJECT_TYPE_NULL;
    }
}

/*
 * FakeSai: a stand-in for a vendor SAI library, for the qos-agent `sai` feature tests only.
 * No ASIC can run here. It is compiled against the same SAI headers the agent's bindings are
 * generated from (SAI_INCLUDE_DIR), so every type and method table is the headers' own, and
 * it answers the calls the agent makes, with values a test can work out by hand:
 *  - get_queue_stats: queue object q, stat s: (q & 0xff) * 1000 + the stat's rank below
 *    (PACKETS 1, BYTES 2, DROPPED_PACKETS 3, DROPPED_BYTES 4, CURR_OCCUPANCY_BYTES 5,
 *    WATERMARK_BYTES 6, WRED_ECN_MARKED_PACKETS 7, WRED_ECN_MARKED_BYTES 8); any other stat,
 *    and on queue 0x1504 the two WRED_ECN ones, is SAI_STATUS_NOT_SUPPORTED for the whole call,
 *    as a platform without them answers;
 *  - set/get_wred_attribute: the six green/yellow/red min/max threshold attributes of WRED
 *    objects 0x1301..0x1304, starting at 0 (the SAI default); anything else is refused.
 */
#include <stddef.h>

#include <sai.h>

#define WRED_OBJECTS 4
#define WRED_BASE 0x1301

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
    int w = wred_index(wred);
    int slot = threshold_slot(attr->id);
    if (w < 0 || slot < 0) {
        return SAI_STATUS_INVALID_PARAMETER;
    }
    thresholds[w][slot] = attr->value.u32;
    return SAI_STATUS_SUCCESS;
}

static sai_status_t get_wred_attribute(sai_object_id_t wred, uint32_t n, sai_attribute_t *attrs) {
    int w = wred_index(wred);
    if (w < 0) {
        return SAI_STATUS_INVALID_PARAMETER;
    }
    for (uint32_t i = 0; i < n; i++) {
        int slot = threshold_slot(attrs[i].id);
        if (slot < 0) {
            return SAI_STATUS_INVALID_ATTRIBUTE_0 + (sai_status_t)i;
        }
        attrs[i].value.u32 = thresholds[w][slot];
    }
    return SAI_STATUS_SUCCESS;
}

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
    case SAI_API_WRED: *table = &wred_api; return SAI_STATUS_SUCCESS;
    case SAI_API_QUEUE: *table = &queue_api; return SAI_STATUS_SUCCESS;
    default: return SAI_STATUS_NOT_SUPPORTED;
    }
}

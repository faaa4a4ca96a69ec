/*
 * FakeSai: a stand-in for a vendor SAI library, for the qos-agent `sai` feature tests only.
 * No ASIC can run here, so this fake answers the four calls the agent makes, with the SAI
 * header layouts (sai.h, saiqueue.h, saiwred.h), and nothing else:
 *  - get_queue_stats: counter = (queue id & 0xff) * 1000 + stat id, so a test can work every
 *    value out by hand; queue 0x1504 refuses the WRED/ECN stats as a platform without them
 *    would (SAI_STATUS_NOT_SUPPORTED);
 *  - set/get_wred_attribute: the six threshold attributes of WRED objects 0x1301..0x1304,
 *    starting at 0 (the SAI default); any other attribute is refused.
 */
#include <stdint.h>
#include <stddef.h>

typedef int32_t sai_status_t;
typedef uint64_t sai_object_id_t;
typedef uint32_t sai_stat_id_t;

#define SAI_STATUS_SUCCESS 0
#define SAI_STATUS_NOT_SUPPORTED (-0x00000002)
#define SAI_STATUS_INVALID_PARAMETER (-0x00000005)

typedef struct {
    uint32_t id;
    union {
        uint32_t u32;
        uint64_t u64;
        void *ptr;
    } value;
} sai_attribute_t;

typedef sai_status_t (*any_fn)(void);

typedef struct {
    any_fn create_queue, remove_queue, set_queue_attribute, get_queue_attribute;
    sai_status_t (*get_queue_stats)(sai_object_id_t, uint32_t, const sai_stat_id_t *, uint64_t *);
    any_fn get_queue_stats_ext, clear_queue_stats;
} sai_queue_api_t;

typedef struct {
    any_fn create_wred, remove_wred;
    sai_status_t (*set_wred_attribute)(sai_object_id_t, const sai_attribute_t *);
    sai_status_t (*get_wred_attribute)(sai_object_id_t, uint32_t, sai_attribute_t *);
} sai_wred_api_t;

static uint32_t thresholds[4][11]; /* per WRED object, indexed by attribute id 0x01..0x0a */
static int initialized;

static int threshold_attr(uint32_t id) {
    return id == 0x01 || id == 0x02 || id == 0x05 || id == 0x06 || id == 0x09 || id == 0x0a;
}

static int wred_index(sai_object_id_t wred) {
    return (wred >= 0x1301 && wred <= 0x1304) ? (int)(wred - 0x1301) : -1;
}

static sai_status_t get_queue_stats(sai_object_id_t queue, uint32_t n, const sai_stat_id_t *ids, uint64_t *out) {
    for (uint32_t i = 0; i < n; i++) {
        if (queue == 0x1504 && ids[i] >= 0x22) {
            return SAI_STATUS_NOT_SUPPORTED;
        }
    }
    for (uint32_t i = 0; i < n; i++) {
        out[i] = (queue & 0xff) * 1000 + ids[i];
    }
    return SAI_STATUS_SUCCESS;
}

static sai_status_t set_wred_attribute(sai_object_id_t wred, const sai_attribute_t *attr) {
    int w = wred_index(wred);
    if (w < 0 || !threshold_attr(attr->id)) {
        return SAI_STATUS_INVALID_PARAMETER;
    }
    thresholds[w][attr->id] = attr->value.u32;
    return SAI_STATUS_SUCCESS;
}

static sai_status_t get_wred_attribute(sai_object_id_t wred, uint32_t n, sai_attribute_t *attrs) {
    int w = wred_index(wred);
    if (w < 0) {
        return SAI_STATUS_INVALID_PARAMETER;
    }
    for (uint32_t i = 0; i < n; i++) {
        if (!threshold_attr(attrs[i].id)) {
            return SAI_STATUS_INVALID_PARAMETER;
        }
        attrs[i].value.u32 = thresholds[w][attrs[i].id];
    }
    return SAI_STATUS_SUCCESS;
}

static sai_queue_api_t queue_api = {.get_queue_stats = get_queue_stats};
static sai_wred_api_t wred_api = {.set_wred_attribute = set_wred_attribute, .get_wred_attribute = get_wred_attribute};

sai_status_t sai_api_initialize(uint64_t flags, const void *services) {
    if (flags != 0 || services == NULL) {
        return SAI_STATUS_INVALID_PARAMETER;
    }
    initialized = 1;
    return SAI_STATUS_SUCCESS;
}

sai_status_t sai_api_query(int api, void **table) {
    if (!initialized) {
        return SAI_STATUS_INVALID_PARAMETER;
    }
    if (api == 18) {
        *table = &wred_api;
    } else if (api == 20) {
        *table = &queue_api;
    } else {
        return SAI_STATUS_NOT_SUPPORTED;
    }
    return SAI_STATUS_SUCCESS;
}

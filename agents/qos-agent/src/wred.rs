//! The WRED_PROFILE threshold fields the agent owns, and the order to write them in.
//!
//! The controller writes every colour with `min = max = K` (step marking, DCTCP style; see
//! `controller/sonic/tables/wred_profile.py`), and marks all six threshold fields as the
//! agent's. The agent keeps that shape: a new threshold sets all six to the same value, so
//! the colours never drift apart (under `ecn_all` a colour left behind would mark at a
//! different depth).
//!
//! Order matters because whoever applies the profile may apply one field at a time (qosorch
//! makes one SAI set call per attribute, sonic-swss orchagent/qosorch.cpp `WredMapHandler`;
//! the SAI backend does the same) and the YANG model requires `max >= min`
//! (sonic-wred-profile.yang). Per colour: when raising past the current max, write max first;
//! otherwise write min first. Every intermediate state then has `max >= min`:
//! - raise (`new > max`): `(min, new)` then `(new, new)`, and `new > max >= min`;
//! - lower or in between (`new <= max`): `(new, max)` then `(new, new)`.

/// The colours, in the order their fields are written.
pub const COLOURS: [&str; 3] = ["green", "yellow", "red"];

/// `<colour>_min_threshold` for each colour, as in [`COLOURS`].
pub const MIN_FIELDS: [&str; 3] = ["green_min_threshold", "yellow_min_threshold", "red_min_threshold"];
/// `<colour>_max_threshold` for each colour, as in [`COLOURS`].
pub const MAX_FIELDS: [&str; 3] = ["green_max_threshold", "yellow_max_threshold", "red_max_threshold"];

/// One colour's thresholds, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MinMax {
    /// `<colour>_min_threshold`
    pub min: u64,
    /// `<colour>_max_threshold`
    pub max: u64,
}

/// A profile's threshold fields, one [`MinMax`] per colour in [`COLOURS`] order. A field the
/// profile does not hold reads as 0, SAI's default for these attributes (saiwred.h).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WredThresholds {
    /// green, yellow, red.
    pub colours: [MinMax; 3],
}

impl WredThresholds {
    /// Reads the threshold fields from a profile hash. A value that is not a whole number
    /// counts as 0 (the write plan then rewrites it) rather than failing the iteration.
    pub fn from_lookup<'a>(get: impl Fn(&str) -> Option<&'a str>) -> Self {
        let read = |field: &str| get(field).and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(0);
        let mut colours = [MinMax::default(); 3];
        for (i, c) in colours.iter_mut().enumerate() {
            *c = MinMax { min: read(MIN_FIELDS[i]), max: read(MAX_FIELDS[i]) };
        }
        Self { colours }
    }

    /// Every colour at `min = max = bytes`.
    pub fn uniform(bytes: u64) -> Self {
        Self { colours: [MinMax { min: bytes, max: bytes }; 3] }
    }

    /// The profile after `steps` are applied.
    pub fn after(mut self, steps: &[FieldSet]) -> Self {
        for step in steps {
            self.set(step);
        }
        self
    }

    /// Applies one field set.
    pub fn set(&mut self, step: &FieldSet) {
        for i in 0..COLOURS.len() {
            if step.field == MIN_FIELDS[i] {
                self.colours[i].min = step.value;
            } else if step.field == MAX_FIELDS[i] {
                self.colours[i].max = step.value;
            }
        }
    }

    /// `max >= min` for every colour.
    pub fn is_ordered(&self) -> bool {
        self.colours.iter().all(|c| c.max >= c.min)
    }
}

/// One field write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldSet {
    /// A name from [`MIN_FIELDS`] or [`MAX_FIELDS`].
    pub field: &'static str,
    /// Bytes.
    pub value: u64,
}

/// The field writes that take `current` to `min = max = new` on every colour, in an order
/// that keeps `max >= min` after each one (module doc). Fields already at `new` are skipped,
/// so an unchanged profile needs no write at all.
pub fn plan_writes(current: &WredThresholds, new: u64) -> Vec<FieldSet> {
    let mut steps = Vec::with_capacity(6);
    for (i, c) in current.colours.iter().enumerate() {
        let min = FieldSet { field: MIN_FIELDS[i], value: new };
        let max = FieldSet { field: MAX_FIELDS[i], value: new };
        let pair = if new > c.max { [(max, c.max), (min, c.min)] } else { [(min, c.min), (max, c.max)] };
        steps.extend(pair.into_iter().filter(|(_, old)| *old != new).map(|(step, _)| step));
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_prefix_ordered(start: WredThresholds, steps: &[FieldSet]) -> bool {
        let mut state = start;
        steps.iter().all(|s| {
            state.set(s);
            state.is_ordered()
        })
    }

    #[test]
    fn raising_writes_max_before_min() {
        let steps = plan_writes(&WredThresholds::uniform(30_000), 90_000);
        let green: Vec<&str> =
            steps.iter().filter(|s| s.field.starts_with("green")).map(|s| s.field).collect();
        assert_eq!(green, ["green_max_threshold", "green_min_threshold"]);
        assert_eq!(steps.len(), 6);
        assert_eq!(WredThresholds::uniform(30_000).after(&steps), WredThresholds::uniform(90_000));
    }

    #[test]
    fn lowering_writes_min_before_max() {
        let steps = plan_writes(&WredThresholds::uniform(90_000), 30_000);
        let red: Vec<&str> = steps.iter().filter(|s| s.field.starts_with("red")).map(|s| s.field).collect();
        assert_eq!(red, ["red_min_threshold", "red_max_threshold"]);
        assert!(every_prefix_ordered(WredThresholds::uniform(90_000), &steps));
    }

    #[test]
    fn unchanged_profile_needs_no_write() {
        assert!(plan_writes(&WredThresholds::uniform(42_000), 42_000).is_empty());
    }

    #[test]
    fn every_intermediate_state_keeps_max_at_or_above_min() {
        // Ramped (min < max) starting points, including a target between min and max and one
        // equal to an existing field, so every branch of the rule is crossed.
        let starts = [(10_000, 50_000), (0, 0), (20_000, 20_000), (5_000, 90_000)];
        for (min, max) in starts {
            let start = WredThresholds { colours: [MinMax { min, max }; 3] };
            for new in [0, 5_000, 10_000, 30_000, 50_000, 120_000] {
                let steps = plan_writes(&start, new);
                assert!(every_prefix_ordered(start, &steps), "{min}/{max} -> {new}: {steps:?}");
                assert_eq!(start.after(&steps), WredThresholds::uniform(new));
            }
        }
    }

    #[test]
    fn unparsable_fields_read_as_zero() {
        let t = WredThresholds::from_lookup(|f| match f {
            "green_min_threshold" => Some("1000"),
            "green_max_threshold" => Some("lots"),
            _ => None,
        });
        assert_eq!(t.colours[0], MinMax { min: 1_000, max: 0 });
        assert_eq!(t.colours[1], MinMax::default());
    }
}

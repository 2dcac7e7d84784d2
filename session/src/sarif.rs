//! `run --sarif OUT`: a run's reports as a SARIF 2.1.0 log, so CI systems
//! and code-scanning UIs show them at their IR locations.
//!
//! The input is the reports' JSON objects of spec §8 (guard reports,
//! `host_fault` / `stack_overflow`, target reports alike), so every engine
//! and target goes through one conversion: `kind` is the `ruleId` (the
//! run's rules describe every kind), `function` the logical location,
//! `line`/`col` the region in the IR file, and every other field
//! (`count`, `site`, `op`, the per-kind values, `backtrace`) a property.

use serde_json::{json, Map, Value as Json};

/// The SARIF version and schema written in every log.
const SARIF_VERSION: &str = "2.1.0";
const SARIF_SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// Descriptions of the report kinds known when this was written. The rules
/// themselves come from the one list of kinds
/// ([`guardlift_runtime::report::kind_names`]): a kind added there gets a
/// rule (with a description made from its name) without an edit here.
const DESCRIPTIONS: &[(&str, &str)] = &[
    (
        "dict_slot_tag",
        "A managed-dict word with invalid low tag bits was read or stored.",
    ),
    ("adstack_overflow", "A push into a full adstack."),
    ("adstack_underflow", "A pop or peek of an empty adstack."),
    (
        "slot_clobber",
        "A raw store overlapping a watched managed-dict slot.",
    ),
    (
        "use_after_free",
        "An access to a freed object or its memory.",
    ),
    ("double_free", "A free of an object already freed."),
    (
        "invalid_free",
        "A free of something that is not an object the runtime allocated.",
    ),
    (
        "attr_out_of_bounds",
        "An attribute index at or past the values array's recorded capacity.",
    ),
    (
        "foreign_write",
        "A watched managed-dict word written by foreign code or left malformed.",
    ),
    (
        "host_fault",
        "A fatal signal or wild access in generated code or a host function it called.",
    ),
    (
        "stack_overflow",
        "Recursion deeper than the stack (or the interpreter's depth limit) allows.",
    ),
];

/// Every report kind guardlift emits, in rule order: `(ruleId, short description)`.
fn rules() -> Vec<(&'static str, String)> {
    guardlift_runtime::report::kind_names()
        .map(|id| {
            let text = DESCRIPTIONS.iter().find(|(k, _)| *k == id).map_or_else(
                || format!("guardlift report `{id}`."),
                |(_, t)| t.to_string(),
            );
            (id, text)
        })
        .collect()
}

/// Fields that become the result's location, not its properties.
const LOCATION_FIELDS: &[&str] = &["kind", "function", "line", "col"];

/// The SARIF log of `reports` (spec §8 JSON objects) found in `file`.
pub fn sarif_log(file: &str, reports: &[Json]) -> Json {
    let rules = rules();
    let results: Vec<Json> = reports.iter().map(|r| result(file, r, &rules)).collect();
    let rules: Vec<Json> = rules
        .iter()
        .map(|(id, text)| json!({"id": id, "shortDescription": {"text": text}}))
        .collect();
    json!({
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [{
            "tool": {"driver": {
                "name": "guardlift",
                "version": env!("CARGO_PKG_VERSION"),
                "informationUri": "https://github.com/guardlift/guardlift",
                "rules": rules,
            }},
            "results": results,
        }],
    })
}

/// Writes the SARIF log of `reports` to `out`.
pub fn write(out: &str, file: &str, reports: &[Json]) -> Result<(), String> {
    let text = sarif_log(file, reports).to_string();
    std::fs::write(out, text + "\n").map_err(|e| format!("{out}: error: cannot write SARIF: {e}"))
}

fn result(file: &str, r: &Json, rules: &[(&str, String)]) -> Json {
    let field = |k: &str| r.get(k).and_then(Json::as_str).unwrap_or("");
    let num = |k: &str| r.get(k).and_then(Json::as_u64).unwrap_or(0);
    let kind = field("kind");
    let function = field("function");
    let (line, col) = (num("line"), num("col"));
    let mut text = format!("{kind} at @{function} {line}:{col} ({})", field("op"));
    if let Some(m) = r.get("message").and_then(Json::as_str) {
        text = format!("{text}: {m}");
    }
    let mut physical = json!({"artifactLocation": {"uri": file_uri(file)}});
    if line > 0 {
        // SARIF regions are 1-based; an unknown position (0) has none.
        physical["region"] = json!({"startLine": line, "startColumn": col.max(1)});
    }
    let properties: Map<String, Json> = r
        .as_object()
        .map(|o| {
            o.iter()
                .filter(|(k, _)| !LOCATION_FIELDS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        })
        .unwrap_or_default();
    let mut res = json!({
        "ruleId": kind,
        "level": "error",
        "message": {"text": text},
        "locations": [{
            "physicalLocation": physical,
            "logicalLocations": [{
                "name": function,
                "fullyQualifiedName": format!("@{function}"),
                "kind": "function",
            }],
        }],
        "properties": properties,
    });
    if let Some(i) = rules.iter().position(|(id, _)| *id == kind) {
        res["ruleIndex"] = json!(i);
    }
    res
}

/// `file` as a URI reference: relative paths stay relative, absolute ones
/// become `file://` URIs; bytes outside RFC 3986's unreserved set and `/`
/// are percent-encoded.
fn file_uri(file: &str) -> String {
    let mut s = String::new();
    if file.starts_with('/') {
        s.push_str("file://");
    }
    for b in file.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_fields() {
        let r = json!({"kind": "adstack_overflow", "site": 1, "function": "main",
            "line": 5, "col": 7, "op": "adstack.push", "count": 3, "capacity": 1, "len": 1});
        let log = sarif_log("a b.glir", &[r]);
        let res = &log["runs"][0]["results"][0];
        assert_eq!(res["ruleId"], "adstack_overflow");
        assert_eq!(res["ruleIndex"], 1);
        let loc = &res["locations"][0];
        assert_eq!(
            loc["physicalLocation"]["artifactLocation"]["uri"],
            "a%20b.glir"
        );
        assert_eq!(loc["physicalLocation"]["region"]["startLine"], 5);
        assert_eq!(loc["physicalLocation"]["region"]["startColumn"], 7);
        assert_eq!(loc["logicalLocations"][0]["name"], "main");
        assert_eq!(res["properties"]["count"], 3);
        assert_eq!(res["properties"]["capacity"], 1);
        assert!(res["properties"].get("line").is_none());
    }

    #[test]
    fn every_kind_has_a_rule_and_every_result_a_rule_index() {
        let kinds: Vec<&str> = guardlift_runtime::report::kind_names().collect();
        for k in [
            "use_after_free",
            "attr_out_of_bounds",
            "foreign_write",
            "host_fault",
        ] {
            assert!(kinds.contains(&k), "{k} in {kinds:?}");
        }
        let reports: Vec<Json> = kinds
            .iter()
            .map(|k| json!({"kind": k, "function": "f", "line": 1, "col": 1, "op": "load"}))
            .collect();
        let log = sarif_log("x.glir", &reports);
        let rules = log["runs"][0]["tool"]["driver"]["rules"]
            .as_array()
            .unwrap();
        assert_eq!(rules.len(), kinds.len());
        for (i, (k, res)) in kinds
            .iter()
            .zip(log["runs"][0]["results"].as_array().unwrap())
            .enumerate()
        {
            assert_eq!(rules[i]["id"], *k);
            assert_eq!(res["ruleIndex"], i, "{k}");
            let text = rules[i]["shortDescription"]["text"].as_str().unwrap();
            assert!(!text.is_empty(), "{k}");
        }
    }

    #[test]
    fn absolute_paths_are_file_uris() {
        assert_eq!(file_uri("/tmp/x.glir"), "file:///tmp/x.glir");
    }
}
